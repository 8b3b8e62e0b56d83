#!/bin/bash
# Scanning local directories: the first scan, incremental rescans (SIGUSR1
# and the interval), new, removed, replaced and touched files, symlinks,
# hostile ELF files, and the rule that a changed file is read again before
# it is served.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
S=$T/scan
cp -a "$FX" "$S"
dbg=$S/usr/lib/debug

# A fresh program with a build-id nobody has yet.
newprog() {
	printf 'int main(void) { return %d; }\n' "$2" >"$T/new.c"
	cc -g -Wl,--build-id=sha1 -o "$1" "$T/new.c"
	readelf -n "$1" | awk '/Build ID:/ { print $3; exit }'
}
scans() {
	grep -c 'scan finished' "$d_LOG"
}
rescan() {
	local n
	n=$(scans)
	kill -USR1 "$d_PID"
	wait_scan d $((n + 1))
}

# What the scans find is what this script checks: the watch (watch.sh)
# is off, or it could take a change before the rescan that is asked for.
export DBGMIRROR_TEST_WATCH_MAX=0
start_daemon d --scan-dir "$S" --rescan-interval 0
like "$(grep 'scan finished' "$d_LOG" | tail -n 1)" \
    ' 8 files seen, 6 read, 0 removed, 0 not indexable' \
    "first scan: 8 paths walked (2 symlinks), 6 distinct files read"
is "$(code "$d_URL/buildid/$ID_prog_b/debuginfo")" 200 "served after the scan"

rescan
like "$(grep 'scan finished' "$d_LOG" | tail -n 1)" ' 0 read, 0 removed' \
    "an unchanged rescan reads nothing"

id_new=$(newprog "$T/newprog" 7)
is "$(code "$d_URL/buildid/$id_new/executable")" 404 "a new file is unknown..."
cp "$T/newprog" "$S/usr/bin/newprog"
rescan
is "$(code "$d_URL/buildid/$id_new/executable")" 200 "... until the rescan"
like "$(grep 'scan finished' "$d_LOG" | tail -n 1)" ' 1 read, 0 removed' \
    "the rescan read only the new file"

rm "$S/usr/bin/newprog"
rescan
like "$(grep 'scan finished' "$d_LOG" | tail -n 1)" ' 1 removed' \
    "a removed file is dropped at the rescan"
is "$(code "$d_URL/buildid/$id_new/executable")" 404 "and no longer served"

# Replaced in place, no rescan: the old id must not get the new bytes.
id_other=$(newprog "$T/other" 9)
cp "$T/other" "$S/usr/bin/prog_c"
is "$(code "$d_URL/buildid/$ID_prog_c/executable")" 404 \
    "a file replaced by another build is not served for the old id"
is "$(code "$d_URL/buildid/$id_other/executable")" 200 \
    "the check re-indexed it under its new id at once"
access_log_has d "changed since it was indexed: indexed again"
ok $? "the re-index is logged"

# Touched but the same: served, after a re-read.
touch -d '2001-01-01' "$dbg/prog_b.debug"
curl -s -o "$T/body" "$d_URL/buildid/$ID_prog_b/debuginfo"
cmp -s "$T/body" "$dbg/prog_b.debug"
ok $? "a touched file with the same build-id is still served"
lk=$("$DBGMIRROR" --no-config --cache-dir "$T/d-cache" lookup "$ID_prog_b")
like "$lk" '2001-01-01' "its record now has the new mtime"

# Replaced by something that is not ELF at all.
echo "not an ELF file, but long enough to be looked at by the scanner" \
    >"$dbg/prog_a.debug"
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo")" 404 \
    "a file that stopped being ELF is not served"

# Symlinks: to a file outside the root (followed, indexed by real path) and
# to a directory (not followed).
mkdir -p "$T/outside/dir"
id_out=$(newprog "$T/outside/prog_out" 11)
id_dir=$(newprog "$T/outside/dir/prog_dir" 12)
mkdir -p "$dbg/.build-id/${id_out:0:2}"
ln -s "$T/outside/prog_out" "$dbg/.build-id/${id_out:0:2}/${id_out:2}"
ln -s "$T/outside/dir" "$S/linked-dir"
rescan
curl -s -o "$T/body" -D "$T/head" "$d_URL/buildid/$id_out/executable"
cmp -s "$T/body" "$T/outside/prog_out"
ok $? "a .build-id symlink to a file outside the root is followed"
like "$(tr -d '\r' <"$T/head")" "X-DEBUGINFOD-FILE: $T/outside/prog_out" \
    "... and the file is named by its real path"
is "$(code "$d_URL/buildid/$id_dir/executable")" 404 \
    "a symlinked directory is not followed"

# Hostile and odd ELF files are logged and skipped; the rest is served.
"$MKELF" --build-id "" --text 100 "$S/nobuildid" 2>/dev/null ||
    "$MKELF" --text 100 "$S/nobuildid"
"$MKELF" --build-id 00112233 --note-desc-len 200 --text 64 "$S/badnote"
"$MKELF" --build-id 0011223344 --text 64 --truncate 90 "$S/truncated"
"$MKELF" --build-id 00112233445566 --shoff-past-end "$S/badshoff"
head -c 4096 /dev/urandom >"$S/random"
printf '\177ELF' | cat - "$S/random" >"$S/elfmagic-garbage"
rescan
is "$(code "$d_URL/buildid/$ID_prog_b/debuginfo")" 200 \
    "hostile files do not stop the scan"
like "$(grep 'scan finished' "$d_LOG" | tail -n 1)" ' [1-9][0-9]* not indexable' \
    "they are counted as not indexable"
access_log_has d "scan: $S/badnote: not indexed"
ok $? "and each one is logged with its path"
is "$(code "$d_URL/buildid/00112233/executable")" 404 \
    "a lying build-id note is never served"
kill -0 "$d_PID"
ok $? "the daemon is alive"
stop_daemon d
is "$STOP_RC" 0 "exit status 0"

# Periodic rescans.
rm -rf "$T/d-cache"
start_daemon p --scan-dir "$S" --rescan-interval 1
id_late=$(newprog "$T/late" 13)
cp "$T/late" "$S/usr/bin/late"
served() {
	[ "$(code "$1")" = 200 ]
}
wait_until 10 served "$p_URL/buildid/$id_late/executable"
ok $? "--rescan-interval 1 picks up a new file without a signal"

# A missing scan directory is empty, not an error.
start_daemon m --scan-dir "$T/does-not-exist"
like "$(grep 'scan finished' "$m_LOG")" ' 0 files seen' \
    "a missing scan directory scans as empty"
kill -0 "$m_PID"
ok $? "and the daemon runs"
done_testing
