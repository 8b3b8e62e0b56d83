#!/bin/bash
# dbgmirror prefetch against a dbgmirrord in front of elfutils debuginfod:
# build-ids as arguments and on standard input, a program with the shared
# library it loads (built here, found through its DT_RUNPATH $ORIGIN), a
# directory, and a core file of that program (made with gdb's gcore);
# fetched, already cached, missing and failed are counted, and a terminal
# gets a progress bar.
. "$top_srcdir/tests/integration/lib.sh"

app=$T/app
mkdir -p "$app/lib" "$T/serve"
printf 'int pf_value(void) { return 42; }\n' >"$T/lib.c"
printf '#include <unistd.h>\nint pf_value(void);\nint main(void) { if (pf_value() != 42) return 1; pause(); return 0; }\n' >"$T/prog.c"
cc -g -shared -fPIC -Wl,--build-id -o "$app/lib/libpf.so" "$T/lib.c" ||
    bail "cannot build the library"
cc -g -Wl,--build-id -o "$app/pfprog" "$T/prog.c" -L"$app/lib" -lpf \
    -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib' || bail "cannot build the program"
buildid() {
	readelf -n "$1" | sed -n 's/.*Build ID: //p'
}
ID_prog=$(buildid "$app/pfprog")
ID_lib=$(buildid "$app/lib/libpf.so")
ID_libc=$(buildid "$(cc -print-file-name=libc.so.6)")
readelf -d "$app/pfprog" | grep -q 'RUNPATH.*\$ORIGIN/lib'
ok $? "the program finds its library through DT_RUNPATH \$ORIGIN"
cp "$app/pfprog" "$app/lib/libpf.so" "$T/serve/"

start_debuginfod up -F "$T/serve"
wait_until 60 curl -sf -o /dev/null "$up_URL/buildid/$ID_lib/debuginfo"
ok $? "debuginfod serves the program and its library"
start_daemon m --scan-dir none --upstream "$up_URL"

# prefetch ARGS...: dbgmirror prefetch against m; stdout in OUT, its last
# line in SUMMARY, stderr in $T/pf.err (and appended to $T/cli.log, which
# the final sanitizer check reads), the exit status in RC.
prefetch() {
	OUT=$("$DBGMIRROR" --no-config prefetch --url "$m_URL" "$@" 2>"$T/pf.err")
	RC=$?
	cat "$T/pf.err" >>"$T/cli.log"
	SUMMARY=$(printf '%s\n' "$OUT" | tail -n 1)
}

prefetch "$app/pfprog"
is "$RC" 0 "prefetch of a program: exit 0"
like "$OUT" "fetched +$ID_prog debuginfo +$app/pfprog" "... its own debuginfo fetched"
like "$OUT" "fetched +$ID_lib debuginfo +$app/lib/libpf.so" "... and its library's, found by DT_RUNPATH"
like "$OUT" "missing +$ID_libc debuginfo" "... libc's (through ld.so.cache) asked, missing upstream"
like "$SUMMARY" '^fetched 2, already cached 0, missing [1-9][0-9]*, failed 0$' "... the summary counts them"
grep -q "\"GET /buildid/$ID_lib/debuginfo\" 200 .* MISS .*dbgmirror-prefetch" "$m_LOG"
ok $? "... asked through the daemon, which filled from its upstream"
curl -s -D "$T/h" -o "$T/got" "$m_URL/buildid/$ID_lib/debuginfo"
is "$(header X-Cache "$T/h")" HIT "the library's debuginfo is now a hit"
cmp -s "$T/got" "$app/lib/libpf.so"
ok $? "... byte-identical"

prefetch "$app/pfprog"
like "$SUMMARY" '^fetched 0, already cached 2, missing [1-9][0-9]*, failed 0$' \
    "again: both already cached (X-Cache: HIT)"

prefetch --jobs 3 "$app"
like "$SUMMARY" '^fetched 0, already cached 2, missing [1-9][0-9]*, failed 0$' \
    "a directory: the same ids, found under it"

printf '%s\n%s\n  %s\n' "$ID_lib" 0123456789abcdef0123456789abcdef01234567 "$ID_lib" >"$T/ids"
prefetch --jobs 2 <"$T/ids"
is "$SUMMARY" "fetched 0, already cached 1, missing 1, failed 0" \
    "ids on standard input, one of them twice: asked once each"
prefetch "$ID_prog" - </dev/null
is "$SUMMARY" "fetched 0, already cached 1, missing 0, failed 0" "an id as an argument"
prefetch --json "$ID_prog"
is "$OUT" '{"fetched":0,"cached":1,"missing":0,"failed":0}' \
    "--json: the summary alone on standard output, as JSON"
like "$(cat "$T/pf.err")" "cached +$ID_prog debuginfo" "... the ids' lines on standard error"
prefetch --executable "$ID_prog"
is "$SUMMARY" "fetched 1, already cached 1, missing 0, failed 0" \
    "--executable: the executable too"
prefetch not-an-id-or-file
is "$RC" 2 "an operand that is neither a build-id nor a file: exit 2"
like "$(cat "$T/pf.err")" "not-an-id-or-file: neither a file nor a build-id" "... saying so"
# Files it can read no build-id from: each said, and exit 2.
cc -Wl,--build-id=none -o "$T/nobid" "$T/lib.c" -shared -fPIC ||
    bail "cannot build a library without a build-id"
prefetch "$T/nobid"
is "$RC" 2 "an ELF file without a build-id: exit 2"
like "$(cat "$T/pf.err")" "nobid: an ELF file without a build-id" "... saying so"
# An ELF core file header with no program header: no object in it.
printf '\177ELF\002\001\001\000\000\000\000\000\000\000\000\000\004\000\076\000\001\000\000\000' \
    >"$T/core0"
head -c 28 /dev/zero >>"$T/core0"
printf '\100\000\070\000\000\000\100\000\000\000\000\000' >>"$T/core0"
prefetch "$T/core0"
is "$RC" 2 "a core file without objects: exit 2"
like "$(cat "$T/pf.err")" "core0: a core file without an object that has a build-id" \
    "... saying so"

# --- a core file ---------------------------------------------------------
"$app/pfprog" &
ppid=$!
DAEMON_PIDS="$DAEMON_PIDS $ppid"
wait_until 10 grep -q libpf.so "/proc/$ppid/maps"
ok $? "the program runs, its library loaded"
gcore -o "$T/core" "$ppid" >"$T/gcore.log" 2>&1
ok $? "gcore made a core of it" || sed 's/^/#   /' "$T/gcore.log"
kill "$ppid"
core=$T/core.$ppid
stop_daemon m
start_daemon m2 --scan-dir none --upstream "$up_URL"
m_URL=$m2_URL
prefetch "$core"
is "$RC" 0 "prefetch of the core: exit 0"
like "$SUMMARY" '^fetched 2, already cached 0, missing [1-9][0-9]*, failed 0$' \
    "... the program's and the library's debuginfo fetched, the system's missing"
ids_ours=$(printf '%s\n' "$OUT" | awk '$1 ~ /^(fetched|cached|missing|failed)$/ && $3 == "debuginfo" { print $2 }' | sort -u | tr '\n' ' ')
ids_eu=$(eu-unstrip -n --core "$core" | awk '{ sub(/@.*/, "", $2); print $2 }' | grep -v '^-$' | sort -u | tr '\n' ' ')
is "$ids_ours" "$ids_eu" "... the same build-ids as eu-unstrip -n --core"

# --- failures and the terminal ---------------------------------------------
start_fake bad '*=status:500'
start_daemon f --scan-dir none --upstream "$bad_URL" --error-ttl 0
OUT=$("$DBGMIRROR" --no-config prefetch --url "$f_URL" "$ID_lib" 2>&1)
RC=$?
printf '%s\n' "$OUT" >>"$T/cli.log"
is "$RC" 1 "an upstream failing: exit 1"
like "$OUT" "failed +$ID_lib debuginfo +argument +\(HTTP 502\)" "... the failure said"
like "$OUT" 'fetched 0, already cached 0, missing 0, failed 1' "... and counted"

script -qec "'$DBGMIRROR' --no-config prefetch --url '$m_URL' '$ID_lib' '$ID_prog'" \
    /dev/null >"$T/tty.out" 2>&1 </dev/null
cat "$T/tty.out" >>"$T/cli.log"
like "$(tr '\r' '\n' <"$T/tty.out")" '^\[#{30}\] 2/2  fetched 0  cached 2  missing 0  failed 0' \
    "on a terminal: a progress bar"
like "$(cat "$T/tty.out")" 'fetched 0, already cached 2, missing 0, failed 0' "... then the summary"
is "$(grep -c '^cached ' "$T/tty.out")" 0 "... and no line per id"
done_testing
