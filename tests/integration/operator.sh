#!/bin/bash
# dbgmirror as an operator meets it, as a user who is not root: the next
# steps the daemon logs at start-up; the running daemon's settings (its cache-dir given on its command line
# alone) found through the configuration's listen address; dbgmirror
# rescan, waited for, saying what it found; the missing-id report
# forgetting an id once a scan makes it servable, and purge clearing it.
. "$top_srcdir/tests/integration/lib.sh"

unset DEBUGINFOD_URLS
build_fixtures
chmod 755 "$T"
mkdir -p "$T/debug" "$T/home"
# As nobody when this runs as root (the daemon too, to share its
# files), else as the user running it: never as root.
if [ "$(id -u)" -eq 0 ]; then
	id nobody >/dev/null 2>&1 || { skip "needs the user nobody"; done_testing; }
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$T" ||
	    { skip "nobody cannot reach $T (TMPDIR must be open to others)"; done_testing; }
	as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	daemon_user=(--user nobody)
else
	as=()
	daemon_user=()
fi
user_cli() {
	"${as[@]}" env HOME="$T/home" XDG_CACHE_HOME= XDG_DATA_HOME= \
	    "$DBGMIRROR" --config "$T/cli.conf" "$@"
}

# Start-up tells the next step: where to point the clients, a gdb line,
# the status page, and with nothing to serve, how to add a source.
start_daemon e --scan-dir "$T/no-such-dir"
like "$(cat "$e_LOG")" "next: export DEBUGINFOD_URLS=http://127.0.0.1:$e_PORT for gdb" \
    "start-up: the URL for DEBUGINFOD_URLS"
like "$(cat "$e_LOG")" "next: DEBUGINFOD_URLS=http://127.0.0.1:$e_PORT gdb -iex 'set debuginfod enabled on' PROGRAM" \
    "... a gdb line"
like "$(cat "$e_LOG")" "status page http://127.0.0.1:$e_PORT/status" "... the status page"
like "$(cat "$e_LOG")" "scan-dir $T/no-such-dir: No such file or directory" \
    "... a scan-dir that is not there"
like "$(cat "$e_LOG")" "nothing to serve yet: .* scan-dir = DIR of debug files" \
    "... and, with nothing to serve, how to add a source"
stop_daemon e
start_daemon f --scan-dir "$FX"
ok "$(grep -q "nothing to serve" "$f_LOG"; echo $((! $?)))" \
    "with files to serve, no such advice"
stop_daemon f

start_daemon d "${daemon_user[@]}" --scan-dir "$T/debug"
# The operator's configuration names the daemon's address, not its
# cache directory: that was on the daemon's command line only.
printf 'listen = 127.0.0.1:%s\n' "$d_PORT" >"$T/cli.conf"
chmod 644 "$T/cli.conf"

out=$(user_cli stats 2>&1)
ok $? "stats as $(${as[@]} id -un): exit 0" || diag "$out"
like "$(echo "$out" | head -n 1)" \
    "^index: +$T/d-cache/index \(the cache-dir of the dbgmirrord at http://127.0.0.1:$d_PORT, pid $d_PID\)$" \
    "... reads the running daemon's index, given on its command line alone"
ok "$([ ! -e "$T/home/.cache/dbgmirror" ]; echo $?)" \
    "... and not the user's own default one"
like "$(user_cli stats --json)" '"settings_from":"daemon"' \
    "stats --json says where the settings came from"
like "$(user_cli --cache-dir "$T/elsewhere" stats 2>&1)" "$T/elsewhere/index" \
    "--cache-dir on the command line wins over the daemon's"

# A miss, then the file appears: dbgmirror rescan makes it served and the
# report forgets it.
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo")" 404 "prog_a's debuginfo: 404"
wait_until 30 sh -c "$(printf '%q ' "${as[@]}") '$DBGMIRROR' --config '$T/cli.conf' misses | grep -q '$ID_prog_a'"
ok $? "... in the missing-id report"
cp "$FX/usr/lib/debug/prog_a.debug" "$T/debug/"
chmod 644 "$T/debug/prog_a.debug"
out=$(user_cli rescan 2>"$T/rescan.err")
ok $? "dbgmirror rescan: exit 0" || sed 's/^/#   /' "$T/rescan.err"
like "$(cat "$T/rescan.err")" "rescan [0-9]+ asked of http://127.0.0.1:$d_PORT; waiting for it" \
    "... says what it asked of whom"
like "$out" "^scan complete in [0-9.]+s: 1 files seen, 1 new or changed, 1 read, 0 not indexable" \
    "... and what the scan found"
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo")" 200 "the file is served at once"
out=$(user_cli misses)
ok "$(echo "$out" | grep -c "$ID_prog_a" | grep -qx 0; echo $?)" \
    "the report forgot the id once it was served" || diag "$out"
is "$(user_cli rescan --json | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["done"] >= d["rescan"], d["files_seen"])')" \
    "True 1" "rescan --json"
like "$(user_cli lookup "$FX/usr/bin/prog_a")" \
    "debuginfo +local file +$T/debug/prog_a.debug" \
    "lookup of the program finds its new debug file"

# purge ID forgets the id's misses; purge --misses all of them.
for id in 7777777777777777777777777777777777777777 8888888888888888888888888888888888888888; do
	code "$d_URL/buildid/$id/debuginfo" >/dev/null
done
wait_until 30 sh -c "$(printf '%q ' "${as[@]}") '$DBGMIRROR' --config '$T/cli.conf' misses | grep -q 8888"
like "$(user_cli purge 7777777777777777777777777777777777777777)" \
    "purged 0 entries, 0 negative, 1 missing ids" "purge ID forgets its misses"
out=$(user_cli misses)
ok "$(echo "$out" | grep -q 7777; echo $((! $?)))" "... it is out of the report"
like "$out" "8888" "... the other stays"
is "$(user_cli purge --misses --json)" '{"entries":0,"negative":0,"missing_ids":1}' \
    "purge --misses empties the report"
like "$(user_cli misses)" "^0 build-ids missing" "... which is empty"

# No daemon at the address: the configuration's own cache-dir, silently;
# a rescan says there is none.
stop_daemon d
is "$(user_cli stats 2>&1)" \
    "dbgmirror: $T/home/.cache/dbgmirror/index: No such file or directory" \
    "with the daemon stopped, stats reads the configuration's cache-dir"
out=$(user_cli rescan 2>&1)
is "$?" 1 "rescan with no daemon: exit 1"
like "$out" "rescan: no dbgmirrord answers: http://127.0.0.1:$d_PORT/admin/rescan" \
    "... saying so"
done_testing
