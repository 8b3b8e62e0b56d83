#!/bin/bash
# X-DEBUGINFOD-MAXSIZE through the mirror: the limit of the client that
# starts a fill goes upstream; an upstream's 406 reaches that client and
# leaves nothing behind (no negative or error entry, no breaker count);
# a fill whose size is known answers a smaller limit 406 at once while it
# goes on for the others; and a client without a limit that joined a fill
# refused for another's limit still gets the file.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
mkdir -p "$T/serve"
dbg=$FX/usr/lib/debug/.build-id/${ID_prog_a:0:2}/${ID_prog_a:2}.debug
cp "$dbg" "$T/serve/$ID_prog_a.debug"
size=$(stat -L -c %s "$dbg")

# --- a real debuginfod upstream -------------------------------------------
start_debuginfod up -F "$T/serve"
wait_until 60 curl -sf -o /dev/null "$up_URL/buildid/$ID_prog_a/debuginfo"
ok $? "debuginfod serves the fixture"
is "$(code "$up_URL/buildid/$ID_prog_a/debuginfo" -H "X-DEBUGINFOD-MAXSIZE: $((size - 1))")" \
    406 "debuginfod itself answers 406 under its size"

# Long TTLs and a breaker that opens at the first failure: anything
# remembered of the 406 would show in the next answer.
start_daemon m --scan-dir none --upstream "$up_URL" --negative-ttl 3600 \
    --error-ttl 3600 --breaker-failures 1
u=$m_URL/buildid/$ID_prog_a/debuginfo
up406() {
	grep -c "GET /buildid/$ID_prog_a/debuginfo 406 " "$up_LOG"
}
before=$(up406)
is "$(code "$u" -H "X-DEBUGINFOD-MAXSIZE: $((size - 1))")" 406 \
    "a limit under the size: 406 through the mirror"
up406_is() {
	[ "$(up406)" = "$1" ]
}
wait_until 10 up406_is $((before + 1))
ok $? "... which the upstream answered, so the limit went upstream"
is "$(metric dbgmirror_negative_entries "$m_URL")" 0 "... no negative or error entry"
is "$(curl -s "$m_URL/metrics" | grep "^dbgmirror_upstream_errors_total{upstream=\"$up_URL\"" | grep -vc ' 0$')" \
    0 "... no upstream error counted"
curl -s -D "$T/h1" -o "$T/got1" --max-time 20 "$u"
is "$(header X-Cache "$T/h1")" MISS "without a limit: fetched from upstream now (a miss, not a hit)"
cmp -s "$T/got1" "$dbg"
ok $? "... byte-identical"
is "$(code "$u" -H "X-DEBUGINFOD-MAXSIZE: $((size - 1))")" 406 \
    "cached now: a limit under the size is still 406"
is "$(code "$u" -H "X-DEBUGINFOD-MAXSIZE: $size")" 200 "... a limit of the size is 200"
dfind_max() {
	DEBUGINFOD_MAXSIZE=$1 dfind m debuginfo "$ID_prog_a"
}
client_env
dfind_max $((size - 1))
ok "$([ $? -ne 0 ] && [ -z "$FOUND" ]; echo $?)" "debuginfod-find with DEBUGINFOD_MAXSIZE under the size gets nothing"
dfind_max "$size"
ok $? "... and the file with DEBUGINFOD_MAXSIZE of the size"
stop_daemon m

# metric_is NAME URL VALUE: the sample is VALUE now (for wait_until).
metric_is() {
	[ "$(metric "$1" "$2")" = "$3" ]
}
# requests_are NAME REGEX N: fake NAME logged N requests matching REGEX.
requests_are() {
	[ "$(requests_to "$1" "$2")" = "$3" ]
}

# --- a known size, an upstream that ignores the limit ------------------------
# trickle at 20 bytes/s: the head (Content-Length) and the first bytes
# (in 3 s), then a fill that stays in flight for as long as the test
# needs, whose build-id note (some 700 bytes in) does not come for half a
# minute, so that readers are not let in before it: only the announced
# size can answer a smaller limit before then.
big=$(mkbin 1111111111111111111111111111111111111111 300000)
bsize=$(stat -c %s "$big")
start_fake stall --rate 20 1111111111111111111111111111111111111111=trickle:"$big"
start_daemon s --scan-dir none --upstream "$stall_URL" \
    --upstream-min-rate 1 --upstream-timeout 600
su=$s_URL/buildid/1111111111111111111111111111111111111111/executable
curl -s -o /dev/null --max-time 120 "$su" &
wait_until 30 metric_is dbgmirror_fill_waiters "$s_URL" 1
ok $? "a client without a limit waits on a fill that trickles"
is "$(code "$su" --max-time 25 -H "X-DEBUGINFOD-MAXSIZE: $((bsize - 1))")" 406 \
    "a joining client with a smaller limit: 406 at once"
is "$(metric dbgmirror_fills_in_flight "$s_URL")" 1 "... while the fill goes on"
is "$(metric dbgmirror_fill_waiters "$s_URL")" 1 "... for the client still waiting"
stop_daemon s

start_fake plain 1111111111111111111111111111111111111111=ok:"$big"
start_daemon p --scan-dir none --upstream "$plain_URL"
pu=$p_URL/buildid/1111111111111111111111111111111111111111/executable
is "$(code "$pu" -H "X-DEBUGINFOD-MAXSIZE: $((bsize - 1))")" 406 \
    "the client that starts a fill, with a smaller limit: 406"
like "$(cat "$plain_LOG")" "maxsize=\"$((bsize - 1))\"" "... its limit was sent upstream"
wait_until 30 sh -c "curl -sI '$pu' | tr -d '\r' | grep -q '^X-Cache: HIT'"
ok $? "the fill went on: the file is cached"
is "$(requests_to plain "GET /buildid/")" 1 "... from that one upstream request"
stop_daemon p

# --- a joiner without a limit, the starter's fill refused upstream -----------
start_fake gated --maxsize --gate "$T/open" \
    1111111111111111111111111111111111111111=ok:"$big"
start_daemon g --scan-dir none --upstream "$gated_URL" \
    --upstream-first-byte-timeout 60 --upstream-timeout 120
gu=$g_URL/buildid/1111111111111111111111111111111111111111/executable
curl -s -o /dev/null -w '%{http_code}\n' --max-time 120 \
    -H "X-DEBUGINFOD-MAXSIZE: $((bsize - 1))" "$gu" >"$T/limited.code" &
wait_until 30 requests_are gated "GET /buildid/" 1
ok $? "the limited client's fill is upstream"
curl -s -D "$T/hj" -o "$T/gotj" --max-time 120 "$gu" &
jpid=$!
wait_until 30 metric_is dbgmirror_fill_waiters "$g_URL" 2
ok $? "a client without a limit joins it"
touch "$T/open"
wait "$jpid"
wait_until 30 test -s "$T/limited.code"
is "$(cat "$T/limited.code")" 406 "the upstream's 406 reaches the limited client"
cmp -s "$T/gotj" "$big"
ok $? "the client without a limit gets the whole file"
like "$(tr '\n' ' ' <"$gated_LOG")" "maxsize=\"$((bsize - 1))\".*GET /buildid/.*maxsize=\"-\"" \
    "... from a second fill that sent no limit"
is "$(metric dbgmirror_negative_entries "$g_URL")" 0 "... and nothing remembered of the 406"
stop_daemon g
done_testing
