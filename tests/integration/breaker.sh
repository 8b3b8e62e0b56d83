#!/bin/bash
# A real elfutils debuginfod as the upstream goes away and comes back: the
# breaker opens and says why, probes within seconds, closes as soon as a
# probe gets an answer (saying so), and the mirror serves again at once.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
mkdir -p "$T/serve"
for id in "$ID_prog_a" "$ID_prog_b"; do
	cp "$FX/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug" "$T/serve/$id.debug"
done
start_debuginfod up -F "$T/serve"
wait_until 60 curl -sf -o /dev/null "$up_URL/buildid/$ID_prog_b/debuginfo"
ok $? "debuginfod serves the fixtures"

start_daemon m --scan-dir none --upstream "$up_URL" --error-ttl 0 \
    --breaker-failures 1 --breaker-backoff 1 --breaker-backoff-max 2
is "$(code "$m_URL/buildid/$ID_prog_a/debuginfo")" 200 "through the mirror: 200"

kill -TERM "$up_PID"
wait "$up_PID" 2>/dev/null
is "$(code "$m_URL/buildid/$ID_prog_b/debuginfo")" 502 "the upstream gone: 502"
wait_until 10 grep -q "upstream $up_URL: breaker open (1 failure in a row, the last could not connect)" "$m_LOG"
ok $? "the breaker opens, and the log says why"
wait_until 20 grep -q "upstream $up_URL: breaker probing" "$m_LOG"
ok $? "... probes again within seconds, and says so"
like "$(grep -o 'probed again in [0-9]*s' "$m_LOG" | sort -u | tr '\n' ' ')" \
    '^probed again in [12]s (probed again in 2s )?$' \
    "... waiting 1 s, then doubling up to breaker-backoff-max (2 s)"

DEBUGINFOD_PORT=$up_PORT start_debuginfod up2 -F "$T/serve"
wait_until 60 curl -sf -o /dev/null "$up2_URL/buildid/$ID_prog_b/debuginfo"
ok $? "debuginfod is back on the same port"
wait_until 30 grep -q "upstream $up_URL: breaker closed (the probe got HTTP 200)" "$m_LOG"
ok $? "a probe's answer closes the breaker, and the log says so"
is "$(code "$m_URL/buildid/$ID_prog_b/debuginfo")" 200 "the mirror serves again"
stop_daemon m
done_testing
