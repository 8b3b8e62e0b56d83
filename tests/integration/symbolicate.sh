#!/bin/bash
# tests/integration/symbolicate.sh: POST /symbolicate and GET
# /buildid/ID/symbolicate on the real daemon, against eu-addr2line -f -i
# -C on programs compiled here (tests/fixtures/sym, as symbolize.sh builds
# them): C at -O2 with inlines, C++, the two through a dwz -m alt file,
# and an executable stripped of its DWARF (.symtab and .dynsym alone),
# each served as a split debug file and its executable from a scanned
# directory (tests/symserver.py asks and compares); the addresses as
# virtual addresses, file offsets (through the executable's program
# headers) and process addresses, as return addresses, through GET.
# Then a missing module and a module in error beside a good one; every
# bad input of the contract refused with 400 and a reason, starting
# nothing (no request upstream); a cold module behind a slow upstream
# (tests/fakeupstream --delay): pending with a Retry-After, then ok; a herd
# of 100 cold requests: one debuginfo request upstream, one build; the
# metrics and the access log; the access class symbolicate.
. "$top_srcdir/tests/integration/lib.sh"

FXS=$top_srcdir/tests/fixtures/sym
for tool in gcc g++ dwz objcopy strip eu-addr2line llvm-dwarfdump-14 \
    python3 curl; do
	command -v "$tool" >/dev/null || bail "$tool is not installed"
done
cd "$T" || bail "no test directory"

# ------------------------------------------------------------ programs

mkdir -p served
build() {
	gcc -O2 -g -o c_prog "$FXS/c_main.c" "$FXS/c_lib.c" &&
	    g++ -O2 -g -o cxx_prog "$FXS/cxx_main.cc" "$FXS/cxx_lib.cc" &&
	    g++ -O1 -g -o cxx_o1 "$FXS/cxx_main.cc" "$FXS/cxx_lib.cc" &&
	    for p in c_prog cxx_prog; do
		objcopy --only-keep-debug --compress-debug-sections=zlib \
		    "$p" "served/$p.debug" &&
		    objcopy --strip-all "$p" "served/$p.exe" || return 1
	    done &&
	    # The dwz'd pair: debug files of other builds, one alt file.
	    gcc -O1 -g -o c_dz "$FXS/c_main.c" "$FXS/c_lib.c" &&
	    g++ -O2 -g -fno-inline -o cxx_dz "$FXS/cxx_main.cc" \
		"$FXS/cxx_lib.cc" &&
	    mkdir -p dwz && objcopy --only-keep-debug c_dz dwz/c_dz.debug &&
	    objcopy --only-keep-debug cxx_dz dwz/cxx_dz.debug &&
	    objcopy --only-keep-debug cxx_o1 dwz/cxx_o1.debug &&
	    (cd dwz && dwz -m alt.debug -M alt.debug c_dz.debug cxx_dz.debug \
		cxx_o1.debug) &&
	    cp dwz/c_dz.debug dwz/cxx_dz.debug dwz/alt.debug served/ &&
	    objcopy --strip-all c_dz served/c_dz.exe &&
	    objcopy --strip-all cxx_dz served/cxx_dz.exe &&
	    # Symbols alone: no DWARF anywhere, .symtab and .dynsym kept.
	    strip -g -o served/c_sym c_prog
}
build >build.log 2>&1 || { cat build.log; bail "the programs did not build"; }
id_of() {
	readelf -n "$1" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p'
}
C=$(id_of c_prog)
CXX=$(id_of cxx_prog)
CDZ=$(id_of c_dz)
CXXDZ=$(id_of cxx_dz)
CSYM=$C
readelf -S served/c_dz.debug 2>/dev/null | grep -q gnu_debugaltlink
ok $? "c_dz.debug links to a dwz alt file"

# The served copies of c_sym and c_prog share a build-id: c_sym is asked
# of a daemon of its own.
mkdir -p symonly && mv served/c_sym symonly/
start_daemon D --scan-dir "$T/served"
start_daemon S --scan-dir "$T/symonly"

# compare NAME URL ID DEBUG EXE ARGS...: tests/symserver.py.
compare() {
	local name=$1 url=$2 id=$3 debug=$4 exe=$5 out
	shift 5
	out=$(python3 "$top_srcdir/tests/symserver.py" --url "$url" \
	    --build-id "$id" --debug "$debug" --exe "$exe" --name "$name" \
	    "$@" 2>&1)
	ok $? "$name: as eu-addr2line -f -i -C says" ||
	    printf '%s\n' "$out" | cut -c1-400 | sed 's/^/#   /'
	diag "$(printf '%s\n' "$out" | head -n 1)"
}

compare "C -O2, va" "$D_URL" "$C" c_prog served/c_prog.exe
compare "C -O2, file offsets" "$D_URL" "$C" c_prog served/c_prog.exe \
    --mode file_offset
compare "C -O2, process addresses" "$D_URL" "$C" c_prog \
    served/c_prog.exe --mode abs
compare "C -O2, return addresses" "$D_URL" "$C" c_prog served/c_prog.exe \
    --return
compare "C -O2, GET" "$D_URL" "$C" c_prog served/c_prog.exe --get \
    --mode file_offset --return
compare "C++ -O2" "$D_URL" "$CXX" cxx_prog served/cxx_prog.exe \
    --mode file_offset
compare "C++ -O2, GET" "$D_URL" "$CXX" cxx_prog served/cxx_prog.exe --get
# eu-addr2line finds the alt file beside the debug file, as the link
# names it.
compare "C, dwz" "$D_URL" "$CDZ" dwz/c_dz.debug served/c_dz.exe \
    --mode file_offset
compare "C++, dwz" "$D_URL" "$CXXDZ" dwz/cxx_dz.debug served/cxx_dz.exe
compare "symbols alone" "$S_URL" "$CSYM" symonly/c_sym symonly/c_sym \
    --symbols --mode file_offset

# The tables' sources, and the alt file, as the answers say them.
post() {
	curl -s -D "$T/post.head" --max-time 120 -H 'Content-Type: application/json' \
	    --data-binary "$1" "${2:-$D_URL}/symbolicate"
}
ans=$(post "{\"modules\":[{\"build_id\":\"$CDZ\"}],\"frames\":[]}")
ALT=$(id_of dwz/alt.debug)
like "$ans" "\"source\":\"debuginfo\",\"alt\":\"$ALT\"" \
    "a dwz'd module names its alt file"
ans=$(post "{\"modules\":[{\"build_id\":\"$CSYM\"}],\"frames\":[]}" "$S_URL")
like "$ans" '"source":"executable_symtab"' \
    "symbols alone: from the executable's .symtab"

# ------------------------------------------------ missing, error, order

start_fake F "deadbeefdeadbeefdeadbeefdeadbeefdeadbeef=status:500"
start_daemon E --scan-dir "$T/served" --upstream "$F_URL" --error-ttl 60
FUNC=$(nm c_prog | awk '$3 == "main" { print $1; exit }')
BAD=deadbeefdeadbeefdeadbeefdeadbeefdeadbeef
NONE=0123456789abcdef0123456789abcdef01234567
ans=$(post "{\"modules\":[{\"build_id\":\"$NONE\"},{\"build_id\":\"$C\"},
    {\"build_id\":\"$BAD\"}],\"frames\":[{\"module\":1,\"addr\":\"0x$FUNC\"},
    {\"module\":0,\"addr\":\"0x10\"},{\"module\":2,\"addr\":\"0x20\"},
    {\"module\":1,\"addr\":\"0x$FUNC\"}]}" "$E_URL")
printf '%s' "$ans" >mixed.json
out=$(python3 - mixed.json <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))
print(" ".join(m["status"] for m in a["modules"]), "|",
      " ".join(f["status"] for f in a["frames"]), "|",
      "reason" if a["modules"][2].get("reason") else "no reason")
EOF
)
is "$out" "missing ok error | ok missing error ok | reason" \
    "missing and error modules beside a good one: every frame, in order"
[ -z "$(header Retry-After post.head)" ]
ok $? "... no Retry-After: nothing is pending"

# -------------------------------------------------------- bad requests

start_fake G "*=ok:$T/c_prog"
start_daemon B --upstream "$G_URL" --symbolicate-max-frames 4 \
    --symbolicate-max-modules 2 --symbolicate-max-body 2048
COLD=$C
good="{\"modules\":[{\"build_id\":\"$COLD\"}],\"frames\":[{\"module\":0,\"addr\":\"0x1\"}]}"
big=$(head -c 3000 /dev/zero | tr '\0' ' ')
n=0
badreq() {
	local what=$1 body=$2 out status
	n=$((n + 1))
	status=$(curl -s -o "$T/bad$n" -w '%{http_code}' --max-time 10 \
	    --data-binary "$body" "$B_URL/symbolicate")
	out=$(cat "$T/bad$n")
	is "$status $(wc -l <"$T/bad$n")" "400 1" \
	    "$what: 400 with one line" || diag "$out"
	[ -n "$3" ] && like "$out" "$3" "... $3"
}
badreq "malformed JSON" "{\"modules\":[{\"build_id\":\"$COLD\"}" "malformed|JSON|end"
badreq "a wrong type" "{\"modules\":{},\"frames\":[]}" "modules"
badreq "more frames than symbolicate-max-frames" \
    "{\"modules\":[{\"build_id\":\"$COLD\"}],\"frames\":[{\"module\":0,\"addr\":1},{\"module\":0,\"addr\":2},{\"module\":0,\"addr\":3},{\"module\":0,\"addr\":4},{\"module\":0,\"addr\":5}]}" \
    "more than 4"
badreq "more modules than symbolicate-max-modules" \
    "{\"modules\":[{\"build_id\":\"$COLD\"},{\"build_id\":\"$COLD\"},{\"build_id\":\"$COLD\"}],\"frames\":[]}" \
    "more than 2"
badreq "a body over symbolicate-max-body" "{\"modules\":[],$big\"frames\":[]}" \
    "symbolicate-max-body"
badreq "a bad build-id" "{\"modules\":[{\"build_id\":\"xyz\"}],\"frames\":[]}" \
    "build_id"
badreq "an address beyond 64 bits" \
    "{\"modules\":[{\"build_id\":\"$COLD\"}],\"frames\":[{\"module\":0,\"addr\":\"0x10000000000000000\"}]}" \
    "64 bits"
badreq "a module out of range" \
    "{\"modules\":[{\"build_id\":\"$COLD\"}],\"frames\":[{\"module\":3,\"addr\":1}]}" \
    "module"
badreq "an unknown addr_mode" \
    "{\"modules\":[{\"build_id\":\"$COLD\",\"addr_mode\":\"phys\"}],\"frames\":[]}" \
    "addr_mode"
badreq "abs without its mapping" \
    "{\"modules\":[{\"build_id\":\"$COLD\",\"addr_mode\":\"abs\"}],\"frames\":[]}" \
    "start|file_offset"
out=$(curl -s -w ' %{http_code}' "$B_URL/buildid/$COLD/symbolicate?addr=0x1,zz")
like "$out" "400$" "GET: a bad address: 400"
out=$(curl -s -w ' %{http_code}' "$B_URL/buildid/$COLD/symbolicate?addr=0x1&bogus=1")
like "$out" "400$" "GET: an unknown parameter: 400"
is "$(code "$B_URL/symbolicate")" 405 "GET /symbolicate: 405"
is "$(code "$B_URL/buildid/$COLD/symtab")" 400 "/buildid/ID/symtab is not served"
is "$(requests_to G "/buildid/")" 0 "no bad request asked the upstream anything"
is "$(metric 'dbgmirror_symbolicate_requests_total{result="bad"}' "$B_URL")" \
    12 "... each counted bad"
access_log_has B '"POST /symbolicate" 400 .* BAD symbolicate '
ok $? "... and logged so"

# ------------------------------------------------------- cold and slow

start_fake SLOW --delay 3000 "*=ok:$T/c_prog"
start_daemon P --upstream "$SLOW_URL"
body="{\"modules\":[{\"build_id\":\"$C\"}],\"frames\":[{\"module\":0,\"addr\":\"0x$FUNC\"}],\"options\":{\"timeout_ms\":100}}"
ans=$(post "$body" "$P_URL")
like "$ans" '"modules":\[\{[^]]*"status":"pending"' \
    "a cold module behind a slow upstream: pending"
like "$ans" '"frames":\[\{"status":"pending"' "... its frame too"
is "$(header Retry-After post.head)" 1 "... with Retry-After: 1"
pending_gone() {
	post "$body" "$P_URL" | grep -q '"frames":\[{"status":"ok"'
}
wait_until 60 pending_gone
ok $? "asked again: ok, once fetched and built"
access_log_has P '"POST /symbolicate" 200 .* PENDING symbolicate:frames=1,modules=1 '
ok $? "the access log says pending, with frames and modules"
access_log_has P '"POST /symbolicate" 200 .* OK symbolicate:frames=1,modules=1 '
ok $? "... then ok"

# A herd of 100 cold requests, another id, behind an upstream.
HERD_ID=$(printf 'ab%.0s' $(seq 1 20))
HB=$(mkbin "$HERD_ID")
start_fake H --delay 500 "$HERD_ID=ok:$HB"
start_daemon Q --upstream "$H_URL"
HF=$(nm "$HB" | awk '$3 == "main" { print $1 }')
# One operation each (next): -d within one operation would join bodies.
for i in $(seq 1 100); do
	[ "$i" -gt 1 ] && echo next
	printf 'url = "%s/symbolicate"\ndata-binary = "@%s"\noutput = "%s"\nmax-time = 90\nwrite-out = "%%{http_code}\\n"\n' \
	    "$Q_URL" "$T/herd.json" "$T/herd-$i.out"
done >herd.conf
printf '{"modules":[{"build_id":"%s"}],"frames":[{"module":0,"addr":"0x%s"}],"options":{"timeout_ms":30000}}' \
    "$HERD_ID" "$HF" >herd.json
curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 100 \
    -K herd.conf >herd.codes
is "$(sort -u herd.codes | tr '\n' ' ')" "200 " "a herd of 100 cold requests: 200 each"
is "$(cat herd-*.out | grep -c '"frames":\[{"status":"ok"')" 100 "... every one answered ok"
is "$(requests_to H "/buildid/$HERD_ID/debuginfo")" 1 "... one debuginfo request upstream"
is "$(requests_to H "/buildid/$HERD_ID/")" 1 "... and nothing else (an unstripped file)"
is "$(metric 'dbgmirror_symtab_build_seconds_count{result="ok"}' "$Q_URL")" 1 \
    "... one build"
is "$(metric 'dbgmirror_symbolicate_requests_total{result="ok"}' "$Q_URL")" 100 \
    "... counted: 100 requests ok"
is "$(metric 'dbgmirror_symbolicate_frames_total{status="ok"}' "$Q_URL")" 100 \
    "... 100 frames ok"
# Warm: the open table, nothing read.
h0=$(metric 'dbgmirror_symtab_hits_total{where="open"}' "$Q_URL")
post "$(cat herd.json)" "$Q_URL" >/dev/null
is "$(metric 'dbgmirror_symtab_hits_total{where="open"}' "$Q_URL")" \
    $((h0 + 1)) "warm: a hit on the open table"
# Purged: taken from nowhere but the upstream again.
curl -s -X POST "$Q_URL/admin/purge?id=$HERD_ID" >/dev/null
post "$(cat herd.json)" "$Q_URL" | grep -q '"status":"ok"'
ok $? "after a purge of the id: ok again"
is "$(metric 'dbgmirror_symtab_build_seconds_count{result="ok"}' "$Q_URL")" 2 \
    "... built again: the purge closed the open table"

# ------------------------------------------------------- access class

start_daemon A --scan-dir "$T/served" --access 'symbolicate addr=10.0.0.0/8'
is "$(code "$A_URL/buildid/$C/symbolicate?addr=0x1")" 403 \
    "access = symbolicate addr=...: 403 elsewhere"
is "$(code "$A_URL/buildid/$C/debuginfo")" 200 "... read is not touched"
start_daemon R --scan-dir "$T/served" --access 'read addr=10.0.0.0/8'
is "$(code "$R_URL/buildid/$C/symbolicate?addr=0x1")" 403 \
    "no symbolicate line: as read (here closed)"
is "$(curl -s -o /dev/null -w '%{http_code}' --data-binary "$good" "$R_URL/symbolicate")" \
    403 "... POST too"
done_testing
