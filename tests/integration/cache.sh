#!/bin/bash
# The cache around the fills: negative and error TTLs, purge (CLI and admin
# endpoint, and during a fill), the circuit breaker opening and closing,
# request loops between two mirrors, eviction under a small cap, fills
# whose clients all left, the limit on fills in flight, and a crash during
# a fill.
. "$top_srcdir/tests/integration/lib.sh"

id_a=a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1
id_err=e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0
id_gone=0000000000000000000000000000000000000001
bin_a=$(mkbin $id_a)
start_fake up "$id_a=ok:$bin_a" "$id_err=status:503"

# ------------------------------------------------------ negative vs error

# The test clock (daemon/clock.h) moves only when the test says so.
touch -d @1700000000 "$T/clock"
DBGMIRROR_TEST_CLOCK=$T/clock start_daemon d --scan-dir none \
    --upstream "$up_URL" --negative-ttl 60 --error-ttl 3 --breaker-failures 100
is "$(code "$d_URL/buildid/$id_gone/debuginfo")" 404 "missing id: 404"
curl -s -D "$T/h0" -o /dev/null "$d_URL/buildid/$id_err/debuginfo"
is "$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$T/h0")/$(header Retry-After "$T/h0")" \
    502/3 "failing upstream: 502, Retry-After the error-ttl"
is "$(code "$d_URL/buildid/$id_gone/debuginfo")" 404 "again: 404 ..."
is "$(code "$d_URL/buildid/$id_err/debuginfo")" 502 \
    "... and a remembered error: 502 again, never a 404 clients would keep"
is "$(requests_to up "$id_gone")/$(requests_to up "$id_err")" 1/1 \
    "... neither asked upstream again"
curl -s -D "$T/h" -o /dev/null "$d_URL/buildid/$id_err/debuginfo"
is "$(header Retry-After "$T/h")/$(header Cache-Control "$T/h")" "3/" \
    "the error entry: Retry-After what is left of error-ttl, no max-age"
touch -d @1700000004 "$T/clock"
code "$d_URL/buildid/$id_err/debuginfo" >/dev/null
code "$d_URL/buildid/$id_gone/debuginfo" >/dev/null
is "$(requests_to up "$id_err")" 2 "after error-ttl the failing id is asked again"
is "$(requests_to up "$id_gone")" 1 "... but not the missing one (negative-ttl)"

# ------------------------------------------------------------------ purge

is "$(code "$d_URL/buildid/$id_a/debuginfo")" 200 "a good id is fetched"
code "$d_URL/buildid/$id_a/debuginfo" >/dev/null
is "$(requests_to up "$id_a")" 1 "... and then served from the cache"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/d-cache" purge "$id_a" 2>&1)
ok $? "dbgmirror purge ID: exit 0"
like "$out" 'purged 1 ' "... says what it removed: $out"
code "$d_URL/buildid/$id_a/debuginfo" >/dev/null
is "$(requests_to up "$id_a")" 2 "... the next request goes upstream"

"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" purge --negative >/dev/null
ok $? "dbgmirror purge --negative: exit 0"
code "$d_URL/buildid/$id_gone/debuginfo" >/dev/null
is "$(requests_to up "$id_gone")" 2 "... the missing id is asked again"

out=$(curl -s -X POST "$d_URL/admin/purge?upstream=$up_URL")
like "$out" '^purged [1-9]' "admin endpoint: purge --upstream: $out"
code "$d_URL/buildid/$id_a/debuginfo" >/dev/null
is "$(requests_to up "$id_a")" 3 "... the next request goes upstream"
is "$(code "$d_URL/admin/purge?id=$id_a" -X POST)" 200 "admin endpoint: purge by id"
is "$(code "$d_URL/admin/purge?bogus" -X POST)" 400 "admin endpoint: a bad query: 400"
is "$(curl -s -X POST "$d_URL/admin/purge?upstream=http%3A%2F%zz")" \
    "bad query: malformed percent escape" \
    "admin endpoint: a malformed escape: 400, saying so"
stop_daemon d

start_daemon open --scan-dir none --upstream "$up_URL" --admin-access none
is "$(code "$open_URL/admin/purge?negative" -X POST)" 403 \
    "admin-access none: the endpoint answers 403"
stop_daemon open

# ---------------------------------------------------------------- breaker

start_fake flaky "*=status:503"
# The backoff (an hour) is over when the test clock (daemon/clock.h) says.
touch -d @1700000000 "$T/bclock"
DBGMIRROR_TEST_CLOCK=$T/bclock start_daemon b --scan-dir none \
    --upstream "$flaky_URL" --error-ttl 0 \
    --breaker-failures 3 --breaker-backoff 3600
for i in 1 2 3; do
	code "$b_URL/buildid/00000000000000000000000000000000000000a$i/debuginfo" >/dev/null
done
n=$(requests_to flaky /buildid/)
is "$n" 3 "three failures in a row reach the upstream"
like "$(metric "dbgmirror_upstream_breaker_state{upstream=\"$flaky_URL\",state=\"open\"}" "$b_URL")" \
    '^1$' "... and open its breaker"
is "$(code "$b_URL/buildid/00000000000000000000000000000000000000b1/debuginfo")" 502 \
    "with the breaker open: 502 ..."
is "$(requests_to flaky /buildid/)" 3 "... without asking the upstream"
# The probe (GET /) closes it: fakeupstream answers / with 200.
touch -d @1700003600 "$T/bclock"
wait_until 8 sh -c "[ \$(grep -c '^GET / ' '$flaky_LOG') -ge 1 ]"
ok $? "after the backoff the breaker probes the upstream"
wait_until 5 sh -c "curl -s '$b_URL/metrics' | grep -q '^dbgmirror_upstream_breaker_state{upstream=\"$flaky_URL\",state=\"closed\"} 1'"
ok $? "... and closes"
like "$(cat "$b_LOG")" "upstream $flaky_URL: breaker open \(3 failures in a row, the last an HTTP error\): skipped, probed again in 3600s" \
    "the log says the breaker opened, why, and when it probes"
like "$(cat "$b_LOG")" "upstream $flaky_URL: breaker probing" "... when it probes"
like "$(cat "$b_LOG")" "upstream $flaky_URL: breaker closed \(the probe got HTTP 200\)" \
    "... and that the probe's answer closed it"
code "$b_URL/buildid/00000000000000000000000000000000000000b2/debuginfo" >/dev/null
is "$(requests_to flaky /buildid/)" 4 "... requests reach the upstream again"
stop_daemon b

# ------------------------------------------------------------------- loops

# Two mirrors, each the other's upstream: a miss must end, not bounce.  x
# also listens on a port chosen here, so that y can name it first.
xport=$(pick_port)
start_daemon y --scan-dir none --upstream "http://127.0.0.1:$xport"
start_daemon x --scan-dir none --upstream "$y_URL" --listen "127.0.0.1:$xport"
t0=$(date +%s%N)
is "$(code "$x_URL/buildid/$id_gone/executable")" 404 \
    "a loop between two mirrors ends with 404"
ms=$((($(date +%s%N) - t0) / 1000000))
lt "$ms" 8000
ok $? "... promptly (${ms} ms)"
access_log_has x 'MISS loop'
ok $? "... the loop is seen and logged"
xff="1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4, 5.5.5.5, 6.6.6.6, 7.7.7.7, 8.8.8.8"
is "$(code "$y_URL/buildid/$id_gone/debuginfo" -H "X-Forwarded-For: $xff")" 404 \
    "8 X-Forwarded-For entries: 404 without forwarding"
access_log_has y '404 .*MISS loop'
ok $? "... logged"
stop_daemon x
stop_daemon y
start_daemon z --scan-dir none --upstream "$up_URL"
code "$z_URL/buildid/$id_a/debuginfo" -H "X-Forwarded-For: 9.9.9.9" >/dev/null
like "$(grep "/buildid/$id_a/" "$up_LOG" | tail -n 1)" 'xff="9\.9\.9\.9, 127\.0\.0\.1"' \
    "X-Forwarded-For is extended with the client's address"
like "$(grep "/buildid/$id_a/" "$up_LOG" | tail -n 1)" 'ua="curl/[^"]* dbgmirror/' \
    "User-Agent is the client's with ours appended"
stop_daemon z

# ---------------------------------------------------------------- eviction

ids=""
for i in 1 2 3 4 5 6 7 8; do
	ids="$ids 5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e0$i"
done
rules=""
for i in $ids; do
	rules="$rules $i=ok:$(mkbin "$i" 300000)"
done
# shellcheck disable=SC2086
start_fake big $rules
start_daemon e --scan-dir none --upstream "$big_URL" --cache-size 1M \
    --cache-high-watermark 100 --cache-low-watermark 70
good=0
for i in $ids; do
	curl -s -o "$T/evict.body" "$e_URL/buildid/$i/debuginfo"
	cmp -s "$T/evict.body" "$T/bins/$i" && good=$((good + 1))
	total=$(find "$T/e-cache/blobs" -type f -printf '%s\n' |
	    awk '{ s += $1 } END { print s + 0 }')
	[ "$total" -le 1048576 ] || diag "over the cap after $i: $total"
done
is "$good" 8 "8 files of 300+ KB through a 1 MB cache: every body right"
wait_until 15 sh -c "[ \$(find '$T/e-cache/blobs' -type f -printf '%s\n' | awk '{ s += \$1 } END { print s + 0 }') -le 1048576 ]"
ok $? "... and the cache stays within its cap"
like "$(metric dbgmirror_cache_evictions_total "$e_URL")" '^[1-9]' \
    "... by evicting (metrics)"
stop_daemon e

# ------------------------------------------------------ crash during a fill

id_slow=5105105105105105105105105105105105105105
bin_slow=$(mkbin $id_slow 200000)
start_fake slow --rate 20000 "$id_slow=trickle:$bin_slow"
start_daemon k --scan-dir none --upstream "$slow_URL"
curl -s -o /dev/null -m 30 "$k_URL/buildid/$id_slow/debuginfo" &
wait_until 10 sh -c "find '$T/k-cache/tmp' -type f -size +1k | grep -q ."
ok $? "a slow fill is being written to a temp file"
kill -KILL "$k_PID"
wait "$k_PID" 2>/dev/null
# Generous upstream deadlines: this is about the restart, and a machine
# loaded by the tests beside this one can take seconds to answer.
start_daemon k --scan-dir none --upstream "$slow_URL" \
    --upstream-first-byte-timeout 30 --upstream-stall-timeout 30
is "$(find "$T/k-cache/tmp" -type f | wc -l)" 0 \
    "after kill -9 and a restart: no temp file left"
is "$(find "$T/k-cache/blobs" -type f | wc -l)" 0 \
    "... and no partial entry"
got=$(curl -s -o "$T/slow" -m 60 -w '%{http_code} %{size_download}' \
    "$k_URL/buildid/$id_slow/debuginfo")
cmp -s "$T/slow" "$bin_slow"
ok $? "... the id is fetched whole afterwards" ||
    diag "got $got; the daemon said: $(grep -v ' 200 ' "$k_LOG" | tail -n 5)"
stop_daemon k

# ---------------------------------------------------- purge during a fill

# A client has its bytes at the verdict, before the fill's entry is
# written (fsync, rename, commit): a purge of the id while the fill runs
# must not leave that entry behind once it is written.
id_p=5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e
bin_p=$(mkbin $id_p 200000)
start_fake pslow --rate 50000 "$id_p=trickle:$bin_p"
start_daemon p --scan-dir none --upstream "$pslow_URL" \
    --upstream-first-byte-timeout 30 --upstream-stall-timeout 30
curl -s -o "$T/p-got" -m 60 "$p_URL/buildid/$id_p/debuginfo" &
cpid=$!
wait_until 10 sh -c "find '$T/p-cache/tmp' -type f -size +1k | grep -q ."
ok $? "a slow fill is being written"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/p-cache" purge "$id_p" 2>&1)
like "$out" 'purged 0 ' "dbgmirror purge of its id meanwhile: $out"
wait "$cpid"
cmp -s "$T/p-got" "$bin_p"
ok $? "... the client gets the whole file"
wait_until 30 grep -q "an answer from $pslow_URL was served but not cached: purged while it was fetched" "$p_LOG"
ok $? "... which is not cached, says the log"
is "$(curl -s -D - -o /dev/null "$p_URL/buildid/$id_p/debuginfo" |
    tr -d '\r' | sed -n 's/^X-Cache: //Ip')" MISS "... and the next request misses"
is "$(requests_to pslow "$id_p")" 2 "... and asks upstream again"
stop_daemon p

# ------------------------------------------- clients leave; fills limited

id_left=1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e1e
id_other=2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e2e
bin_left=$(mkbin $id_left 100000)
start_fake drip --rate 50000 "$id_left=trickle:$bin_left" "*=hang"
start_daemon m --scan-dir none --upstream "$drip_URL" --max-fills 1 \
    --upstream-first-byte-timeout 3
pids=""
for i in 1 2; do
	curl -s -o /dev/null -m 0.5 "$m_URL/buildid/$id_left/debuginfo" &
	pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids
is "$(code "$m_URL/buildid/$id_other/debuginfo")" 503 \
    "max-fills 1: a second fill at once is refused with 503"
wait_until 10 sh -c "curl -s -D - -o /dev/null '$m_URL/buildid/$id_left/debuginfo' | grep -qi '^X-Cache: HIT'"
ok $? "both clients left after 0.5 s, yet the fill completed into the cache"
curl -s -o "$T/left" "$m_URL/buildid/$id_left/debuginfo"
cmp -s "$T/left" "$bin_left"
ok $? "... with the right bytes"
is "$(requests_to drip "$id_left")" 1 "... from one upstream request"
stop_daemon m
is "$STOP_RC" 0 "SIGTERM: exit 0"
done_testing
