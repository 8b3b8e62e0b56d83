#!/bin/bash
# Signals: SIGUSR1 rescans; SIGTERM and SIGINT stop accepting, let responses
# in flight finish (bounded by shutdown-timeout) and exit 0.
. "$top_srcdir/tests/integration/lib.sh"

mkdir -p "$T/files"
ID=c1b2c3d4e5f60718293a4b5c6d7e8f9001122336
"$MKELF" --type rel --build-id "$ID" --debug .debug_info:24M "$T/files/mid.debug" ||
    bail "mkelf failed"

# The shutdown deadlines are on the test clock (daemon/clock.h), which
# moves only when the test says: a slow machine cuts no response.
touch -d @1700000000 "$T/clock"
export DBGMIRROR_TEST_CLOCK=$T/clock
start_daemon d --scan-dir "$T/files" --rescan-interval 0 --shutdown-timeout 10
kill -USR1 "$d_PID"
wait_scan d 2
grep -q 'SIGUSR1: rescanning' "$d_LOG"
ok $? "SIGUSR1 starts a rescan"

# A slow download in flight (8 MiB/s for 24 MiB: about 3 s), then SIGTERM.
curl -s --limit-rate 8M "$d_URL/buildid/$ID/debuginfo" -o "$T/got" &
cpid=$!
wait_until 5 test -s "$T/got"
t0=$SECONDS
kill -TERM "$d_PID"
wait_until 5 sh -c "! (exec 3<>/dev/tcp/127.0.0.1/$d_PORT) 2>/dev/null"
ok $? "after SIGTERM, new connections are refused"
wait "$cpid"
is "$?" 0 "the download in flight completes"
cmp -s "$T/got" "$T/files/mid.debug"
ok $? "with every byte"
stop_daemon d
is "$STOP_RC" 0 "exit status 0 after SIGTERM"
grep -q 'Terminated: stopping' "$d_LOG"
ok $? "the log says why it stopped"

# A second SIGTERM (and a third, and a SIGINT...) during the graceful
# shutdown is ignored, whenever it lands: keep sending until the exit.
start_daemon g --scan-dir "$T/files" --rescan-interval 0 --shutdown-timeout 10
curl -s --limit-rate 8M "$g_URL/buildid/$ID/debuginfo" -o "$T/got2" &
cpid=$!
wait_until 5 test -s "$T/got2"
kill -TERM "$g_PID"
# As fast as the shell can (builtin kill), so that one lands in each
# moment of the shutdown; bounded by count and by the daemon's exit.
for i in $(seq 1 200000); do
	kill -TERM "$g_PID" 2>/dev/null || break
	kill -INT "$g_PID" 2>/dev/null || break
done
wait "$g_PID"
is "$?" 0 "exit status 0 with more SIGTERMs and SIGINTs during the shutdown"
wait "$cpid"
cmp -s "$T/got2" "$T/files/mid.debug"
ok $? "... and the download in flight completed whole"

# The bound: a download too slow to finish (100 KB/s for 24 MiB) is cut
# at shutdown-timeout, once the test clock has passed it.
start_daemon e --scan-dir "$T/files" --shutdown-timeout 60
curl -s --limit-rate 100K "$e_URL/buildid/$ID/debuginfo" -o "$T/slow" &
cpid=$!
wait_until 5 test -s "$T/slow"
kill -TERM "$e_PID"
wait_until 5 sh -c "! (exec 3<>/dev/tcp/127.0.0.1/$e_PORT) 2>/dev/null"
kill -0 "$e_PID"
ok $? "stopping, it waits for the response in flight"
touch -d @1700000061 "$T/clock"
wait_until 10 sh -c "! kill -0 $e_PID"
ok $? "... until the clock passes shutdown-timeout"
kill -KILL "$e_PID" 2>/dev/null
wait "$e_PID"
is "$?" 0 "exit status 0 when the shutdown timeout cuts a response"
wait "$cpid"
[ "$(stat -c %s "$T/slow")" -lt "$(stat -c %s "$T/files/mid.debug")" ]
ok $? "the slow client got a cut response, not a complete-looking one"

# SIGINT, with an idle keep-alive connection open.
start_daemon f --scan-dir "$T/files"
exec 4<>"/dev/tcp/127.0.0.1/$f_PORT"
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' >&4
t0=$SECONDS
kill -INT "$f_PID"
wait "$f_PID"
is "$?" 0 "exit status 0 after SIGINT"
[ $((SECONDS - t0)) -le 3 ]
ok $? "an idle keep-alive connection does not hold up the exit"
exec 4>&-
done_testing
