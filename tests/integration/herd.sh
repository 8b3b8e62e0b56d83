#!/bin/bash
# One fill per key: 200 clients at once for an id nobody has cached cost the
# upstream one request, and every client gets the same correct bytes; 200
# for a missing id cost one request, then negative hits cost none until the
# negative TTL has passed.
. "$top_srcdir/tests/integration/lib.sh"

id=1234567812345678123456781234567812345678
missing=8765432187654321876543218765432187654321
bin=$(mkbin $id 400000)
# Each answer waits 1 s, so all 200 requests arrive during the fill.
start_fake up --delay 1000 "$id=ok:$bin"
# The test clock (daemon/clock.h): the negative TTL runs out when the test
# says so, however long the herds take on a loaded machine.
touch -d @1700000000 "$T/clock"
DBGMIRROR_TEST_CLOCK=$T/clock start_daemon d --scan-dir none \
    --upstream "$up_URL" --negative-ttl 3

herd "$d_URL/buildid/$id/debuginfo" 200
is "$(requests_to up "$id")" 1 "200 clients for one uncached id: 1 upstream request"
is "$(sort "$T/herd/codes" | uniq -c | awk '{ print $1 " " $2 }')" "200 200" \
    "... 200 answers of 200"
same=0
for f in "$T"/herd/*.body; do
	cmp -s "$f" "$bin" && same=$((same + 1))
done
is "$same" 200 "... 200 identical, correct bodies"
# Those that came after the fill ended found the file cached.
joined=$(metric 'dbgmirror_requests_total{endpoint="debuginfo",result="joined"}' "$d_URL")
hits=$(metric 'dbgmirror_requests_total{endpoint="debuginfo",result="hit"}' "$d_URL")
misses=$(metric 'dbgmirror_requests_total{endpoint="debuginfo",result="miss"}' "$d_URL")
is "$misses $((joined + hits + misses))" "1 200" \
    "... 1 miss, the rest joined ($joined) or hit (metrics)"
[ "$joined" -gt 0 ]
ok $? "... at least one joined the fill"

herd "$d_URL/buildid/$missing/debuginfo" 200
is "$(requests_to up "$missing")" 1 "200 clients for a missing id: 1 upstream request"
is "$(sort -u "$T/herd/codes")" 404 "... 404 for all"
herd "$d_URL/buildid/$missing/debuginfo" 50
is "$(requests_to up "$missing")" 1 "50 more: negative hits, no upstream request"
like "$(metric 'dbgmirror_requests_total{endpoint="debuginfo",result="negative"}' "$d_URL")" \
    '^[1-9][0-9]+$' "... counted as negative hits"
like "$(metric dbgmirror_negative_entries "$d_URL")" '^[1-9]' \
    "... one negative entry"
touch -d @1700000004 "$T/clock"
is "$(code "$d_URL/buildid/$missing/debuginfo")" 404 "after the negative TTL ..."
is "$(requests_to up "$missing")" 2 "... the upstream is asked again"

stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit 0"
done_testing
