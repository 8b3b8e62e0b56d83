#!/bin/bash
# tests/integration/limits.sh: the daemon at its limits.  Out of file
# descriptors it sheds connections instead of spinning on accept; over
# max-connections it refuses with a count and a log line; a package turned
# into a FIFO does not hang it.
. "$(dirname "$0")/lib.sh"

# hold.py PORT N MODE DIR: open N connections and hold them until DIR/stop
# appears (120 s at most).  MODE "partial" sends half a request head on
# each; "head" sends a whole HEAD request and reads its answer, leaving an
# idle kept-alive connection.  DIR/status says "answered=A closed=C" (the
# server closed C of them).
cat >"$T/hold.py" <<'EOF'
import os, select, socket, sys, time
port, n, mode, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
socks, got = [], {}
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    if mode == "partial":
        s.sendall(b"GET /metrics HTTP/1.1\r\n")
    else:
        s.sendall(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    s.setblocking(False)
    socks.append(s)
    got[s] = b""
answered, closed, live = set(), set(), list(socks)
def status():
    with open(d + "/status.tmp", "w") as f:
        f.write("answered=%d closed=%d\n" % (len(answered), len(closed)))
    os.rename(d + "/status.tmp", d + "/status")
status()
end = time.time() + 120
while time.time() < end and not os.path.exists(d + "/stop"):
    r, _, _ = select.select(live, [], [], 0.1) if live else ([], [], time.sleep(0.1))
    for s in r:
        try:
            b = s.recv(4096)
        except OSError:
            b = b""
        if b == b"":
            closed.add(s)
            live.remove(s)
        else:
            got[s] += b
            if b"\r\n\r\n" in got[s]:
                answered.add(s)
    status()
for s in socks:
    s.close()
EOF

# hold_start NAME PORT N MODE: hold.py in the background, its files in
# $T/NAME; hold_get NAME KEY: a number from its status; hold_stop NAME.
hold_start() {
	mkdir -p "$T/$1"
	python3 "$T/hold.py" "$2" "$3" "$4" "$T/$1" 2>"$T/$1/err" &
	eval "hold_$1=$!"
}
hold_get() {
	sed -n "s/.*$2=\([0-9]*\).*/\1/p" "$T/$1/status" 2>/dev/null
}
hold_at_least() {
	[ "$(hold_get "$1" "$2")" -ge "$3" ]
}
hold_stop() {
	local pid
	eval "pid=\$hold_$1"
	touch "$T/$1/stop"
	wait "$pid"
}
nofile_lines() {
	grep -c 'Too many open files' "$1"
}
# shed_or_flood NAME LOG MIN: NAME saw MIN connections closed, or LOG has
# more than 20 lines about descriptors (the flood this test is against).
shed_or_flood() {
	hold_at_least "$1" closed "$3" || [ "$(nofile_lines "$2")" -gt 20 ]
}

# --------------------------------------------- out of file descriptors

# 64 descriptors for the daemon, 150 clients, max-connections far above.
printf '#!/bin/sh\nexec prlimit --nofile=64:64 "%s" "$@"\n' "$DBGMIRRORD" \
    >"$T/limited"
chmod +x "$T/limited"
DBGMIRRORD=$T/limited start_daemon fd --scan-dir none --max-connections 1000 \
    --header-timeout 300
grep -q 'open files limit is 64, below' "$fd_LOG"
ok $? "start-up warns that 64 open files are below what the config needs"

t0=$SECONDS
hold_start flood "$fd_PORT" 150 partial
# The daemon cannot hold more than 64; the rest must be shed, not left
# waiting.
wait_until 60 shed_or_flood flood "$fd_LOG" $((150 - 64))
hold_at_least flood closed $((150 - 64))
ok $? "out of descriptors: at least 86 of 150 connections shed" ||
    diag "closed: $(hold_get flood closed)"
# One line per 10 s at most, whatever the load made the wait last.
n=$(nofile_lines "$fd_LOG") max=$((2 + (SECONDS - t0) / 10))
[ "$n" -ge 1 ] && [ "$n" -le "$max" ]
ok $? "... logged, at most $max lines ($n)"
shed=$(hold_get flood closed)
hold_stop flood
wait_until 30 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 '$fd_URL/metrics')\" = 200 ]"
ok $? "the clients gone, the daemon answers again"
emfile=$(metric 'dbgmirror_accept_errors_total{reason="emfile"}' "$fd_URL")
[ "${emfile:-0}" -ge 1 ]
ok $? "dbgmirror_accept_errors_total{reason=\"emfile\"} counts ($emfile)"
refused=$(metric 'dbgmirror_connections_refused_total{reason="descriptors"}' \
    "$fd_URL")
[ -n "$refused" ] && [ "$shed" -ge 1 ] && [ "$refused" -ge "$shed" ]
ok $? "dbgmirror_connections_refused_total{reason=\"descriptors\"} counts the $shed shed ($refused)"
stop_daemon fd
is "$STOP_RC" 0 "... and it stops cleanly"

# ------------------------------------------------------ max-connections

start_daemon cap --scan-dir none --max-connections 4
hold_start four "$cap_PORT" 4 head
wait_until 30 hold_at_least four answered 4
ok $? "4 idle kept-alive connections"
fifth=$(curl -s -o "$T/fifth" -w '%{http_code}' --max-time 10 "$cap_URL/metrics")
is "$fifth" 503 "a 5th connection gets 503"
hold_stop four
wait_until 30 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 '$cap_URL/metrics')\" = 200 ]"
ok $? "the 4 gone, a connection is served"
refused=$(metric 'dbgmirror_connections_refused_total{reason="max_connections"}' \
    "$cap_URL")
[ "${refused:-0}" -ge 1 ]
ok $? "dbgmirror_connections_refused_total{reason=\"max_connections\"} counts it ($refused)"
is "$(grep -c 'over max-connections 4' "$cap_LOG")" 1 "... and the log says so once"
stop_daemon cap

done_testing
