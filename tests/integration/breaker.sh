#!/bin/bash
# A real elfutils debuginfod as the upstream goes away and comes back: the
# breaker opens and says why, probes once its backoff is over, closes as
# soon as a probe gets an answer (saying so), and the mirror serves again
# at once.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
mkdir -p "$T/serve"
for id in "$ID_prog_a" "$ID_prog_b"; do
	cp "$FX/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" "$T/serve/$id.debug"
done
start_debuginfod up -F "$T/serve"
wait_until 60 curl -sf -o /dev/null "$up_URL/buildid/$ID_prog_b/debuginfo"
ok $? "debuginfod serves the fixtures"

# The test clock (daemon/clock.h) decides when a backoff is over: an
# hour, then two, which no real time reaches while the test runs.  An
# open breaker looks at the clock every second.
touch -d @1700000000 "$T/clock"
DBGMIRROR_TEST_CLOCK=$T/clock start_daemon m --scan-dir none \
    --upstream "$up_URL" --error-ttl 0 \
    --breaker-failures 1 --breaker-backoff 3600 --breaker-backoff-max 7200
is "$(code "$m_URL/buildid/$ID_prog_a/debuginfo")" 200 "through the mirror: 200"

kill -TERM "$up_PID"
wait "$up_PID" 2>/dev/null
is "$(code "$m_URL/buildid/$ID_prog_b/debuginfo")" 502 "the upstream gone: 502"
wait_until 10 grep -q "upstream $up_URL: breaker open (1 failure in a row, the last could not connect)" "$m_LOG"
ok $? "the breaker opens, and the log says why"
touch -d @1700003600 "$T/clock"
wait_until 20 grep -q "upstream $up_URL: breaker probing" "$m_LOG"
ok $? "... probes again once its backoff is over, and says so"
wait_until 20 grep -q 'probed again in 7200s' "$m_LOG"
touch -d @1700010800 "$T/clock"
wait_until 20 sh -c "[ \$(grep -c 'probed again in 7200s' '$m_LOG') -ge 2 ]"
like "$(grep -o 'probed again in [0-9]*s' "$m_LOG" | sort -u | tr '\n' ' ')" \
    '^probed again in 3600s probed again in 7200s $' \
    "... waiting 1 h, then doubling up to breaker-backoff-max (2 h)"

DEBUGINFOD_PORT=$up_PORT start_debuginfod up2 -F "$T/serve"
wait_until 60 curl -sf -o /dev/null "$up2_URL/buildid/$ID_prog_b/debuginfo"
ok $? "debuginfod is back on the same port"
touch -d @1700018000 "$T/clock"
wait_until 30 grep -q "upstream $up_URL: breaker closed (the probe got HTTP 200)" "$m_LOG"
ok $? "a probe's answer closes the breaker, and the log says so"
is "$(code "$m_URL/buildid/$ID_prog_b/debuginfo")" 200 "the mirror serves again"
stop_daemon m
done_testing
