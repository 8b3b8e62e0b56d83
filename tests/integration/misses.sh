#!/bin/bash
# The missing-id report: every request that ends not-found (no source has
# it, an upstream 404, a remembered miss) is counted per build-id, with the
# kinds asked for and a sample client, shown by `dbgmirror misses` and
# /admin/misses (text and JSON, --top, --since), counted in /metrics and
# bounded by misses-max, the least missed evicted first.
. "$top_srcdir/tests/integration/lib.sh"

id_ok=a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1
id_m1=b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1
id_m2=b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2
id_m3=b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3
id_m4=b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4
id_m5=b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5
bin_ok=$(mkbin $id_ok)
start_fake up "$id_ok=ok:$bin_ok"
echo s3cret >"$T/token"

# 2023-11-14T22:13:20Z on the test clock (daemon/clock.h).
touch -d @1700000000 "$T/clock"
export DBGMIRROR_TEST_CLOCK=$T/clock
start_daemon d --scan-dir none --upstream "$up_URL" --negative-ttl 60 \
    --misses-max 3 --admin-token "$T/token"
# (With the test clock, the CLI says on stderr whose clock it reads.)
misses() {
	"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" misses "$@" \
	    2>>"$T/cli.err"
}
# ids_in REPORT: the build-ids a text report lists, in its order.
ids_in() {
	printf '%s\n' "$1" | awk 'NR > 2 { print $5 }' | tr '\n' ' '
}

# ------------------------------------------------------------ recording

is "$(code "$d_URL/buildid/$id_m1/debuginfo" -A 'gdb/13.1 test')" 404 \
    "an id no upstream has: 404"
is "$(code "$d_URL/buildid/$id_m1/debuginfo" -A 'gdb/13.1 test')" 404 \
    "... again, from the negative entry"
is "$(code "$d_URL/buildid/$id_m1/executable" -A 'gdb/13.1 test')" 404 \
    "... its executable too"
is "$(code "$d_URL/buildid/$id_m2/source/usr/src/a.c" -A 'perf "x"')" 404 \
    "a missing source of another id"
is "$(code "$d_URL/buildid/$id_ok/debuginfo")" 200 "an id the upstream has"
wait_until 20 sh -c "\"$DBGMIRROR\" --no-config --cache-dir '$T/d-cache' misses 2>/dev/null | grep -q '^2 build-ids'" ||
    diag "the report never showed two ids"

out=$(misses)
ok $? "dbgmirror misses: exit 0"
like "$(printf '%s\n' "$out" | head -n 1)" '^2 build-ids missing' \
    "the report counts two missing ids (the found one is not there)"
is "$(ids_in "$out")" "$id_m1 $id_m2 " "the most missed first"
row=$(printf '%s\n' "$out" | grep "$id_m1")
like "$row" '^ +3  2023-11-14T22:13:20Z  2023-11-14T22:13:20Z  debuginfo,executable ' \
    "its count, last and first seen (the test clock) and kinds: $row"
like "$row" '127\.0\.0\.1  gdb/13\.1 test$' "... and a sample client"

json=$(misses --json)
ok $? "dbgmirror misses --json: exit 0"
got=$(printf '%s' "$json" | python3 -c '
import json, sys
r = json.load(sys.stdin)
m = r["misses"]
print(r["ids"], len(m), m[0]["buildid"], m[0]["count"], ",".join(m[0]["kinds"]),
      m[0]["first_seen"], m[0]["last_seen"], m[0]["client"], m[0]["user_agent"],
      m[1]["kinds"], m[1]["user_agent"])')
is "$got" "2 2 $id_m1 3 debuginfo,executable 2023-11-14T22:13:20Z 2023-11-14T22:13:20Z 127.0.0.1 gdb/13.1 test ['source'] perf \"x\"" \
    "... valid JSON with every field (a quote in a User-Agent escaped)"
is "$(ids_in "$(misses --top 1)")" "$id_m1 " "--top 1: the most missed only"

# -------------------------------------------------------------- --since

touch -d @1700007200 "$T/clock" # two hours later
is "$(code "$d_URL/buildid/$id_m3/debuginfo")" 404 "a third id, two hours later"
wait_until 20 sh -c "\"$DBGMIRROR\" --no-config --cache-dir '$T/d-cache' misses 2>/dev/null | grep -q '^3 build-ids'" ||
    diag "the report never showed three ids"
is "$(ids_in "$(misses --since 1h)")" "$id_m3 " \
    "--since 1h: only the id missed within the hour"
is "$(ids_in "$(misses --since 3h)")" "$id_m1 $id_m3 $id_m2 " \
    "--since 3h: all three (among equal counts the last seen first)"
misses --since soon >/dev/null
is "$?" 2 "--since with a bad duration: exit 2"
"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" stats --top 3 \
    >/dev/null 2>&1
is "$?" 2 "misses' options on another command: exit 2"

# ------------------------------------------------------- /admin/misses

auth=(-H 'Authorization: Bearer s3cret')
is "$(code "$d_URL/admin/misses")" 401 \
    "/admin/misses without the admin token: 401"
is "$(code "$d_URL/admin/misses" "${auth[@]}")" 200 "... with it: 200 (GET)"
is "$(code "$d_URL/admin/misses" "${auth[@]}" -X POST)" 405 \
    "... POST: 405 (a report, not an action)"
is "$(ids_in "$(curl -s "${auth[@]}" "$d_URL/admin/misses?top=2")")" \
    "$id_m1 $id_m3 " "?top=2: the same order as the CLI"
is "$(curl -s "${auth[@]}" "$d_URL/admin/misses?format=json&since=1h" |
    python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["ids"], [m["buildid"] for m in r["misses"]])')" \
    "3 ['$id_m3']" "?format=json&since=1h: JSON of the recent ids"
is "$(code "$d_URL/admin/misses?top=many" "${auth[@]}")" 400 \
    "a bad query: 400"
is "$(metric dbgmirror_missing_ids "$d_URL")" 3 \
    "/metrics: dbgmirror_missing_ids"
is "$(metric dbgmirror_misses_dropped_total "$d_URL")" 0 \
    "/metrics: none dropped"

# ------------------------------------------------------------- the cap

touch -d @1700007300 "$T/clock"
is "$(code "$d_URL/buildid/$id_m4/debuginfo")" 404 "a fourth id, over misses-max 3"
# Recorded, then evicted in a transaction of its own: wait for both.
wait_until 20 sh -c "\"$DBGMIRROR\" --no-config --cache-dir '$T/d-cache' misses 2>/dev/null >'$T/r' && grep -q '$id_m4' '$T/r' && ! grep -q '$id_m2' '$T/r'" ||
    diag "the fourth id never replaced the second"
is "$(ids_in "$(misses)")" "$id_m1 $id_m4 $id_m3 " \
    "at the cap, the least missed seen longest ago went ($id_m2)"
is "$(metric dbgmirror_missing_ids "$d_URL")" 3 "... 3 ids kept"

# A herd: 100 not-found requests over 20 connections at once, answered by
# both event-loop threads; every one counted, none dropped.
seq 1 100 | xargs -P 20 -I{} curl -s -o /dev/null --max-time 20 \
    "$d_URL/buildid/$id_m3/debuginfo"
count_m3() {
	misses | awk -v id="$id_m3" '$5 == id { print $1 }'
}
wait_until 20 sh -c "\"$DBGMIRROR\" --no-config --cache-dir '$T/d-cache' misses 2>/dev/null | grep -q '^ *101 .* $id_m3 '" ||
    diag "the herd was never counted whole"
is "$(count_m3)" 101 "a herd of 100 misses: all counted"
is "$(metric dbgmirror_misses_dropped_total "$d_URL")" 0 "... none dropped"

stop_daemon d
is "$STOP_RC" 0 "the daemon stops cleanly"

# misses-max 0: no report.
start_daemon off --scan-dir none --misses-max 0
is "$(code "$off_URL/buildid/$id_m5/debuginfo")" 404 "misses-max 0: a miss"
is "$(code "$off_URL/buildid/$id_ok/debuginfo")" 404 "... and another"
stop_daemon off
is "$(ids_in "$("$DBGMIRROR" --no-config --cache-dir "$T/off-cache" misses 2>/dev/null)")" "" \
    "... recorded nothing, once the daemon has stopped (it writes what it holds on exit)"

done_testing
