#!/bin/bash
# /metadata (elfutils 0.192+): the JSON of the documented format, checked
# with Python's json module, for paths of scan directories, members of a
# .deb and files an upstream answered; globs whose "*" stops at "/";
# unstripped binaries as two results; bad queries as 400 with a reason;
# paths that are no UTF-8; rescans dropping what is gone.  Federated
# through a second dbgmirrord; complete:false when an upstream is down,
# answers something else (elfutils debuginfod 0.188, which predates
# /metadata, among them), or hangs past metadata-timeout; the loop guard.
# (Debian 12's debuginfod-find predates metadata: curl asks.)
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
dbg=$FX/usr/lib/debug
command -v python3 >/dev/null || bail "python3 is not installed"

# check_json FILE: the answer in FILE follows the documented format
# exactly; prints one "type buildid file archive" line per result (file
# and archive with repr() escapes), then "complete True|False".
cat >"$T/check.py" <<'EOF'
import json, re, sys
doc = json.load(open(sys.argv[1], encoding="utf-8", errors="strict"))
assert isinstance(doc, dict) and set(doc) == {"results", "complete"}, doc
assert isinstance(doc["complete"], bool)
for r in doc["results"]:
    assert isinstance(r, dict), r
    assert set(r) in ({"type", "buildid", "file"},
                      {"type", "buildid", "file", "archive"}), r
    assert r["type"] in ("executable", "debuginfo"), r
    assert re.fullmatch(r"([0-9a-f]{2})+", r["buildid"]), r
    assert isinstance(r["file"], str) and r["file"].startswith("/"), r
    assert isinstance(r.get("archive", ""), str) and r.get("archive") != ""
    print(r["type"], r["buildid"], ascii(r["file"]),
          ascii(r.get("archive", "-")))
print("complete", doc["complete"])
EOF

# meta NAME KEY VALUE [CURL ARGS...]: ask server NAME; the checked lines
# in $META (empty when the answer is not the format), the status in
# $META_CODE, the Content-Type in $META_TYPE.
meta() {
	local name=$1 key=$2 value=$3 url
	shift 3
	eval "url=\$${name}_URL"
	META_CODE=$(curl -s -G -o "$T/meta.json" -D "$T/meta.h" \
	    -w '%{http_code}' --max-time 30 "$@" \
	    --data-urlencode "key=$key" --data-urlencode "value=$value" \
	    "$url/metadata")
	META_TYPE=$(header Content-Type "$T/meta.h")
	META=$(python3 "$T/check.py" "$T/meta.json" 2>"$T/check.err") ||
	    { META=; sed 's/^/#   /' "$T/check.err" | tail -n 3; }
}

# results [FIELDS]: the result lines of $META (or those awk fields of
# them), sorted; lines: its arguments, sorted; count: how many results.
results() {
	printf '%s\n' "$META" | grep -v '^complete ' |
	    awk "{ print ${1:-\$0} }" | LC_ALL=C sort
}
lines() {
	printf '%s\n' "$@" | LC_ALL=C sort
}
count() {
	results | grep -c .
}
complete() {
	printf '%s\n' "$META" | sed -n 's/^complete //p'
}

# ----------------------------------------------------------- the index

# An unstripped program, a .deb with a debug member, a path of no UTF-8.
uid=0badc0ffee0badc0ffee0badc0ffee0badc0ffee
mkdir -p "$T/local/bin" "$T/pkgs" "$T/deb/DEBIAN" "$T/deb/usr/lib/debug"
cp "$(mkbin "$uid")" "$T/local/bin/unstripped"
wid=0badf00d0badf00d0badf00d0badf00d0badf00d
cp "$(mkbin "$wid")" "$T/local/bin/"$'bad\x01\xff\xc3\xa9'
cp "$dbg/prog_a.debug" "$T/deb/usr/lib/debug/member.debug"
printf 'Package: m\nVersion: 1\nArchitecture: amd64\nMaintainer: T <t@example.org>\nDescription: fixture\n' \
    >"$T/deb/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$T/deb" "$T/pkgs/m_1_amd64.deb" \
    >/dev/null || bail "dpkg-deb failed"

start_daemon origin --scan-dir "$FX" --scan-dir "$T/local" \
    --scan-packages "$T/pkgs"

meta origin file "$FX/usr/bin/prog_a"
is "$META_CODE" 200 "file: 200"
is "$META_TYPE" application/json "... application/json"
is "$(results)" "executable $ID_prog_a '$FX/usr/bin/prog_a' '-'" \
    "... one result: the stripped executable, no archive"
is "$(complete)" True "... complete"

meta origin file "$T/local/bin/unstripped"
is "$(results)" "$(lines "debuginfo $uid '$T/local/bin/unstripped' '-'" \
    "executable $uid '$T/local/bin/unstripped' '-'")" \
    "an unstripped binary: two results"

meta origin file "$FX/usr/bin/prog_"
is "$(count)" 0 "file: a prefix of a path is no match"
is "$(complete)" True "... and the answer is complete"

# "*" does not cross "/": the .dwz and .build-id entries stay out.
meta origin glob "$dbg/*.debug"
is "$(results '$3')" "$(lines "'$dbg/prog_a.debug'" "'$dbg/prog_b.debug'")" \
    "glob: the .debug files of one directory"
meta origin glob "$FX/usr/*/prog_?"
is "$(results '$1, $3')" "$(lines "debuginfo '$FX/usr/bin/prog_c'" \
    "executable '$FX/usr/bin/prog_a'" "executable '$FX/usr/bin/prog_b'" \
    "executable '$FX/usr/bin/prog_c'")" "glob: a wildcard directory"
meta origin glob "$FX/*/prog_a"
is "$(count)" 0 "glob: one \"*\" is one path component"
meta origin glob "$dbg/.dwz/*"
is "$(results '$1, $2')" "debuginfo $ID_shapes" \
    "glob: the dwz alt file"

meta origin buildid "$ID_prog_a"
like "$(results)" "^debuginfo $ID_prog_a '/usr/lib/debug/member.debug' 'm_1_amd64.deb'" \
    "buildid: the package member, its archive the package"
like "$(results)" "debuginfo $ID_prog_a '$dbg/prog_a.debug' '-'" \
    "... the split debug file"
like "$(results)" "executable $ID_prog_a '$FX/usr/bin/prog_a' '-'" \
    "... and the executable"

meta origin file /usr/lib/debug/member.debug
is "$(results)" "debuginfo $ID_prog_a '/usr/lib/debug/member.debug' 'm_1_amd64.deb'" \
    "file: a package member by its member path"

# Sources are never results, though the index knows them.
srcdir=$(cd "$FX/../src" && pwd)
meta origin glob "$srcdir/*"
is "$(count)" 0 "glob: source files are no results"

# A path of no UTF-8: valid JSON all the same (check.py reads it
# strictly), the control byte escaped, the bad byte U+FFFD.
meta origin glob "$T/local/bin/bad*"
is "$(results '$1, $2')" "$(lines "debuginfo $wid" "executable $wid")" \
    "a path that is no UTF-8 is found"
like "$(results '$3' | head -n 1)" "bad\\\\x01\\\\ufffd\\\\xe9'$" \
    "... as valid JSON: \\u0001, U+FFFD for 0xff, é kept"
grep -q 'bad\\u0001' "$T/meta.json"
ok $? "... the control byte sent as \\u0001"

# Bad queries: a 400 saying why.
for q in "" "key=file" "value=/x" "key=nope&value=/x" "key=buildid&value=xyz" \
    "key=buildid&value=abc"; do
	st=$(curl -s -o "$T/bad.txt" -w '%{http_code} %{content_type}' \
	    "$origin_URL/metadata?$q")
	is "$st" "400 text/plain" "\"/metadata?$q\": 400 text/plain"
	grep -Eq 'key|value|build-id|hex|digit|length|odd' "$T/bad.txt"
	ok $? "... saying why: $(head -c 80 "$T/bad.txt")"
done

# A rescan drops what is gone.
rm "$T/local/bin/unstripped"
kill -USR1 "$origin_PID"
wait_scan origin 2
meta origin buildid "$uid"
is "$(count)" 0 "a removed file: gone after the rescan"
is "$(complete)" True "... the answer complete"

like "$(metric 'dbgmirror_requests_total{endpoint="metadata",result="hit"}' "$origin_URL")" \
    '^[1-9]' "metrics: metadata requests answered"
like "$(metric 'dbgmirror_requests_total{endpoint="metadata",result="bad"}' "$origin_URL")" \
    '^[1-9]' "metrics: bad metadata requests"

# ----------------------------------------------------------- federation

start_daemon edge --scan-dir none --upstream "$origin_URL"
meta edge glob "$dbg/*.debug"
is "$(results '$3')" "$(lines "'$dbg/prog_a.debug'" "'$dbg/prog_b.debug'")" \
    "edge: the origin's results"
is "$(complete)" True "... complete"
access_log_has origin '"GET /metadata\?key=glob&value=[^"]*" 200 .*dbgmirror/'
ok $? "the origin was asked, with the relayed User-Agent"

# A fill from the origin puts its X-DEBUGINFOD-FILE in the edge's index.
# The client has its last byte once the file is checked, before the
# publish commits the entry: wait for it, then stop the origin.
entries=$(metric dbgmirror_cache_entries "$edge_URL")
is "$(code "$edge_URL/buildid/$ID_prog_b/executable")" 200 \
    "edge: prog_b's executable, filled from the origin"
edge_published() {
	lt "$entries" "$(metric dbgmirror_cache_entries "$edge_URL")"
}
wait_until 30 edge_published
ok $? "... and published in the edge's cache"
# A failing upstream: the origin goes; the edge still knows the fill.
stop_daemon origin
meta edge buildid "$ID_prog_b"
is "$(results)" "executable $ID_prog_b '$FX/usr/bin/prog_b' '-'" \
    "edge, origin down: the cached answer's file, from the edge's index"
is "$(complete)" False "... complete:false, an upstream failed"

# Another answer than JSON, and a hanging upstream (metadata-timeout 1).
printf '{"results":[{"type":"debuginfo","buildid":"ab","file":"/from/fake","archive":"f.rpm"},{"type":"source","buildid":"ab","file":"/s.c"}],"complete":true}' \
    >"$T/answer.json"
start_fake good metadata=ok:"$T/answer.json"
start_fake html metadata=html
start_fake hang metadata=hang
start_daemon fed --scan-dir "$FX" --metadata-timeout 1 \
    --upstream "$good_URL"
meta fed file "$FX/usr/bin/prog_c"
is "$(results)" "$(lines "debuginfo $ID_prog_c '$FX/usr/bin/prog_c' '-'" \
    "debuginfo ab '/from/fake' 'f.rpm'" \
    "executable $ID_prog_c '$FX/usr/bin/prog_c' '-'")" \
    "an upstream's results appended (its source result dropped)"
is "$(complete)" True "... complete"
stop_daemon fed
start_daemon fed2 --scan-dir "$FX" --metadata-timeout 1 \
    --upstream "$good_URL" --upstream "$html_URL"
meta fed2 file "$FX/usr/bin/prog_c"
is "$(count)" 3 "an upstream answering HTML: the others' results"
is "$(complete)" False "... complete:false"
start_daemon fed3 --scan-dir "$FX" --metadata-timeout 1 \
    --upstream "$good_URL" --upstream "$hang_URL"
meta fed3 file "$FX/usr/bin/prog_c"
is "$META_CODE" 200 "a hanging upstream: answered at the deadline"
is "$(count)" 3 "... with the others' results"
is "$(complete)" False "... complete:false"

# An upstream's result that cannot be kept (a file holding \u0000) is
# dropped, and the answer no longer says it is complete.
printf '{"results":[{"type":"debuginfo","buildid":"ab","file":"/a\\u0000b"}],"complete":true}' \
    >"$T/nul.json"
start_fake nul metadata=ok:"$T/nul.json"
start_daemon fed4 --scan-dir "$FX" --metadata-timeout 5 --upstream "$nul_URL"
meta fed4 file "$FX/usr/bin/prog_c"
is "$(count)" 2 "a result with \\u0000 in file: dropped"
is "$(complete)" False "... and complete:false, though the upstream said true"
stop_daemon fed4

# Clients that leave before the answer, while an upstream hangs: the
# daemon lets go of their queries (sanitizer builds check for leaks when
# it stops) and answers the next one.
for i in 1 2 3; do
	curl -s -o /dev/null --max-time 0.5 \
	    "$fed3_URL/metadata?key=glob&value=/usr/*"
done
wait_until 20 sh -c "[ \$(grep -c 'metadata?key=glob: .*$hang_URL' '$fed3_LOG') -ge 3 ]"
ok $? "queries whose clients left ran to their deadline"
meta fed3 file "$FX/usr/bin/prog_c"
is "$(count)" 3 "... and the next one is answered"
stop_daemon fed3
is "$STOP_RC" 0 "... and the daemon stops cleanly"

# A real debuginfod older than /metadata (Debian 12's 0.188) as upstream:
# it cannot answer, so the answer is the index's, incomplete.
if command -v debuginfod >/dev/null; then
	start_debuginfod ref -F "$FX/usr/bin"
	start_daemon old --scan-dir "$FX" --upstream "$ref_URL"
	meta old file "$FX/usr/bin/prog_c"
	is "$(count)" 2 "elfutils debuginfod 0.188 upstream: the index's results"
	is "$(complete)" False "... complete:false (it has no /metadata)"
else
	skip "elfutils debuginfod is not installed"
	skip "elfutils debuginfod is not installed"
fi

# The loop guard: a request with X-Forwarded-For at the limit is answered
# from the index alone.
start_daemon fed4 --scan-dir "$FX" --upstream "$good_URL"
before=$(requests_to good '/metadata')
meta fed4 file "$FX/usr/bin/prog_c" \
    -H 'X-Forwarded-For: 1.1.1.1, 2.2.2.2, 3.3.3.3, 4.4.4.4, 5.5.5.5, 6.6.6.6, 7.7.7.7, 8.8.8.8'
is "$(count)" 2 "X-Forwarded-For at its limit: the index's results only"
is "$(complete)" True "... complete"
is "$(requests_to good '/metadata')" "$before" "... no upstream asked"

done_testing
