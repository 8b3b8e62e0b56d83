#!/bin/bash
# Least privilege (issue 15).  Started as root, dbgmirrord refuses to stay
# root without a user to become; with one (nobody here) it runs as that
# user with no capability left, creates its cache files as that user, and
# fences in its worker threads: a parser that sends a request, writes a
# file outside the cache or runs a program (the DBGMIRROR_TEST_SANDBOX_PROBE
# hook) is refused and reported, and the daemon carries on.
. "$top_srcdir/tests/integration/lib.sh"

# The daemon, as nobody, must reach its cache and scan trees in $T.
as_nobody_or_skip

# ----------------------------------------------------- root refuses root

out=$(env -u DBGMIRROR_TEST_ALLOW_ROOT "$DBGMIRRORD" --no-config \
    --listen 127.0.0.1:0 --cache-dir "$T/refused" 2>&1)
is "$?" 1 "as root without a user: exit status 1"
like "$out" "refusing to run as root: set user = NAME" "... saying why"
ok "$([ ! -e "$T/refused" ] && echo 0 || echo 1)" "... before touching its cache"

out=$("$DBGMIRRORD" --no-config --listen 127.0.0.1:0 --cache-dir "$T/r2" \
    --user no-such-user-here 2>&1)
is "$?" 1 "an unknown user: exit status 1"
like "$out" "user no-such-user-here: no such user" "... saying so"

mkdir "$T/rootcache"
out=$("$DBGMIRRORD" --no-config --listen 127.0.0.1:0 --cache-dir "$T/rootcache" \
    --user nobody 2>&1)
is "$?" 1 "a cache directory root owns: exit status 1"
like "$out" "rootcache belongs to uid 0, not to user nobody: chown -R nobody" \
    "... saying what to do"

# ------------------------------------------------------------ as nobody

id_up=6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b
id_scan=7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c
bin_up=$(mkbin $id_up)
mkdir -p "$T/scan"
cp "$(mkbin $id_scan)" "$T/scan/prog"
chmod -R a+rX "$T/scan" "$T/bins"
start_fake up "$id_up=ok:$bin_up"

# startd NAME PROBE [ARGS...]: a daemon as nobody over $T/scan and upstream
# up, its first parse attempting PROBE (none when empty).
startd() {
	local name=$1 probe=$2
	shift 2
	DBGMIRROR_TEST_SANDBOX_PROBE=$probe start_daemon "$name" --user nobody \
	    --scan-dir "$T/scan" --upstream "$up_URL" "$@"
}

startd u "connect:$up_PORT"
pid=$u_PID
status=/proc/$pid/status
is "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "$status")" \
    "65534 65534 65534 65534" "real, effective, saved and fs uid: nobody"
is "$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "$status")" \
    "65534 65534 65534 65534" "... and every gid nogroup"
is "$(awk '/^Groups:/ { print $2 }' "$status")" 65534 "... no other group"
is "$(awk '/^CapPrm:/ { print $2 }' "$status")/$(awk '/^CapEff:/ { print $2 }' "$status")" \
    0000000000000000/0000000000000000 "no capability permitted or effective"
is "$(awk '/^NoNewPrivs:/ { print $2 }' "$status")" 1 "no new privileges"
caps=0
for t in /proc/"$pid"/task/*; do
	[ "$(awk '/^CapPrm:/ { print $2 }' "$t/status")" = 0000000000000000 ] ||
	    caps=$((caps + 1))
done
is "$caps" 0 "no thread kept a capability"
fenced=$(grep -l '^Seccomp:[[:space:]]*2' /proc/"$pid"/task/*/status | wc -l)
is "$fenced" 5 "the 4 worker threads and the background one run under a seccomp filter"

is "$(code "$u_URL/buildid/$id_up/executable")" 200 "a fill as nobody"
is "$(code "$u_URL/buildid/$id_scan/executable")" 200 "a scanned file as nobody"
# The answer's last byte goes out before the fill is published.
wait_until 30 sh -c "[ \$(find '$T/u-cache/blobs' -type f | wc -l) -ge 1 ]"
blob=$?
is "$(find "$T/u-cache" ! -user nobody | wc -l)" 0 \
    "every file of the cache belongs to nobody"
ok $blob "... the filled blob among them"

like "$(cat "$u_LOG")" "sandbox probe: connect:$up_PORT: Operation not permitted" \
    "a worker's connect is refused"
like "$(cat "$u_LOG")" "sandbox: refused system call [0-9]+ in a worker thread" \
    "... and reported"
is "$(requests_to up sandbox-probe)" 0 "... and nothing reached the listener"
is "$(metric dbgmirror_sandbox_refused_total "$u_URL")" 1 "... and counted"
stop_daemon u
is "$STOP_RC" 0 "it stops cleanly"

# A port below 1024, bound with the one capability kept for it.
low=$(python3 -c '
import socket
for port in range(700, 1000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break
')
startd l "" --listen "127.0.0.1:$low"
like "$(cat "$l_LOG")" "listening on 127.0.0.1:$low" "as nobody, it binds port $low"
# (Meaningless where anyone may bind it.)
[ "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)" -gt "$low" ] ||
    diag "ip_unprivileged_port_start lets anyone bind $low here"
is "$(code "http://127.0.0.1:$low/buildid/$id_scan/executable")" 200 \
    "... and serves there"
is "$(awk '/^CapEff:/ { print $2 }' "/proc/$l_PID/status")" 0000000000000000 \
    "... with the capability gone"
stop_daemon l

# A file outside the cache, where nobody may write otherwise.
mkdir -m 777 "$T/marks"
startd o "write:$T/marks/written"
like "$(cat "$o_LOG")" "sandbox probe: write:$T/marks/written: Permission denied" \
    "a worker's write outside the cache is refused"
ok "$([ ! -e "$T/marks/written" ] && echo 0 || echo 1)" "... no file was made"
is "$(code "$o_URL/buildid/$id_scan/executable")" 200 "... and it carries on"
stop_daemon o

# A program that would leave a mark where nobody may write.
printf '#!/bin/sh\ntouch %s/marks/pwned\n' "$T" >"$T/evil"
chmod 755 "$T/evil"
startd x "exec:$T/evil"
like "$(cat "$x_LOG")" "sandbox probe: exec:$T/evil: Operation not permitted" \
    "a worker's exec is refused"
ok "$([ ! -e "$T/marks/pwned" ] && echo 0 || echo 1)" "... the program never ran"
is "$(code "$x_URL/buildid/$id_scan/executable")" 200 "... and it carries on"
stop_daemon x

done_testing
