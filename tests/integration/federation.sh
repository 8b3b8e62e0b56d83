#!/bin/bash
# Federation with real peers: elfutils debuginfod -F serves the fixtures as
# the upstream, dbgmirrord ("mirror") has no files of its own, and a second
# dbgmirrord ("edge") uses the mirror as its upstream.  debuginfod-find and
# gdb through either get byte-identical files; the X-DEBUGINFOD-* headers of
# the upstream come through on the first answer and on later hits; the
# second request for an id is a cache hit that never reaches the upstream.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
dbg=$FX/usr/lib/debug
start_debuginfod ref -F "$FX"
client_env

# The reference scans in the background: wait until it serves them all.
ref_indexed() {
	local id
	for id in "$ID_prog_a" "$ID_prog_b" "$ID_prog_c" "$ID_shapes"; do
		[ "$(code "$ref_URL/buildid/$id/debuginfo")" = 200 ] || return 1
	done
}
wait_until 60 ref_indexed || { cat "$ref_LOG"; bail "debuginfod did not index"; }

start_daemon mirror --scan-dir none --upstream "$ref_URL"
start_daemon edge --scan-dir none --upstream "$mirror_URL"

# ref_requests REGEX: requests the reference logged for a path.
ref_requests() {
	grep -c -- "$1" "$ref_LOG"
}

# ------------------------------------------------------- debuginfod-find

check_find mirror "split debuginfo of prog_a" "$dbg/prog_a.debug" \
    debuginfo "$ID_prog_a"
access_log_has mirror "\"GET /buildid/$ID_prog_a/debuginfo\" 200 [0-9]+ [0-9.]+ms MISS $ref_URL"
ok $? "the mirror's access log: MISS, filled from the upstream"
before=$(ref_requests "$ID_prog_a/debuginfo")
check_find mirror "the same again (a new client cache)" "$dbg/prog_a.debug" \
    debuginfo "$ID_prog_a"
access_log_has mirror "\"GET /buildid/$ID_prog_a/debuginfo\" 200 [0-9]+ [0-9.]+ms HIT cache"
ok $? "... a HIT from the cache"
is "$(ref_requests "$ID_prog_a/debuginfo")" "$before" \
    "... that did not reach the upstream"
check_find mirror "stripped executable of prog_a" "$FX/usr/bin/prog_a" \
    executable "$ID_prog_a"
check_find mirror "the dwz alt file" "$dbg/.dwz/shapes.debug" \
    debuginfo "$ID_shapes"
check_find mirror "prog_c's executable" "$FX/usr/bin/prog_c" \
    executable "$ID_prog_c"
check_find edge "prog_b's debuginfo, through two mirrors" \
    "$dbg/prog_b.debug" debuginfo "$ID_prog_b"
check_find edge "prog_a's, which the mirror has cached" \
    "$dbg/prog_a.debug" debuginfo "$ID_prog_a"
access_log_has mirror "\"GET /buildid/$ID_prog_a/debuginfo\" 200 [0-9]+ [0-9.]+ms HIT cache \"[^\"]*dbgmirror/"
ok $? "the edge's request reached the mirror with the relayed User-Agent"

# A section: the mirror cuts it from the cached debuginfo.
dump_section "$dbg/prog_a.debug" .debug_info "$T/debug_info"
check_find mirror ".debug_info of prog_a" "$T/debug_info" \
    section "$ID_prog_a" .debug_info
is "$(ref_requests "$ID_prog_a/section")" 0 \
    "... cut from the cached debuginfo, not asked upstream"
# Not cached: forwarded.
dump_section "$FX/usr/bin/prog_c" .debug_line "$T/debug_line"
check_find mirror ".debug_line of prog_c (forwarded)" "$T/debug_line" \
    section "$ID_prog_c" .debug_line

# A source file: forwarded under its canonical path, then cached.
srcdir=$(cd "$FX/../src" && pwd)
check_find edge "prog_c.c, a source file, through two mirrors" \
    "$srcdir/prog_c.c" source "$ID_prog_c" "$srcdir/prog_c.c"
check_find mirror "... the same, asked with a '..' in its path" \
    "$srcdir/prog_c.c" source "$ID_prog_c" "$srcdir/../src/./prog_c.c"
is "$(ref_requests "$ID_prog_c/source")" 1 \
    "... the upstream was asked once for it"

# ---------------------------------------------------------------- headers

curl -s -D "$T/ref.h" -o /dev/null "$ref_URL/buildid/$ID_prog_b/executable"
curl -s -D "$T/first.h" -o "$T/first" "$mirror_URL/buildid/$ID_prog_b/executable"
curl -s -D "$T/later.h" -o "$T/later" "$mirror_URL/buildid/$ID_prog_b/executable"
want=$(header X-DEBUGINFOD-FILE "$T/ref.h")
[ -n "$want" ]
ok $? "the upstream names the file: $want"
is "$(header X-DEBUGINFOD-FILE "$T/first.h")" "$want" \
    "X-DEBUGINFOD-FILE relayed on the first answer"
is "$(header X-DEBUGINFOD-FILE "$T/later.h")" "$want" \
    "... and replayed on a later hit"
is "$(header X-DEBUGINFOD-SIZE "$T/later.h")" "$(stat -c %s "$FX/usr/bin/prog_b")" \
    "X-DEBUGINFOD-SIZE on the hit"
like "$(header Cache-Control "$T/later.h")" 'max-age=[0-9]{4,}' \
    "a hit carries a long Cache-Control max-age"
is "$(header X-Cache "$T/first.h")" MISS "X-Cache: MISS, then ..."
is "$(header X-Cache "$T/later.h")" HIT "... HIT"
cmp -s "$T/first" "$FX/usr/bin/prog_b" && cmp -s "$T/later" "$FX/usr/bin/prog_b"
ok $? "both bodies are the executable"

# ------------------------------------------------------- misses, Range, HEAD

missing=0123456789abcdef0123456789abcdef01234567
is "$(code "$mirror_URL/buildid/$missing/debuginfo")" 404 \
    "an id nobody has: 404"
curl -s -D "$T/neg.h" -o /dev/null "$mirror_URL/buildid/$missing/debuginfo"
like "$(header Cache-Control "$T/neg.h")" '^max-age=[0-9]+$' \
    "asked again: a negative hit with Cache-Control max-age"
access_log_has mirror "\"GET /buildid/$missing/debuginfo\" 404 [0-9]+ [0-9.]+ms NEGATIVE"
ok $? "... logged as NEGATIVE"
is "$(ref_requests "$missing")" 1 "... the upstream was asked once"

is "$(curl -s -r 100-199 "$mirror_URL/buildid/$ID_prog_c/debuginfo" | wc -c)" 100 \
    "Range on a cold id: 100 bytes"
is "$(curl -s -o /dev/null -w '%{http_code}' -I "$mirror_URL/buildid/$ID_prog_b/debuginfo")" 200 \
    "HEAD on a cold id: 200"

# -------------------------------------------------------------------- gdb

gdb_run edge "$FX/usr/bin/prog_a" 'info line perimeter_a' 'ptype struct shape'
like "$OUT" 'Line [0-9]+ of "prog_a\.c"' \
    "gdb through two mirrors: perimeter_a resolves to a line"
like "$OUT" 'double length;' "... and struct shape from the dwz alt file"

# ---------------------------------------------------------------- metrics

curl -s "$mirror_URL/metrics" >"$T/metrics"
like "$(grep "^dbgmirror_upstream_requests_total{upstream=\"$ref_URL\"}" "$T/metrics")" \
    ' [1-9][0-9]*$' "/metrics counts the upstream's requests"
like "$(grep '^dbgmirror_requests_total{endpoint="debuginfo",result="hit"}' "$T/metrics")" \
    ' [1-9][0-9]*$' "/metrics counts hits"
like "$(grep '^dbgmirror_cache_entries ' "$T/metrics")" ' [1-9][0-9]*$' \
    "/metrics shows cache entries"

stop_daemon edge
is "$STOP_RC" 0 "edge: SIGTERM, exit 0"
stop_daemon mirror
is "$STOP_RC" 0 "mirror: SIGTERM, exit 0"
done_testing
