#!/bin/bash
# tests/integration/symcli.sh: dbgmirror symbolicate against the real
# daemon, on programs compiled here (C and C++ at -O2, a C program built
# without PIE, a small hot loop for perf), split into stripped executables
# and compressed debug files the daemon scans.  Its lines are compared
# with eu-addr2line -f -i -C's for addresses spread over every function
# (tests/symcompare.py's known differences of eu-addr2line 0.188 aside,
# each checked against llvm-symbolizer and the DWARF); standard input,
# an ELF file for the build-id, --json against the daemon's own answer,
# the address modes, --return, --no-demangle, requests cut at
# symbolicate-max-frames, a module pending until --timeout-ms, exit codes
# and bad usage refused before anything is sent; and --perf-script on
# perf script's text made here (callchains, samples with mmap events,
# -F +dsoff, perf buildid-list) and on a real perf record when perf can
# record on this machine.
. "$top_srcdir/tests/integration/lib.sh"

SYMTOOL=$top_builddir/tests/symtool
FAKE=$top_builddir/tests/fakeupstream
FX=$top_srcdir/tests/fixtures/sym
SAMPLES=${SYMCLI_SAMPLES:-800}

for tool in gcc g++ objcopy readelf eu-addr2line llvm-symbolizer-14 \
    llvm-dwarfdump-14 python3 curl perf; do
	command -v "$tool" >/dev/null || bail "$tool is not installed"
done
[ -x "$SYMTOOL" ] || bail "$SYMTOOL is not built"

cd "$T" || bail "no test directory"
mkdir -p serve gated
export top_srcdir

# build NAME COMPILER ARGS...: NAME compiled, then split as distributions
# ship it: serve/NAME.debug (compressed DWARF) and serve/NAME (stripped).
build() {
	local name=$1
	shift
	"$@" -o "$name" >"$name.log" 2>&1 &&
	    objcopy --only-keep-debug --compress-debug-sections=zlib "$name" \
		"serve/$name.debug" &&
	    objcopy --strip-all "$name" "serve/$name"
}
build c_prog gcc -O2 -g "$FX/c_main.c" "$FX/c_lib.c"
ok $? "C program built and split"
build cxx_prog g++ -O2 -g "$FX/cxx_main.cc" "$FX/cxx_lib.cc"
ok $? "C++ program built and split"
build c_nopie gcc -O2 -g -fno-pie -no-pie "$FX/c_main.c" "$FX/c_lib.c"
ok $? "C program built without PIE and split"
build hot gcc -O2 -g -fno-omit-frame-pointer "$FX/perf_hot.c"
ok $? "the perf program built and split"

id_of() {
	readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'
}

# fn_addr FILE NAME [PLUS]: the address of function NAME of FILE, plus
# PLUS bytes, in hex.
fn_addr() {
	local v
	v=$(readelf -sW "$1" | awk -v n="$2" '$4 == "FUNC" && $8 == n {
	    print $2; exit }')
	[ -n "$v" ] && printf '%x' $((0x$v + ${3:-0}))
}
ID_C=$(id_of c_prog)
ID_CXX=$(id_of cxx_prog)
ID_NOPIE=$(id_of c_nopie)
ID_HOT=$(id_of hot)
UNKNOWN=0123456789abcdef0123456789abcdef01234567

start_daemon d --scan-dir "$T/serve"
URL=$d_URL
SYM=("$DBGMIRROR" --no-config symbolicate --url "$URL")

# posts: the /symbolicate requests the daemon answered (its /metrics,
# counted before each answer goes out).
posts() {
	curl -s --max-time 10 "$URL/metrics" | awk '
	    $1 ~ /^dbgmirror_symbolicate_requests_total[{]/ { s += $2 }
	    END { print s + 0 }'
}

# ---------------------------------------------------------- eu-addr2line

# The comparison: addresses of every function (symcompare.py's sample),
# dbgmirror symbolicate's lines cut per address by the frame counts of
# its --json, eu-addr2line -a -f -i -C's per address; a difference must
# be one symcompare.py explains (it compares a table symtool builds from
# the same files with eu-addr2line, and classifies with llvm-symbolizer
# and the DWARF), or be in columns only: eu-addr2line 0.188 takes its -i
# chain at the start of the address's line row (symcompare.py's
# eu_row_start), and when two inlined calls share a line (dist2's two
# sq() calls) the call site it prints for the caller can be the other
# one's column.  Prints "ADDRESSES SAME COLUMNS EXPLAINED UNEXPLAINED" and
# the first unexplained ones.
cat >compare.py <<'EOF'
import json, os, re, subprocess, sys
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests"))
import symcompare

cli, url, bid, debug, exe, n = sys.argv[1:7]
symtool = os.path.join(os.environ["top_builddir"], "tests", "symtool")
addrs = symcompare.sample(symcompare.functions(debug), int(n), 1)
inp = "".join("%x\n" % a for a in addrs)

eu, cur = {}, None
out = subprocess.run(["eu-addr2line", "-a", "-f", "-i", "-C", "-e", debug],
                     input=inp, capture_output=True, text=True).stdout
for line in out.splitlines():
    if re.fullmatch(r"0x[0-9a-f]{16}", line):
        cur = int(line, 16)
        eu[cur] = []
    else:
        eu[cur].append(line)

base = [cli, "--no-config", "symbolicate", "--url", url, bid]
text = subprocess.run(base, input=inp, capture_output=True, text=True)
js = subprocess.run(base + ["--json"], input=inp, capture_output=True,
                    text=True)
if text.returncode != 0 or js.returncode != 0:
    sys.exit("dbgmirror symbolicate failed: %s %s" % (text.stderr,
                                                      js.stderr))
frames = json.loads(js.stdout)["frames"]
lines, ours, i = text.stdout.splitlines(), {}, 0
for a, f in zip(addrs, frames):
    k = 2 * max(1, len(f.get("frames") or []))
    ours[a] = lines[i:i + k]
    i += k

table = debug + ".tbl"
subprocess.run([symtool, "build", table, debug, "-", exe, "."], check=True,
               capture_output=True)
res = subprocess.run([sys.executable, os.path.join(
    os.environ["top_srcdir"], "tests", "symcompare.py"), "--symtool",
    symtool, "--table", table, "--debug", debug, "--samples", n,
    "--seed", "1", "--show", "1000000", "--json", debug + ".json"],
    capture_output=True, text=True)
with open(debug + ".json") as f:
    examples = json.load(f)["examples"]
explained = {int(x["addr"], 16) for c, xs in examples.items()
             if c != "unexplained" for x in xs}


def nocol(block):
    return [re.sub(r":(\d+):\d+$", r":\1", re.sub(
        r"( at .*:\d+):\d+( in )", r"\1\2", l)) for l in block]


same = cols = expl = 0
bad = []
for a in addrs:
    if eu.get(a) == ours.get(a):
        same += 1
    elif nocol(eu.get(a) or []) == nocol(ours.get(a) or []):
        cols += 1
    elif a in explained:
        expl += 1
    else:
        bad.append(a)
print(len(addrs), same, cols, expl, len(bad))
for a in bad[:3]:
    print("#   0x%x eu %s ours %s" % (a, eu.get(a), ours.get(a)))
EOF
for p in c_prog:$ID_C cxx_prog:$ID_CXX; do
	name=${p%%:*} id=${p#*:}
	out=$(top_builddir=$top_builddir python3 compare.py "$DBGMIRROR" "$URL" \
	    "$id" "serve/$name.debug" "serve/$name" "$SAMPLES" 2>&1)
	read -r total same cols expl bad <<<"$(head -n 1 <<<"$out")"
	diag "$name: $total addresses: $same as eu-addr2line prints them, $cols but for columns, $expl explained differences"
	[ "${bad:-1}" = 0 ]
	ok $? "$name: every address as eu-addr2line -f -i -C prints it, or a known difference" ||
	    printf '%s\n' "$out" | tail -n +2 | head -n 8 | sed 's/^/# /'
	[ "${total:-0}" -ge 100 ] && [ "$((same * 2))" -ge "${total:-0}" ]
	ok $? "$name: most addresses ($same of $total) print exactly the same"
done

# ---------------------------------------------------------- the command

# Addresses of the C program's functions (entries and a byte within).
A1=$(fn_addr serve/c_prog.debug farthest 4)
A2=$(fn_addr serve/c_prog.debug checksum 4)
A3=$(fn_addr serve/c_prog.debug main 4)
[ -n "$A1" ] && [ -n "$A2" ] && [ -n "$A3" ]
ok $? "three functions of the C program found"

out=$("${SYM[@]}" "$ID_C" "$A1" "0x$A2" "$A3")
ok $? "addresses as arguments: exit status 0"
is "$out" "$(eu-addr2line -f -i -C -e serve/c_prog.debug "0x$A1" "0x$A2" \
    "0x$A3")" "as eu-addr2line -f -i -C prints them"
is "$(printf '%s\n\n0x%s\n %s \n' "$A1" "$A2" "$A3" | "${SYM[@]}" "$ID_C")" \
    "$out" "the same from standard input (blank lines skipped)"
is "$("${SYM[@]}" serve/c_prog "$A1" "0x$A2" "$A3")" "$out" \
    "an ELF file names its build-id"
is "$("${SYM[@]}" serve/c_prog.debug "$A1" "0x$A2" "$A3")" "$out" \
    "its debug file too"

# --json: the daemon's own answer to the request the command sends.
body="{\"modules\":[{\"build_id\":\"$ID_C\",\"addr_mode\":\"va\"}],\"frames\":[{\"module\":0,\"addr\":\"0x$A1\"},{\"module\":0,\"addr\":\"0x$A2\"}],\"options\":{\"demangle\":true,\"timeout_ms\":60000}}"
is "$("${SYM[@]}" --json "$ID_C" "$A1" "$A2")" \
    "$(curl -s --max-time 60 -H 'Content-Type: application/json' \
	--data-binary "$body" "$URL/symbolicate")" \
    "--json: the daemon's answer"

# --return: the call before each address.
is "$("${SYM[@]}" --return "$ID_C" "$A1" "$A2")" \
    "$("${SYM[@]}" "$ID_C" "$(printf %x $((0x$A1 - 1)))" \
	"$(printf %x $((0x$A2 - 1)))")" \
    "--return looks up the byte before each address"

# The modes, on the program without PIE: its text is at 0x401000 in
# memory and 0x1000 in the file.
va=$(fn_addr serve/c_nopie.debug main 3)
read -r seg_off seg_va <<<"$(readelf -lW serve/c_nopie |
    awk '$1 == "LOAD" && / R E / { print $2, $3 }')"
file_off=$(printf %x $((0x$va - seg_va + seg_off)))
want=$("${SYM[@]}" "$ID_NOPIE" "$va")
like "$want" '^main' "va: the function of a virtual address"
[ "$file_off" != "$va" ]
ok $? "the program's file offsets are not its addresses ($file_off, $va)"
is "$("${SYM[@]}" --mode file_offset "$ID_NOPIE" "$file_off")" "$want" \
    "--mode file_offset: the same place from its offset in the file"
is "$("${SYM[@]}" --mode abs --start 7f0000000000 --file-offset "$seg_off" \
    "$ID_NOPIE" "$(printf %x $((0x7f0000000000 + 0x$file_off - seg_off)))")" \
    "$want" "--mode abs: the same place in a process's mapping"

# Demangling: the C++ program's functions, each at its first byte.
readelf -sW serve/cxx_prog.debug | awk '$4 == "FUNC" && $3 > 0 &&
    $8 ~ /^_Z/ { print $2 }' >cxx_fns
[ -s cxx_fns ]
ok $? "C++ functions found"
out=$("${SYM[@]}" "$ID_CXX" <cxx_fns)
like "$out" '\(' "C++ names demangled"
ok "$(grep -c '_Z' <<<"$out")" "no mangled name left"
like "$("${SYM[@]}" --no-demangle "$ID_CXX" <cxx_fns)" '^_Z' \
    "--no-demangle: raw names"

# Requests cut at symbolicate-max-frames: 20 addresses, 7 a request.
for i in $(seq 0 19); do
	printf '%x\n' $((0x$A1 + i))
done >addrs20
one=$("${SYM[@]}" "$ID_C" <addrs20)
before=$(posts)
cut=$("$DBGMIRROR" --no-config --symbolicate-max-frames 7 symbolicate \
    --url "$URL" "$ID_C" <addrs20)
ok $? "20 addresses in requests of 7: exit status 0"
is "$cut" "$one" "the same lines as in one request"
is "$(($(posts) - before))" 3 "three requests sent"
joined=$("$DBGMIRROR" --no-config --symbolicate-max-frames 7 symbolicate \
    --url "$URL" --json "$ID_C" <addrs20)
is "$(python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["modules"]), len(d["frames"]), d["frames"][19]["addr"])' <<<"$joined")" \
    "1 20 0x$(tail -n 1 addrs20)" "--json joins the three answers in order"

# Unknown build-ids: an answer, not a failure of the command.
out=$("${SYM[@]}" "$UNKNOWN" 1234 2>err)
is "$?" 1 "a build-id no source has: exit status 1"
is "$out" $'??\n??:0' "printed as unknown"
like "$(cat err)" "$UNKNOWN: missing" "and said on standard error"

# Bad usage, refused before anything is sent.
before=$(posts)
bad_usage() {
	local what=$1
	shift
	"${SYM[@]}" "$@" >/dev/null 2>err
	is "$?" 2 "$what: exit status 2" && like "$(cat err)" "$EXPECT" \
	    "$what: says what was wrong"
}
EXPECT='zz: not a hex address' bad_usage "an address not hex" "$ID_C" 1 zz
EXPECT='beyond 64 bits' bad_usage "an address beyond 64 bits" "$ID_C" \
    10000000000000000
EXPECT='line 2: x1: not a hex' bad_usage "standard input's bad line" \
    "$ID_C" < <(printf '1\nx1\n')
EXPECT='not a build-id' bad_usage "a bad build-id" 0g1 12
EXPECT='odd|not a build-id' bad_usage "an odd build-id" 123 12
EXPECT='--start and --file-offset' bad_usage "abs without a mapping" \
    --mode abs "$ID_C" 12
EXPECT='--start and --file-offset' bad_usage "--start without abs" \
    --start 1000 "$ID_C" 12
EXPECT='va, file_offset or abs' bad_usage "an unknown mode" --mode rel \
    "$ID_C" 12
EXPECT='--timeout-ms' bad_usage "a bad timeout" --timeout-ms -1 "$ID_C" 12
EXPECT='an ID or FILE' bad_usage "no build-id" </dev/null
EXPECT='--perf-script reads' bad_usage "--perf-script with a build-id" \
    --perf-script "$ID_C"
EXPECT='unknown option' bad_usage "an unknown option" --frobnicate "$ID_C" 1
is "$(posts)" "$before" "nothing sent for bad usage"

# A module pending until --timeout-ms: its debuginfo comes from an
# upstream that holds every answer until the gate file is there.
# (The fake answers every kind with the debug file: the executable is a
# local file of the daemon's.)
mkdir -p gated/exe
cp serve/hot.debug gated/hot.debug
cp serve/hot gated/exe/hot
start_fake fake --gate "$T/gate" "$ID_HOT=ok:$T/gated/hot.debug"
start_daemon up --scan-dir "$T/gated/exe" --upstream "$fake_URL"
HOT_FN=$(fn_addr serve/hot.debug inner 8)
out=$("$DBGMIRROR" --no-config symbolicate --url "$up_URL" --timeout-ms 300 \
    "$ID_HOT" "$HOT_FN" 2>err)
is "$?" 1 "still pending after --timeout-ms: exit status 1"
is "$out" $'??\n??:0' "printed as unknown"
like "$(cat err)" "$ID_HOT: still pending after 300 ms" "and said"
touch gate
out=$("$DBGMIRROR" --no-config symbolicate --url "$up_URL" "$ID_HOT" \
    "$HOT_FN")
ok $? "once the upstream answers: exit status 0"
is "$out" "$(eu-addr2line -f -i -C -e serve/hot.debug "0x$HOT_FN")" \
    "and the lines eu-addr2line prints"

# ---------------------------------------------------------- perf script

# perf_expect OFFSET RET DSO HEAD: the lines --perf-script writes for a
# frame of hot at OFFSET (a return address when RET is 1) whose line
# is HEAD (up to and with its address), "[unknown] (DSO)", from the
# daemon's --json answer for the same address: a line per function, the
# address on each, what comes before it blanked after the first.
perf_expect() {
	local json
	json=$("${SYM[@]}" --json $([ "$2" = 1 ] && echo --return) \
	    --mode file_offset "$ID_HOT" "$1") || return 1
	python3 -c '
import json, re, sys
f = json.loads(sys.argv[1])["frames"][0]["frames"]
dso = sys.argv[2]
prefix, addr = re.match(r"^(.*?)([0-9a-f]+[ \t]+)$", sys.argv[3], re.S).groups()
for i, fr in enumerate(f):
    head = prefix if i == 0 else "".join(c if c in " \t" else " " for c in prefix)
    print("%s%s%s %s" % (head, addr, fr["function"],
                         "(inlined)" if i < len(f) - 1 else "(%s)" % dso))
    if fr["file"] is not None:
        print("  %s:%d" % (fr["file"], fr["line"]))
' "$json" "$3" "$4"
}

# Two functions of hot, as file offsets (its text: offset = address).
INNER=$(fn_addr serve/hot.debug inner 16)
OUTER=$(fn_addr serve/hot.debug outer 12)
HOTPATH=$T/serve/hot
{
	printf 'hot  4242 100.000001:     250000 cpu-clock: \n'
	printf '\t%16s [unknown] (%s)\n' "$INNER" "$HOTPATH"
	printf '\t%16s [unknown] (%s)\n' "$OUTER" "$HOTPATH"
	printf '\t%16s __libc_start_call_main+0x7a (/usr/lib/libc.so.6)\n' 2724a
	printf '\n'
} >chain.txt
{
	printf 'hot  4242 100.000001:     250000 cpu-clock: \n'
	perf_expect "$INNER" 0 "$HOTPATH" "$(printf '\t%16s ' "$INNER")"
	perf_expect "$OUTER" 1 "$HOTPATH" "$(printf '\t%16s ' "$OUTER")"
	printf '\t%16s __libc_start_call_main+0x7a (/usr/lib/libc.so.6)\n' 2724a
	printf '\n'
} >chain.want
out=$("${SYM[@]}" --perf-script <chain.txt)
ok $? "--perf-script: a callchain, exit status 0"
is "$out" "$(cat chain.want)" \
    "its [unknown] frames symbolized, the first as the sample's address, the next as a return address"

# A sample without a callchain: a process address, through the mapping
# of --show-mmap-events.
mmap="             hot  4242 100.000000: PERF_RECORD_MMAP2 4242/4242: [0x55d0c0a01000(0x1000) @ 0x1000 fe:00 42 0]: r-xp $HOTPATH"
sample=$(printf '             hot  4242 100.000001:     250000 cpu-clock:  %16x ' \
    $((0x55d0c0a01000 + 0x$INNER - 0x1000)))
printf '%s\n%s[unknown] (%s)\n' "$mmap" "$sample" "$HOTPATH" >mmap.txt
out=$("${SYM[@]}" --perf-script <mmap.txt)
ok $? "--perf-script: a sample and its mapping, exit status 0"
is "$out" "$mmap"$'\n'"$(perf_expect "$INNER" 0 "$HOTPATH" "$sample")" \
    "the sample's process address mapped to its file offset"
printf '%s[unknown] (%s)\n' "$sample" "$HOTPATH" >nommap.txt
out=$("${SYM[@]}" --perf-script <nommap.txt 2>err)
is "$?" 1 "a sample's process address without its mapping: exit status 1"
is "$out" "$(cat nommap.txt)" "left as perf printed it"
like "$(cat err)" '1 process addresses no mmap event maps' "and counted"
# perf 6.5's -F +dsoff: the offset after the DSO.
line=$(printf '\t%16x ' $((0x7f0000000000 + 0x$OUTER)))
printf '%s[unknown] (%s+0x%s)\n' "$line" "$HOTPATH" "$OUTER" >dsoff.txt
is "$("${SYM[@]}" --perf-script <dsoff.txt)" \
    "$(perf_expect "$OUTER" 0 "$HOTPATH+0x$OUTER" "$line")" \
    "-F +dsoff: the offset perf gives"

# The file gone: --buildids (perf buildid-list's lines) names its id.
sed "s|$HOTPATH|/gone/hot|g" chain.txt >gone.txt
out=$("${SYM[@]}" --perf-script <gone.txt 2>err)
is "$?" 1 "a DSO of no known build-id: exit status 1"
is "$out" "$(cat gone.txt)" "its frames left as perf printed them"
like "$(cat err)" '0 of 2 unknown frames symbolized; 2 in files of no known build-id' \
    "and counted"
printf '%s /gone/hot\n' "$ID_HOT" >buildids
is "$("${SYM[@]}" --perf-script --buildids buildids <gone.txt)" \
    "$(sed "s|$HOTPATH|/gone/hot|g" chain.want)" \
    "--buildids gives the build-id perf recorded"
printf 'not a build-id\n' >badids
EXPECT='not "BUILD-ID PATH"' bad_usage "a bad --buildids file" \
    --perf-script --buildids badids </dev/null

# A real profile, when perf can record here.
if perf record -q -e cpu-clock -g -o perf.data "$T/serve/hot" 40 \
    >perf.out 2>&1; then
	perf script -i perf.data >perf.txt 2>/dev/null
	n=$(grep -c "\[unknown\] ($HOTPATH)" perf.txt)
	[ "$n" -gt 0 ]
	ok $? "perf record: $n frames of the stripped program perf could not name"
	"${SYM[@]}" --perf-script <perf.txt >perf.sym 2>perf.err
	is "$(grep -c "\[unknown\] ($HOTPATH)" perf.sym)" 0 \
	    "perf script | dbgmirror symbolicate --perf-script: every one symbolized"
	like "$(grep " ($HOTPATH)\$" perf.sym | sort | uniq -c | sort -rn |
	    head -n 3)" ' (inner|outer|main) ' "named after the program's functions"
	grep -q '^  .*perf_hot.c:[0-9]*$' perf.sym
	ok $? "with their source lines"
	is "$(grep -vc "($HOTPATH)\$\|^  .*:[0-9]*\$\|(inlined)\$" perf.sym)" \
	    "$(grep -vc "($HOTPATH)\$" perf.txt)" "every other line kept"
else
	skip "perf cannot record here: $(tail -n 1 perf.out)"
	skip "perf cannot record here"
	skip "perf cannot record here"
	skip "perf cannot record here"
	skip "perf cannot record here"
fi
done_testing
