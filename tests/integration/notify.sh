#!/bin/bash
# systemd's Type=notify without systemd: a unix datagram socket stands for
# the service manager (NOTIFY_SOCKET), and the daemon must say READY=1
# once it listens, RELOADING=1 (with MONOTONIC_USEC) and READY=1 again on
# SIGHUP, STOPPING=1 on SIGTERM, STATUS= lines, and WATCHDOG=1 every half
# WATCHDOG_USEC.
. "$top_srcdir/tests/integration/lib.sh"

sock=$T/notify.sock
got=$T/notify.got
notify_listen "$sock" "$got"

# count REGEX: datagrams received matching REGEX.
count() {
	grep -Ec -- "$1" "$got"
}
# has REGEX [N]: N (1) datagrams matching REGEX have come (bounded wait).
at_least() {
	[ "$(count "$2")" -ge "$1" ]
}
has() {
	wait_until 20 at_least "${2:-1}" "$1"
}

NOTIFY_SOCKET=$sock WATCHDOG_USEC=200000 start_daemon n
has '^READY=1 \| STATUS=serving on 1 address'
ok $? "READY=1 with a status once it listens"
is "$(code "$n_URL/metrics")" 200 "... and it answers"
has '^STATUS=serving; last scan finished'
ok $? "a STATUS= line when the scan ends"
has '^WATCHDOG=1$' 3
ok $? "WATCHDOG=1 pings, again and again"
like "$(cat "$n_LOG")" "watchdog every 100 ms" "... every half WATCHDOG_USEC"

kill -HUP "$n_PID"
has '^RELOADING=1 \| MONOTONIC_USEC=[0-9]+ \| STATUS=reloading$'
ok $? "SIGHUP: RELOADING=1 with MONOTONIC_USEC"
has '^READY=1 \| STATUS=serving; reloaded'
ok $? "... then READY=1"
is "$(code "$n_URL/metrics")" 200 "... and it still answers"

stop_daemon n
is "$STOP_RC" 0 "SIGTERM: exit status 0"
has '^STOPPING=1'
ok $? "... after STOPPING=1"
like "$(grep -E 'READY=1|RELOADING=1|STOPPING=1' "$got" | tail -n 1)" \
    '^STOPPING=1' "... its last word on its state"

# Without NOTIFY_SOCKET nothing is sent, and nothing breaks.
lines=$(wc -l <"$got")
start_daemon quiet
is "$(code "$quiet_URL/metrics")" 200 "without NOTIFY_SOCKET it serves"
stop_daemon quiet
is "$(wc -l <"$got")" "$lines" "... and notifies nobody"

done_testing
