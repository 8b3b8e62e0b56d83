#!/bin/bash
# The admin CLI: lookup and stats read the daemon's index, while it runs and
# after it stopped; bad usage and missing indexes get clear errors.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
start_daemon d --scan-dir "$FX"
cli() {
	"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" "$@"
}

out=$(cli lookup "$ID_prog_c")
ok $? "lookup of an indexed id exits 0"
like "$out" "^debuginfo +$FX/usr/bin/prog_c +[0-9]+ bytes" \
    "lookup shows the debuginfo with path and size"
like "$out" "executable +$FX/usr/bin/prog_c " "... and the executable"
out=$(cli lookup "$ID_prog_a")
like "$out" "debuginfo +$FX/usr/lib/debug/prog_a.debug" \
    "a split debuginfo by its real path"
like "$out" "executable +$FX/usr/bin/prog_a" "and its stripped executable"
out=$(cli lookup "$(echo "$ID_shapes" | tr a-f A-F)")
like "$out" "^debuginfo +$FX/usr/lib/debug/.dwz/shapes.debug" \
    "uppercase ids are folded; the dwz alt file is a debuginfo"

out=$(cli lookup 00112233445566778899)
is "$?" 1 "an unknown id exits 1"
is "$out" "00112233445566778899: unknown here: no local file, package member, repository package, cached answer or remembered miss" \
    "and says where it looked"
out=$(cli lookup xyz 2>&1)
is "$?" 2 "a malformed id exits 2"
like "$out" "xyz: not a build-id .* nor a readable file" "and says what is wrong"
out=$(cli lookup /etc/hostname 2>&1)
is "$?" 2 "a file that is no ELF: exit 2"
like "$out" "/etc/hostname: neither a build-id nor an ELF file" "... saying so"
out=$(cli lookup "$FX/usr/bin/prog_c")
like "$out" "^build-id $ID_prog_c" "an ELF file's path: its build-id ..."
like "$out" "debuginfo +$FX/usr/bin/prog_c" "... looked up"

out=$(cli stats)
ok $? "stats exits 0"
like "$out" "files: +6" "stats counts the 6 files"
like "$out" "debuginfo: +4 build-ids" "4 debuginfo build-ids (a, b, c, alt)"
like "$out" "executable: +3 build-ids" "3 executable build-ids"
like "$out" "bytes: +[1-9][0-9]*" "bytes"
like "$out" "last scan: +[0-9T:Z-]+ to [0-9T:Z-]+ \([0-9.]+s, complete\): 8 files seen, 6 new or changed, 6 read, 0 not indexable; 0 packages seen, 0 new or changed, 0 read \(0 servable members\), 0 records of vanished ones removed" \
    "the last scan's counts"

echo changed >>"$FX/usr/bin/prog_a"
out=$(cli lookup "$ID_prog_a")
like "$out" "executable .*\(file changed since indexed\)" \
    "lookup notices a file changed since it was indexed"
rm "$FX/usr/lib/debug/prog_b.debug"
out=$(cli lookup "$ID_prog_b")
like "$out" "debuginfo .*\(file is gone\)" "... and a file that is gone"

stop_daemon d
out=$(cli stats)
ok $? "stats works with the daemon stopped"

out=$("$DBGMIRROR" --no-config --cache-dir "$T/nowhere" stats 2>&1)
is "$?" 1 "no index: exit 1"
like "$out" "$T/nowhere/index" "the message names the index directory"
out=$("$DBGMIRROR" --no-config 2>&1)
is "$?" 2 "no command: exit 2"
like "$out" "usage: dbgmirror" "with the usage"
out=$("$DBGMIRROR" --no-config frobnicate 2>&1)
is "$?" 2 "unknown command: exit 2"
like "$out" "unknown command 'frobnicate'" "... naming it"
out=$("$DBGMIRROR" --no-config --bogus stats 2>&1)
is "$?" 2 "unknown option: exit 2"
like "$out" "--bogus" "the message names the option"
out=$("$DBGMIRROR" --help)
is "$?" 0 "--help exits 0"
like "$out" "lookup ID" "--help lists the commands"
like "$("$DBGMIRROR" --version)" "^dbgmirror [0-9]+\.[0-9]+" "--version"
# One daemon per cache directory: a second one refuses to start, naming
# the first; the CLI still works beside it.
start_daemon lk --scan-dir none
out=$(timeout 30 "$DBGMIRRORD" --no-config --listen 127.0.0.1:0 \
    --cache-dir "$T/lk-cache" --scan-dir none 2>&1)
rc=$?
is "$rc" 1 "a second daemon on the same cache directory exits 1"
like "$out" "cache directory $T/lk-cache is in use by another dbgmirrord \(pid $lk_PID\)" \
    "... saying who holds it"
"$DBGMIRROR" --no-config --cache-dir "$T/lk-cache" stats >/dev/null
ok $? "dbgmirror stats works beside the daemon"
"$DBGMIRROR" --no-config --cache-dir "$T/lk-cache" purge --negative >/dev/null
ok $? "... and so does purge"
is "$(code "$lk_URL/")" 200 "the first daemon is untouched"
stop_daemon lk
start_daemon lk2 --scan-dir none --cache-dir "$T/lk-cache"
is "$(code "$lk2_URL/")" 200 "once it stopped, another daemon starts on it"
stop_daemon lk2
# lookup shows what the cache knows of an id: answers and misses.
idc=6565656565656565656565656565656565656565
start_fake cup "$idc=ok:$(mkbin $idc)"
start_daemon cc --scan-dir none --upstream "$cup_URL" --negative-ttl 600
code "$cc_URL/buildid/$idc/debuginfo" >/dev/null
code "$cc_URL/buildid/$idc/executable" >/dev/null
code "$cc_URL/buildid/6666666666666666666666666666666666666666/debuginfo" >/dev/null
out=$("$DBGMIRROR" --no-config --cache-dir "$T/cc-cache" lookup "$idc")
ok $? "lookup of an id only the cache has exits 0"
like "$out" "debuginfo +cached +[0-9]+ bytes +from $cup_URL" \
    "... showing the cached answer and where it came from"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/cc-cache" lookup 6666666666666666666666666666666666666666)
like "$out" "debuginfo +not found anywhere \(negative entry\), remembered for [0-9]+s more" \
    "... and a remembered miss with its time left"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/cc-cache" --cache-size 1G stats)
like "$out" "cache: +2 answers kept, [1-9][0-9]* bytes of 1073741824 \(cache-size\)" \
    "stats: the cache against its cap"
like "$out" "misses: +1 negative and error entries" "... and the remembered misses"
stop_daemon cc
done_testing
