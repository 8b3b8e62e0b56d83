#!/bin/bash
# New debug files are served within seconds, without SIGUSR1 and with the
# periodic rescan a day away: the daemon watches the scan directories
# (inotify) and scans what changed.  A file copied in, a file replaced in
# place, a directory made after the start, a directory moved in, a
# .build-id symlink to a file outside the scan directory, a package
# dropped into scan-packages; deleted files and a directory moved out
# leave the index without any request for them; a thousand files copied
# at once cost a batch or two, not a thousand scans; an id remembered as
# missing is served at once, its negative entry gone; and at the watch
# limit the daemon says so and keeps serving what it watches.
. "$top_srcdir/tests/integration/lib.sh"

command -v dpkg-deb >/dev/null || bail "dpkg-deb is not installed"
id1=b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1b1
id2=b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2
id3=b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3
id4=b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4b4
id5=b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5
id6=b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6b6
id7=b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7
for i in 1 2 3 4 5 6 7; do
	eval "bin$i=\$(mkbin \$id$i)"
done
S=$T/debug
P=$T/pkgs
mkdir -p "$S/sub" "$P"
start_fake up
# Every id 404s upstream: a miss is remembered (a negative entry).
start_daemon d --scan-dir "$S" --scan-packages "$P" --rescan-interval 1d \
    --upstream "$up_URL" --negative-ttl 1h

get() { code "$d_URL/buildid/$1/debuginfo"; }
served() { [ "$(get "$1")" = 200 ]; }
files() { metric dbgmirror_index_files "$d_URL"; }

# ------------------------------------------------------------- new files

is "$(get $id1)" 404 "an id no file has yet: 404"
wait_until 20 sh -c "[ \"\$(curl -s '$d_URL/metrics' | awk '\$1 == \"dbgmirror_negative_entries\" { print \$2 }')\" = 1 ]"
ok $? "... remembered as missing (a negative entry)"
cp "$bin1" "$S/one.debug"
wait_until 30 served $id1
ok $? "a file copied into the scan directory is served, no signal sent"
is "$(metric dbgmirror_negative_entries "$d_URL")" 0 \
    "... and its negative entry is gone"
like "$(cat "$d_LOG")" 'watch: 1 changed path scanned in [0-9.]+s: 1 files read' \
    "... by a scan of that one path"

# Replaced in place: the same path, other bytes, another id.
cp "$bin2" "$S/one.debug"
wait_until 30 served $id2
ok $? "a file replaced in place: its new id is served"
is "$(get $id1)" 404 "... its old id no longer"

# A directory made after the start, files in it made at once.
mkdir -p "$S/late/a/b"
cp "$bin3" "$S/late/a/b/three.debug"
wait_until 30 served $id3
ok $? "a file in a directory made after the start"
cp "$bin4" "$S/late/a/b/four.debug"
wait_until 30 served $id4
ok $? "... and one added to it later (the directory is watched now)"

# A directory moved in from elsewhere.
mkdir -p "$T/stage/moved"
cp "$bin5" "$T/stage/moved/five.debug"
mv "$T/stage/moved" "$S/sub/"
wait_until 30 served $id5
ok $? "a directory moved into the scan directory"

# A .build-id link to a file outside the scan directories.
mkdir -p "$T/elsewhere" "$S/.build-id/${id6:0:2}"
cp "$bin6" "$T/elsewhere/six.debug"
ln -s "$T/elsewhere/six.debug" "$S/.build-id/${id6:0:2}/${id6:2}.debug"
wait_until 30 served $id6
ok $? "a .build-id symlink made after the start: its target is served"

# A package dropped into scan-packages.
mkdir -p "$T/deb/usr/lib/debug/.build-id/${id7:0:2}" "$T/deb/DEBIAN"
cp "$bin7" "$T/deb/usr/lib/debug/.build-id/${id7:0:2}/${id7:2}.debug"
printf 'Package: seven-dbgsym\nVersion: 1\nArchitecture: amd64\nMaintainer: T <t@example.org>\nDescription: t\n' \
    >"$T/deb/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$T/deb" "$T/seven.deb" >/dev/null
mv "$T/seven.deb" "$P/"
wait_until 30 served $id7
ok $? "a package moved into scan-packages: its member is served"

is "$(grep -c 'scan finished' "$d_LOG")" 1 \
    "all of it without another whole scan"

# -------------------------------------------------------------- removals

before=$(files)
rm "$S/late/a/b/four.debug"
wait_until 30 sh -c "[ \"\$(curl -s '$d_URL/metrics' | awk '\$1 == \"dbgmirror_index_files\" { print \$2 }')\" = $((before - 1)) ]"
ok $? "a deleted file leaves the index, unasked for ($before, then one less)"
mv "$S/sub/moved" "$T/stage/moved-out"
wait_until 30 sh -c "[ \"\$(curl -s '$d_URL/metrics' | awk '\$1 == \"dbgmirror_index_files\" { print \$2 }')\" = $((before - 2)) ]"
ok $? "a directory moved out: its file leaves the index"
is "$(get $id5)" 404 "... and is no longer served"
rm -r "$S/late"
wait_until 30 sh -c "[ \"\$(curl -s '$d_URL/metrics' | awk '\$1 == \"dbgmirror_index_files\" { print \$2 }')\" = $((before - 3)) ]"
ok $? "a tree removed: its files leave the index"

# ------------------------------------------------------ a thousand files

# A directory of one file first: once that file is served, the directory
# is watched.
mkdir -p "$T/thousand" "$S/many"
cp "$bin4" "$S/many/first.debug"
wait_until 30 served $id4
ok $? "a new directory with one file"
for i in $(seq 1 1000); do
	ln "$bin3" "$T/thousand/f$i.debug"
done
batches0=$(grep -c 'watch: .*scanned' "$d_LOG")
cp "$T/thousand/"* "$S/many/"
wait_until 60 sh -c "[ \"\$(curl -s '$d_URL/metrics' | awk '\$1 == \"dbgmirror_index_files\" { print \$2 }')\" = $((before - 2 + 1000)) ]"
ok $? "a thousand files copied at once are indexed"
batches=$(($(grep -c 'watch: .*scanned' "$d_LOG") - batches0))
[ "$batches" -ge 1 ] && [ "$batches" -le 5 ]
ok $? "... in a few batches, not a thousand scans ($batches)"
read_sum=$(grep 'watch: .*scanned' "$d_LOG" | tail -n "$batches" |
    sed -n 's/.*: \([0-9]*\) files read.*/\1/p' | awk '{ s += $1 } END { print s }')
is "$read_sum" 1000 "... each file read once"
stop_daemon d

# -------------------------------------------------------- the watch limit

mkdir -p "$T/lim/sub"
DBGMIRROR_TEST_WATCH_MAX=1 start_daemon l --scan-dir "$T/lim" \
    --rescan-interval 1d
like "$(cat "$l_LOG")" "warning: watch: $T/lim/sub: the inotify watch limit is reached \\(raise the sysctl fs\\.inotify\\.max_user_watches\\); new files in directories not watched are found by the periodic rescan" \
    "at the watch limit: a warning, with what to do"
cp "$bin1" "$T/lim/one.debug"
served_l() { [ "$(code "$l_URL/buildid/$1/debuginfo")" = 200 ]; }
wait_until 30 served_l $id1
ok $? "... files in the directories it watches are still served at once"
stop_daemon l

done_testing
