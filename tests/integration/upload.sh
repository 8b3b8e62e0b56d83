#!/bin/bash
# Uploads: PUT /buildid/ID/debuginfo|executable with an upload-scoped
# token, and dbgmirror upload.  Verified like a fill (ELF, the build-id of
# the path, .debug_* for debuginfo), size-limited, 409 on other bytes,
# idempotent on the same, negative entries of the id cleared, kept apart
# from the cache and removed by dbgmirror purge.  Judged against every
# source as a user meets them: a member of a real .deb never extracted,
# an elfutils debuginfod upstream; eight PUTs of one id at once, all
# judged before any is stored: exactly one is.
. "$top_srcdir/tests/integration/lib.sh"

client_env
tok() {
	"$DBGMIRROR" --no-config token "$1" --scopes "$2" >"$T/$1.out" ||
	    bail "dbgmirror token failed"
	sed -n 's/^token: //p' "$T/$1.out" >"$T/$1.token"
	sed -n 's/^line: //p' "$T/$1.out" >>"$T/tokens"
}
: >"$T/tokens"
tok ci upload
tok reader read
bearer() { echo "Authorization: Bearer $(cat "$T/$1.token")"; }

A=aaaa000000000000000000000000000000000001
B=bbbb000000000000000000000000000000000002
N=cccc000000000000000000000000000000000003
binA=$(mkbin "$A")
cp "$binA" "$T/A.unstripped"
binA2=$(mkbin "$A" 64) # same build-id, other bytes
binB=$(mkbin "$B")
binN=$(mkbin "$N")
objcopy --only-keep-debug "$binN" "$T/N.debug"
strip -o "$T/N.stripped" "$binN"
big=$(mkbin dddd000000000000000000000000000000000004 200000)
L=eeee000000000000000000000000000000000005
mkdir -p "$T/local"
cp "$(mkbin "$L")" "$T/local/L"
binL2=$(mkbin "$L" 32)

start_fake up
start_daemon d --upstream "$up_URL" --token-file "$T/tokens" \
    --max-upload-size 100K --negative-ttl 600 --scan-dir "$T/local"

# put URL FILE ARGS...: PUT FILE; the status, the body in $T/put.body,
# the head in $T/put.head.
put() {
	local url=$1 file=$2
	shift 2
	curl -s --max-time 30 -o "$T/put.body" -D "$T/put.head" \
	    -w '%{http_code}' -T "$file" "$@" "$url"
}

is "$(put "$d_URL/buildid/$A/debuginfo" "$T/A.unstripped")" 401 \
    "no token: 401"
is "$(put "$d_URL/buildid/$A/debuginfo" "$T/A.unstripped" \
    -H "$(bearer reader)")" 403 "a token without the upload scope: 403"
is "$(cat "$T/put.body")" "upload: the token has no upload scope" \
    "... saying why"
is "$(code "$d_URL/buildid/$A/debuginfo")" 404 "nothing was stored"

# A miss first: the upstream says 404, the negative entry is kept.
is "$(code "$d_URL/buildid/$N/executable")" 404 "N's executable: a miss"
"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" lookup "$N" >"$T/lk1"
grep -q "executable .*every upstream said not found" "$T/lk1"
ok $? "... remembered as a negative entry"

"$DBGMIRROR" --no-config upload --url "$d_URL" --token-file "$T/ci.token" \
    "$T/A.unstripped" "$T/N.debug" >"$T/up.out" 2>"$T/up.err"
ok $? "dbgmirror upload: exit 0" || sed 's/^/#   /' "$T/up.err"
grep -q "$A debuginfo: 201" "$T/up.out" && grep -q "$A executable: 201" "$T/up.out"
ok $? "an unstripped binary goes up as debuginfo and executable"
grep -q "$N debuginfo: 201" "$T/up.out" && ! grep -q "$N executable" "$T/up.out"
ok $? "a .debug file goes up as debuginfo only"
curl -s --max-time 10 -o "$T/got" "$d_URL/buildid/$A/debuginfo"
cmp -s "$T/got" "$T/A.unstripped"
ok $? "the upload is served byte-identical"
"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" lookup "$N" >"$T/lk2"
! grep -q "every upstream said not found" "$T/lk2"
ok $? "the upload cleared the id's negative entries (the executable's too)"
is "$(requests_to up "$N/debuginfo")" 1 \
    "the upstream was asked for N's debuginfo once: the upload's judgement"

is "$(put "$d_URL/buildid/$A/debuginfo" "$T/A.unstripped" \
    -H "$(bearer ci)")" 200 "the same bytes again: 200"
"$DBGMIRROR" --no-config upload --url "$d_URL" --token-file "$T/ci.token" \
    --json "$T/A.unstripped" >"$T/up.json"
is "$(python3 -c 'import json, sys; d = json.load(sys.stdin); print(*[(r["kind"], r["status"]) for r in d["results"]])' <"$T/up.json")" \
    "('debuginfo', 200) ('executable', 200)" "dbgmirror upload --json: each PUT's kind and status"
is "$(put "$d_URL/buildid/$A/debuginfo" "$binA2" -H "$(bearer ci)")" 409 \
    "other bytes under the same build-id: 409"
curl -s --max-time 10 -o "$T/got" "$d_URL/buildid/$A/debuginfo"
cmp -s "$T/got" "$T/A.unstripped"
ok $? "... and the stored bytes stay"

# A local file is served before the cache: it counts as what is there.
is "$(put "$d_URL/buildid/$L/executable" "$binL2" -H "$(bearer ci)")" 409 \
    "other bytes than a local file's: 409"
is "$(put "$d_URL/buildid/$L/executable" "$T/local/L" -H "$(bearer ci)")" 200 \
    "the local file's own bytes: 200"

head -c 5000 /dev/urandom >"$T/noise"
is "$(put "$d_URL/buildid/$B/debuginfo" "$T/noise" -H "$(bearer ci)")" 400 \
    "not ELF: 400"
is "$(cat "$T/put.body")" "refused: not ELF" "... saying why"
is "$(put "$d_URL/buildid/$B/executable" "$binA2" -H "$(bearer ci)")" 400 \
    "the build-id of another path: 400"
like "$(cat "$T/put.body")" "its build-id is $A" "... saying which it is"
is "$(put "$d_URL/buildid/$B/debuginfo" "$T/N.stripped" -H "$(bearer ci)")" 400 \
    "a stripped file as another id's debuginfo: 400"
strip -o "$T/B.stripped" "$binB"
is "$(put "$d_URL/buildid/$B/debuginfo" "$T/B.stripped" -H "$(bearer ci)")" 400 \
    "no .debug_* sections for debuginfo: 400"
is "$(cat "$T/put.body")" "refused: no .debug_* sections" "... saying why"
# A client that waits for 100 Continue (curl would wait 60 s, past
# put's 30 s limit, without it).
is "$(put "$d_URL/buildid/$B/executable" "$T/B.stripped" -H "$(bearer ci)" \
    -H "Expect: 100-continue" --expect100-timeout 60)" 201 \
    "... but it is an executable: 201 (after 100 Continue)"
is "$(put "$d_URL/buildid/dddd000000000000000000000000000000000004/debuginfo" \
    "$big" -H "$(bearer ci)")" 413 "over max-upload-size: 413"
is "$(put "$d_URL/buildid/$B/section/.text" "$T/B.stripped" \
    -H "$(bearer ci)")" 405 "only debuginfo and executable take a PUT"
ls "$T/d-cache/tmp" | grep -q . 
ok $((! $?)) "no temp file is left behind"

is "$(metric 'dbgmirror_uploads_total{result="created"}' "$d_URL")" 4 \
    "uploads are counted (4 created)"
lt 0 "$(metric 'dbgmirror_uploads_total{result="conflict"}' "$d_URL")"
ok $? "... and conflicts"
access_log_has d "\"PUT /buildid/$A/executable\" 201 "
ok $? "an upload is in the access log"

# Kept apart from the cache, in the upload directory, until purged.
ups=$(find "$T/d-uploads" -path '*/tmp' -prune -o -type f -print | wc -l)
is "$ups" 4 "the four uploads are files of upload-dir"
is "$(find "$T/d-cache/blobs" -type f | wc -l)" 0 "... none in the cache's"
cli() {
	"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" \
	    --upload-dir "$T/d-uploads" "$@"
}
cli stats >"$T/stats"
up_bytes=$(($(stat -c %s "$T/A.unstripped") * 2 + $(stat -c %s "$T/N.debug") + $(stat -c %s "$T/B.stripped")))
is "$(cli stats --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["upload_bytes"])')" \
    "$up_bytes" "dbgmirror stats --json: the uploads' exact bytes"
grep -q "^uploads: *[0-9.]* KiB in $T/d-uploads, kept apart" "$T/stats"
ok $? "dbgmirror stats counts the uploads apart ($up_bytes bytes)" ||
    sed 's/^/#   /' "$T/stats"
stop_daemon d
is "$STOP_RC" 0 "exits cleanly"
cli purge "$A" >/dev/null
ok $? "dbgmirror purge ID"
is "$(find "$T/d-uploads" -path '*/tmp' -prune -o -type f -print | wc -l)" 2 \
    "... removes its two files from upload-dir"
start_daemon d2 --cache-dir "$T/d-cache" --upstream "$up_URL" \
    --token-file "$T/tokens" --upload-dir "$T/d-uploads"
is "$(code "$d2_URL/buildid/$A/debuginfo")" 404 "the purged upload is gone"
curl -s --max-time 10 -o "$T/got" "$d2_URL/buildid/$B/executable"
cmp -s "$T/got" "$T/B.stripped"
ok $? "another upload survives a restart"
stop_daemon d2
is "$STOP_RC" 0 "exits cleanly"

# The cache directory cleared (rm -rf, systemctl clean): its index goes
# with it, the uploads stay and are indexed again from their files.
rm -rf "$T/d-cache"
start_daemon d3 --cache-dir "$T/d-cache" --upstream "$up_URL" \
    --token-file "$T/tokens" --upload-dir "$T/d-uploads"
like "$(cat "$d3_LOG")" "uploads: indexed again 2 files of $T/d-uploads" \
    "the uploads are indexed again at start-up"
curl -s --max-time 10 -o "$T/got" "$d3_URL/buildid/$B/executable"
cmp -s "$T/got" "$T/B.stripped"
ok $? "... and served byte-identical"
curl -s --max-time 10 -o "$T/got" "$d3_URL/buildid/$N/debuginfo"
cmp -s "$T/got" "$T/N.debug"
ok $? "... each of them"
is "$(requests_to up "$B/executable")" 1 \
    "... without asking the upstream (once, by the upload's judgement)"
stop_daemon d3
is "$STOP_RC" 0 "exits cleanly"

# ------------------------------------------- judged against every source

# A -dbgsym .deb of P's debug file in a scan-packages directory; an
# upstream whose answers wait for a gate.
P=aaaa000000000000000000000000000000000010
binP=$(mkbin "$P")
objcopy --only-keep-debug "$binP" "$T/P.debug"
cp "$(mkbin "$P" 48)" "$T/P2" # P's build-id, other bytes
pdir=$T/pdeb/usr/lib/debug/.build-id/${P:0:2}
mkdir -p "$T/pdeb/DEBIAN" "$pdir" "$T/jpkgs"
cp "$T/P.debug" "$pdir/${P:2}.debug"
printf 'Package: foo-dbgsym\nVersion: 1.0\nArchitecture: amd64\nMaintainer: T <t@example.org>\nDescription: fixture\n' \
    >"$T/pdeb/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$T/pdeb" \
    "$T/jpkgs/foo-dbgsym_1.0_amd64.deb" >/dev/null || bail "dpkg-deb failed"
touch "$T/gate"
start_fake gated --gate "$T/gate" '*=status:404'
start_daemon j --upstream "$gated_URL" --token-file "$T/tokens" \
    --scan-packages "$T/jpkgs"

is "$(put "$j_URL/buildid/$P/debuginfo" "$T/P2" -H "$(bearer ci)")" 409 \
    "other bytes than a .deb's member, never extracted: 409"
is "$(cat "$T/put.body")" \
    "$P: other bytes are served under this build-id, from package foo-dbgsym_1.0_amd64.deb" \
    "... naming the package"
dfind j debuginfo "$P"
ok $? "debuginfod-find of the id: exit 0"
cmp -s "$FOUND" "$T/P.debug"
ok $? "... the package's bytes"
is "$(put "$j_URL/buildid/$P/debuginfo" "$T/P.debug" -H "$(bearer ci)")" 200 \
    "the member's own bytes: 200"
is "$(requests_to gated "$P")" 0 "... the upstream never asked: the package has it"

# herd_put ID FILE...: a PUT of each FILE as ID's debuginfo, all at once
# (background jobs), the gate shut: every judgement waits for the one
# upstream fill, so that all are judged before any is stored.  Their
# statuses in $T/herd/N.code, N the place of the FILE.
waiters() {
	[ "$(metric dbgmirror_fill_waiters "$j_URL")" = "$1" ]
}
herd_put() {
	local id=$1 i=0 f
	local -a pids=()
	shift
	rm -rf "$T/herd" "$T/gate"
	mkdir -p "$T/herd"
	for f in "$@"; do
		i=$((i + 1))
		curl -s --max-time 90 -o "$T/herd/$i.body" -w '%{http_code}' \
		    -T "$f" -H "$(bearer ci)" "$j_URL/buildid/$id/debuginfo" \
		    >"$T/herd/$i.code" &
		pids+=($!)
	done
	wait_until 60 waiters "$#" ||
	    diag "not all $# uploads of $id wait for the upstream's answer"
	touch "$T/gate"
	wait "${pids[@]}"
}
# count CODE: the herd's PUTs answered CODE.
count() {
	grep -lx "$1" "$T"/herd/*.code | wc -l
}
for r in 1 2 3; do
	H=bbbb00000000000000000000000000000000000$r
	files=()
	for i in 1 2 3 4 5 6 7 8; do
		cp "$(mkbin "$H" $((i * 16)))" "$T/h$r-$i"
		files+=("$T/h$r-$i")
	done
	herd_put "$H" "${files[@]}"
	is "$(count 201) $(count 409)" "1 7" \
	    "round $r: eight uploads of other bytes at once: one 201, seven 409" ||
	    cat "$T"/herd/*.body | sed 's/^/#   /'
	w=$(grep -lx 201 "$T"/herd/*.code | head -n 1)
	w=$(basename "${w:-0.code}" .code)
	curl -s --max-time 10 -o "$T/got" "$j_URL/buildid/$H/debuginfo"
	cmp -s "$T/got" "$T/h$r-$w"
	ok $? "... the 201's bytes are served"
done
H=bbbb000000000000000000000000000000000009
cp "$(mkbin "$H")" "$T/same"
herd_put "$H" "$T/same" "$T/same" "$T/same" "$T/same" "$T/same" "$T/same" \
    "$T/same" "$T/same"
is "$(count 201) $(count 200)" "1 7" \
    "eight uploads of the same bytes at once: one 201, seven 200"
stop_daemon j
is "$STOP_RC" 0 "exits cleanly"

# An elfutils debuginfod upstream that serves the id.
Q=aaaa000000000000000000000000000000000020
mkdir -p "$T/dfd"
cp "$(mkbin "$Q")" "$T/dfd/q"
cp "$(mkbin "$Q" 80)" "$T/Q2"
start_debuginfod du -F "$T/dfd"
wait_until 60 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$du_URL/buildid/$Q/debuginfo')\" = 200 ]" ||
    bail "debuginfod did not index $T/dfd"
start_daemon k --upstream "$du_URL" --token-file "$T/tokens"
is "$(put "$k_URL/buildid/$Q/debuginfo" "$T/Q2" -H "$(bearer ci)")" 409 \
    "other bytes than an elfutils debuginfod upstream's: 409"
like "$(cat "$T/put.body")" "from upstream http://127\.0\.0\.1:$du_PORT" \
    "... naming the upstream"
dfind k debuginfo "$Q"
ok $? "debuginfod-find of the id: exit 0"
cmp -s "$FOUND" "$T/dfd/q"
ok $? "... the upstream's bytes"
is "$(put "$k_URL/buildid/$Q/debuginfo" "$T/dfd/q" -H "$(bearer ci)")" 200 \
    "the upstream's own bytes: 200"
stop_daemon k
is "$STOP_RC" 0 "exits cleanly"

# ------------------------------------------ sources that cannot answer

# An upstream that is down (nothing listens on its port) beside one that
# says not found: the upload cannot be judged, nothing is stored.
dead=$(pick_port)
start_daemon u --upstream "$up_URL" --upstream "http://127.0.0.1:$dead" \
    --token-file "$T/tokens" --upstream-retries 0 --breaker-failures 1 \
    --breaker-backoff 3600 --breaker-backoff-max 7200
U=cccc000000000000000000000000000000000030
cp "$(mkbin "$U")" "$T/U"
is "$(put "$u_URL/buildid/$U/debuginfo" "$T/U" -H "$(bearer ci)")" 503 \
    "an upstream down: 503"
like "$(cat "$T/put.body")" "^$U: cannot be judged now: the upstreams did not answer" \
    "... naming the upstreams"
[ -n "$(header Retry-After "$T/put.head")" ]
ok $? "... with Retry-After"
wait_until 10 grep -q "upstream http://127.0.0.1:$dead: breaker open" "$u_LOG"
ok $? "its breaker opens"
is "$(put "$u_URL/buildid/$U/debuginfo" "$T/U" -H "$(bearer ci)")" 503 \
    "the other upstream says not found, this one is not asked: 503"
is "$(cat "$T/put.body")" \
    "$U: cannot be judged now: upstream http://127.0.0.1:$dead: its breaker is open" \
    "... naming it"
is "$(find "$T/u-uploads" -path '*/tmp' -prune -o -type f -print | wc -l)" 0 \
    "... nothing stored"
is "$(metric 'dbgmirror_uploads_total{result="unjudged"}' "$u_URL")" 2 \
    "... counted as unjudged"
stop_daemon u
is "$STOP_RC" 0 "exits cleanly"

# A repository never indexed (its server is down) may map the id.
start_daemon r --repo "deb http://127.0.0.1:$dead/debian stable main" \
    --token-file "$T/tokens" --repo-ready-timeout 0
is "$(put "$r_URL/buildid/$U/debuginfo" "$T/U" -H "$(bearer ci)")" 503 \
    "a repository never indexed: 503"
like "$(cat "$T/put.body")" "cannot be judged now: repository http://127.0.0.1:$dead/debian.*not indexed yet" \
    "... naming it"
stop_daemon r
is "$STOP_RC" 0 "exits cleanly"

# No token-file, no uploads: the upload directory is not made.
start_daemon d4 --upload-dir "$T/d4-never"
ok "$([ ! -e "$T/d4-never" ]; echo $?)" "without token-file no upload-dir is made"
stop_daemon d4
done_testing
