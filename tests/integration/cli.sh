#!/bin/bash
# The admin CLI: lookup and stats read the daemon's index, while it runs and
# after it stopped; bad usage and missing indexes get clear errors.
. "$top_srcdir/tests/integration/lib.sh"

# The upstreams lookup names are the configuration's: never the caller's.
unset DEBUGINFOD_URLS
build_fixtures
start_daemon d --scan-dir "$FX"
cli() {
	"$DBGMIRROR" --no-config --cache-dir "$T/d-cache" "$@"
}

out=$(cli lookup "$ID_prog_c")
ok $? "lookup of an indexed id exits 0"
like "$out" "^debuginfo +local file +$FX/usr/bin/prog_c +[0-9.]+ (bytes|KiB)" \
    "lookup shows the debuginfo with path and size"
like "$out" "executable +local file +$FX/usr/bin/prog_c " "... and the executable"
out=$(cli lookup "$ID_prog_a")
like "$out" "debuginfo +local file +$FX/usr/lib/debug/prog_a.debug" \
    "a split debuginfo by its real path"
like "$out" "executable +local file +$FX/usr/bin/prog_a" "and its stripped executable"
out=$(cli lookup "$(echo "$ID_shapes" | tr a-f A-F)")
like "$out" "^debuginfo +local file +$FX/usr/lib/debug/.dwz/shapes.debug" \
    "uppercase ids are folded; the dwz alt file is a debuginfo"

out=$(cli lookup 00112233445566778899)
is "$?" 1 "an unknown id exits 1"
like "$out" "^debuginfo +nowhere: not indexed here, and no upstream to ask" \
    "and says the debuginfo is nowhere"
like "$out" "no debug file for this build-id is indexed; install its -dbgsym or -dbg package \(or scan-dir its directory\)" \
    "... and what to do about it"
out=$(cli --upstream http://127.0.0.1:1/up lookup 00112233445566778899)
is "$?" 1 "an id only an upstream might have: exit 1"
like "$out" "^debuginfo +not here: a request would ask the upstreams http://127.0.0.1:1/up" \
    "... naming the upstreams a request would ask"
out=$(cli lookup xyz 2>&1)
is "$?" 2 "a malformed id exits 2"
like "$out" "xyz: not a build-id .* nor a readable file" "and says what is wrong"
out=$(cli lookup /etc/hostname 2>&1)
is "$?" 2 "a file that is no ELF: exit 2"
like "$out" "/etc/hostname: neither a build-id nor an ELF file" "... saying so"
out=$(cli lookup "$FX/usr/bin/prog_c")
like "$out" "^build-id +$ID_prog_c \(of $FX/usr/bin/prog_c\)" \
    "an ELF file's path: its build-id ..."
like "$out" "debuginfo +local file +$FX/usr/bin/prog_c" "... looked up"

out=$(cli stats)
ok $? "stats exits 0"
like "$out" "files: +6" "stats counts the 6 files"
like "$out" "debuginfo: +4 build-ids" "4 debuginfo build-ids (a, b, c, alt)"
like "$out" "executable: +3 build-ids" "3 executable build-ids"
like "$out" "bytes: +[0-9][0-9.]* (bytes|KiB|MiB) in those local files" \
    "bytes, in units for a person"
like "$out" "last scan: +[0-9T:Z-]+ to [0-9T:Z-]+ \([0-9.]+s, complete\): 8 files seen, 6 new or changed, 6 read, 0 not indexable; 0 packages seen, 0 new or changed, 0 read \(0 servable members\), 0 records of vanished ones removed" \
    "the last scan's counts"

echo changed >>"$FX/usr/bin/prog_a"
out=$(cli lookup "$ID_prog_a")
like "$out" "executable +local file .*\(changed since indexed\)" \
    "lookup notices a file changed since it was indexed"
rm "$FX/usr/lib/debug/prog_b.debug"
out=$(cli lookup "$ID_prog_b")
like "$out" "debuginfo +local file .*\(gone\)" "... and a file that is gone"

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
like "$out" "frobnicate: unknown command" "... naming it"
out=$("$DBGMIRROR" --no-config --bogus stats 2>&1)
is "$?" 2 "unknown option: exit 2"
like "$out" "--bogus" "the message names the option"
out=$("$DBGMIRROR" --help)
is "$?" 0 "--help exits 0"
like "$out" "lookup +where the daemon would find" "--help lists the commands"
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
like "$out" "debuginfo +cached +[0-9][0-9.]* (bytes|KiB) +from $cup_URL" \
    "... showing the cached answer and where it came from"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/cc-cache" lookup 6666666666666666666666666666666666666666)
like "$out" "debuginfo +every upstream said not found, remembered for [0-9]+s more" \
    "... and a remembered miss with its time left"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/cc-cache" --cache-size 1G stats)
like "$out" "cache: +2 answers kept, [0-9][0-9.]* (bytes|KiB) of 1.0 GiB \(cache-size\)" \
    "stats: the cache against its cap"
like "$out" "misses: +1 negative and error entries" "... and the remembered misses"

# --json on every reporting command: one JSON object, exact numbers.
jq1() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
cc() { "$DBGMIRROR" --no-config --cache-dir "$T/cc-cache" "$@"; }
is "$(cc lookup --json "$idc" | jq1 "d['results'][0]['source'], d['results'][0]['from'], d['here']")" \
    "cache $cup_URL True" "lookup --json"
is "$(cc lookup --json 6666666666666666666666666666666666666666 | jq1 "d['results'][0]['source'], d['here'], d['upstreams']")" \
    "negative False " "... a remembered miss"
is "$(cc --cache-size 10GiB stats --json | jq1 "d['cache_entries'], d['cache_size'], d['negative_entries'], d['scan']['outcome']")" \
    "2 10737418240 1 complete" "stats --json: exact numbers"
# The daemon writes the missing ids once a second.
wait_until 30 sh -c "'$DBGMIRROR' --no-config --cache-dir '$T/cc-cache' misses --json | grep -q '\"ids\":1'"
is "$(cc misses --json | jq1 "d['ids'], d['misses'][0]['kinds']" 2>&1)" "1 ['debuginfo']" "misses --json"
is "$(cc purge --json --negative | jq1 "d['negative'], d['entries'], d['missing_ids']")" \
    "1 0 0" "purge --json"
is "$("$DBGMIRROR" --no-config token ci --scopes upload --json | jq1 "d['name'], d['scopes'], d['token'][:5], len(d['line'].split())")" \
    "ci upload dbgm_ 3" "token --json"
like "$(cc stats)" "cache: +2 answers kept, [0-9.]+ KiB of 10 GiB \(cache-size\)" \
    "stats: sizes for a person (10 GiB, not 10737418240)"
stop_daemon cc

# Help and mistakes: per-command --help, did-you-mean for commands and
# options, the options of another command.
out=$("$DBGMIRROR" misses --help)
is "$?" 0 "misses --help: exit 0"
like "$out" "^usage: dbgmirror misses \[--top N\] \[--since DURATION\] \[--json\]" \
    "... its own usage"
is "$("$DBGMIRROR" help misses)" "$out" "help misses says the same"
out=$("$DBGMIRROR" --no-config stast 2>&1)
is "$?" 2 "a misspelt command: exit 2"
is "$out" "dbgmirror: stast: unknown command (did you mean stats?)" \
    "... with a suggestion"
out=$("$DBGMIRROR" --no-config misses --jsno 2>&1)
is "$out" "dbgmirror: misses: --jsno: unknown option (did you mean --json?)" \
    "a misspelt option of the command: a suggestion"
out=$("$DBGMIRROR" --no-config stats --cache-siz 1G 2>&1)
is "$out" "dbgmirror: stats: --cache-siz: unknown option (did you mean --cache-size?)" \
    "... of the configuration too"
out=$("$DBGMIRROR" --no-config stats --top 3 2>&1)
is "$?" 2 "an option of another command: exit 2"
like "$out" "stats: --top is not one of its options" "... saying so"
out=$("$DBGMIRROR" --no-config -F /srv/debug stats 2>&1)
like "$out" "elfutils' debuginfod -F /srv/debug is dbgmirrord --scan-dir /srv/debug here" \
    "debuginfod's -F: what to type instead"
done_testing
