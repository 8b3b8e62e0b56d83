#!/bin/bash
# Distro packages (--scan-packages): the fixture programs packed as a .deb
# (zstd) with a -dbgsym .ddeb (xz) holding the debug files and the dwz alt
# file, an .rpm (gzip payload) and an Arch .pkg.tar.zst.  debuginfod-find
# and gdb get byte-identical files and a source file through dbgmirrord,
# extracted on the first request and then served from the cache, with the
# archive headers;
# elfutils debuginfod -U/-R on the same packages answers the same; a
# corrupt package is skipped with a log line and the rest still served.
# DWARF 4 through dwz: sources named through the alt file's comp_dir.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
dbg=$FX/usr/lib/debug
client_env
P=$T/pkgs
mkdir -p "$P/arch" "$T/deb/DEBIAN" "$T/ddeb/DEBIAN" "$T/rpmroot/usr/bin" \
    "$T/archroot/usr/lib/debug"

# The .deb: the stripped programs.  The .ddeb: their debug files.
mkdir -p "$T/deb/usr/bin" "$T/ddeb/usr/lib"
cp -a "$FX/usr/bin/prog_a" "$FX/usr/bin/prog_b" "$T/deb/usr/bin/"
cp -a "$dbg" "$T/ddeb/usr/lib/"
for d in deb ddeb; do
	printf 'Package: progs%s\nVersion: 1.0\nArchitecture: amd64\nMaintainer: Test <t@example.org>\nDescription: fixture\n' \
	    "$([ $d = ddeb ] && echo -dbgsym)" >"$T/$d/DEBIAN/control"
done
dpkg-deb --root-owner-group -Zzstd --build "$T/deb" "$P/progs_1.0_amd64.deb" >/dev/null &&
    dpkg-deb --root-owner-group -Zxz --build "$T/ddeb" "$P/progs-dbgsym_1.0_amd64.ddeb" >/dev/null
ok $? "dpkg-deb builds the .deb and the .ddeb"

# The .rpm packages, Fedora's way: progc with prog_c stripped,
# progc-debuginfo with its split debug file (and the .build-id link to
# it), progc-debugsource with its source file where its DWARF says it is;
# the main package also ships a file no DWARF names.
srcdir=$(cd "$FX/../src" && pwd)
cdbg=/usr/lib/debug/usr/bin/prog_c-1.0-1.x86_64.debug
objcopy --only-keep-debug "$FX/usr/bin/prog_c" "$T/prog_c.debug"
strip --strip-all -o "$T/prog_c.stripped" "$FX/usr/bin/prog_c"
mkdir -p "$T/rpmroot/usr/lib/debug/usr/bin" "$T/rpmroot$srcdir" \
    "$T/rpmroot/usr/share/doc/progc" \
    "$T/rpmroot/usr/lib/debug/.build-id/${ID_prog_c:0:2}"
cp -a "$T/prog_c.stripped" "$T/rpmroot/usr/bin/prog_c"
cp -a "$T/prog_c.debug" "$T/rpmroot$cdbg"
ln -s "../../usr/bin/prog_c-1.0-1.x86_64.debug" \
    "$T/rpmroot/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug"
cp -a "$srcdir/prog_c.c" "$T/rpmroot$srcdir/"
echo "not a source" >"$T/rpmroot/usr/share/doc/progc/README"
cat >"$T/progc.spec" <<SPEC
%global debug_package %{nil}
%global __os_install_post %{nil}
%define _build_id_links none
Name: progc
Version: 1.0
Release: 1
Summary: fixture
License: MIT
AutoReqProv: no
%description
fixture
%package debuginfo
Summary: fixture debuginfo
%description debuginfo
fixture debuginfo
%package debugsource
Summary: fixture debugsource
%description debugsource
fixture debugsource
%install
cp -a $T/rpmroot/. %{buildroot}/
%files
/usr/bin/prog_c
/usr/share/doc/progc/README
%files debuginfo
$cdbg
/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug
%files debugsource
$srcdir/prog_c.c
SPEC
HOME=$T rpmbuild -bb --quiet --define "_topdir $T/rpmtop" \
    --define '_binary_payload w9.gzdio' --define "_rpmdir $P" \
    --define '_rpmfilename %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' \
    "$T/progc.spec" >"$T/rpmbuild.log" 2>&1 &&
    [ -f "$P/progc-debuginfo-1.0-1.x86_64.rpm" ] &&
    [ -f "$P/progc-debugsource-1.0-1.x86_64.rpm" ]
ok $? "rpmbuild builds progc with -debuginfo and -debugsource" ||
    sed 's/^/# /' "$T/rpmbuild.log"
# Every file of it gets an IMA signature in its header.
IMA=030204ab12cd3400483046022100deadbeef
"$top_builddir/tests/rpmsig" "$P/progc-1.0-1.x86_64.rpm" "$T/signed.rpm" "$IMA" &&
    mv "$T/signed.rpm" "$P/progc-1.0-1.x86_64.rpm"
ok $? "the .rpm gets per-file IMA signatures"

# Arch: prog_b's debug file alone, in its own directory.
cp -a "$dbg/prog_b.debug" "$T/archroot/usr/lib/debug/"
tar --zstd -cf "$P/arch/progb-1.0-1-x86_64.pkg.tar.zst" -C "$T/archroot" .
ok $? "tar --zstd builds the Arch package"

# Hostile packages among them: random bytes named .deb and .rpm, the .ddeb
# cut in half (its last member declares more than there is), a tar whose
# members climb out with ".." and one whose ELF members are magic and
# garbage, cut short, or with a build-id note of a silly length.
# (Decompression bombs are in tests/unit/test_package.c: the daemon's limit
# is 64 GiB decompressed.)
H=$P/hostile
mkdir -p "$H/root/usr/lib/debug" "$T/evil/usr/lib/debug"
head -c 3000 /dev/urandom >"$P/broken_1.0_amd64.deb"
head -c 3000 /dev/urandom >"$H/noise-1.0-1.x86_64.rpm"
head -c "$(($(stat -c %s "$P/progs-dbgsym_1.0_amd64.ddeb") / 2))" \
    "$P/progs-dbgsym_1.0_amd64.ddeb" >"$H/cut-dbgsym_1.0_amd64.ddeb"
cp "$dbg/prog_b.debug" "$T/evil/usr/lib/debug/escape.debug"
tar --zstd -cf "$H/escape-1-1-x86_64.pkg.tar.zst" -C "$T/evil" \
    --transform 's|^\./usr/lib/debug/escape\.debug|../../escape.debug|' .
{ printf '\177ELF\002\001\001'; head -c 5000 /dev/urandom; } \
    >"$H/root/usr/lib/debug/garbage.debug"
# ... along with a debug file cut short and one whose build-id note claims
# a silly length.
head -c 3000 "$dbg/prog_b.debug" >"$H/root/usr/lib/debug/half.debug"
SILLY=5111111111111111111111111111111111111111
"$MKELF" --build-id "$SILLY" \
    --note-desc-len 4000000000 --debug .debug_info:4K \
    "$H/root/usr/lib/debug/silly.debug" || bail "mkelf failed"
tar --zstd -cf "$H/garbage-1-1-x86_64.pkg.tar.zst" -C "$H/root" .

start_daemon d --scan-dir none --scan-packages "$P"
for bad in broken_1.0_amd64.deb noise-1.0-1.x86_64.rpm \
    cut-dbgsym_1.0_amd64.ddeb; do
	access_log_has d "package .*/$bad skipped"
	ok $? "$bad is skipped with a log line"
done
is "$(code "$d_URL/")" 200 "the server is up after the hostile packages"
[ ! -e "$T/escape.debug" ] && [ ! -e "$P/escape.debug" ]
ok $? "a member named ../../escape.debug is written nowhere"
access_log_has d "escape-1-1-x86_64\.pkg\.tar\.zst: skipped 1 member\(s\) with bad names"
ok $? "... and the package's log line says it was skipped"
access_log_has d "garbage-1-1-x86_64\.pkg\.tar\.zst: skipped 0 .* 2 unreadable ELF"
ok $? "members with ELF magic and garbage, or cut short: logged as unreadable"
is "$(code "$d_URL/buildid/$SILLY/debuginfo")" 404 \
    "a member whose build-id note claims a silly length is not indexed by it"

# Sections first, before their files are cached by the requests below.
dump_section "$dbg/prog_b.debug" .debug_info "$T/b_info"
check_find d ".debug_info of prog_b, from a package member" "$T/b_info" \
    section "$ID_prog_b" .debug_info
dump_section "$FX/usr/bin/prog_c" .text "$T/c_text"
check_find d ".text of prog_c, from the .rpm" "$T/c_text" \
    section "$ID_prog_c" .text
# Neither prog_b's debug file nor (after it is filled too) its executable
# has this section; the executable's pass brings prog_a's along.
is "$(code "$d_URL/buildid/$ID_prog_b/section/.no_such")" 404 \
    "a section neither package file has: 404"

check_find d "prog_a.debug from the .ddeb" "$dbg/prog_a.debug" debuginfo "$ID_prog_a"
curl -s -D "$T/mf.h" -o "$T/a_exe" "$d_URL/buildid/$ID_prog_a/executable"
check_find d "prog_a from the .deb" "$FX/usr/bin/prog_a" executable "$ID_prog_a"
check_find d "the dwz alt file from the .ddeb" "$dbg/.dwz/shapes.debug" debuginfo "$ID_shapes"
check_find d "prog_c's debug file from -debuginfo" "$T/prog_c.debug" debuginfo "$ID_prog_c"
check_find d "prog_c, stripped, from the main .rpm" "$T/prog_c.stripped" executable "$ID_prog_c"
check_find d "prog_b.debug from the Arch package" "$dbg/prog_b.debug" debuginfo "$ID_prog_b"

# prog_b's executable was filled for the section its debug file lacked.
curl -s -D "$T/first.h" -o /dev/null "$d_URL/buildid/$ID_prog_b/executable"
is "$(header X-Cache "$T/first.h")" "HIT" \
    "the executable a section fell back to is cached"
is "$(header X-DEBUGINFOD-ARCHIVE "$T/first.h")" "progs_1.0_amd64.deb" \
    "X-DEBUGINFOD-ARCHIVE: the package's file name"
is "$(header X-DEBUGINFOD-FILE "$T/first.h")" "/usr/bin/prog_b" \
    "X-DEBUGINFOD-FILE: the member's path"
is "$(header X-Cache "$T/mf.h")" "HIT" \
    "prog_a's executable, never asked for, came out of the .deb with prog_b's"
curl -s -D "$T/later.h" -o /dev/null "$d_URL/buildid/$ID_prog_b/executable"
is "$(header X-Cache "$T/later.h")" "HIT" "... the next is a cache hit"
is "$(header X-DEBUGINFOD-ARCHIVE "$T/later.h")" "progs_1.0_amd64.deb" \
    "... with the same archive header"
like "$(header Last-Modified "$T/later.h")" 'GMT$' "... and a Last-Modified"
curl -s -D "$T/ima.h" -o /dev/null "$d_URL/buildid/$ID_prog_c/executable"
is "$(header X-DEBUGINFOD-IMASIGNATURE "$T/ima.h")" "$IMA" \
    "X-DEBUGINFOD-IMASIGNATURE: the RPM's signature of the member"
is "$(header X-DEBUGINFOD-IMASIGNATURE "$T/later.h")" "" \
    "... and none for a .deb member"

gdb_run d "$FX/usr/bin/prog_a" 'info line perimeter_a' 'ptype struct shape'
like "$OUT" 'Line [0-9]+ of "prog_a\.c"' \
    "gdb, stripped prog_a: perimeter_a resolves to a line from the .ddeb"
like "$OUT" 'double length;' "... and struct shape from the dwz alt file"

# Sources: served from the package that ships the path a debuginfo names.
check_find d "prog_c.c from -debugsource, as a source of prog_c" \
    "$srcdir/prog_c.c" source "$ID_prog_c" "$srcdir/prog_c.c"
is "$(code "$d_URL/buildid/$ID_prog_c/source/usr/share/doc/progc/README")" 404 \
    "a file the package ships but no DWARF names: 404"
is "$(code "$d_URL/buildid/$ID_prog_a/source$srcdir/prog_c.c")" 404 \
    "prog_c.c asked of another build-id: 404"
mv "$srcdir/prog_c.c" "$T/prog_c.c.away"
gdb_run d "$FX/usr/bin/prog_c" 'list main'
like "$OUT" 'count_words_c' "gdb list main, the source gone from disk: fetched from the .rpm"
mv "$T/prog_c.c.away" "$srcdir/prog_c.c"

out=$("$DBGMIRROR" --no-config --cache-dir "$T/d-cache" lookup "$ID_prog_a")
like "$out" 'progs-dbgsym_1\.0_amd64\.ddeb' "dbgmirror lookup names the package"

# The same requests to elfutils debuginfod -U -R -Z on the same packages
# (it unpacks .deb files with bsdtar, from libarchive-tools).
start_debuginfod ref -U -R -Z .tar.zst=zstdcat "$P"
ref_has() {
	[ "$(code "$ref_URL/buildid/$ID_prog_a/debuginfo")" = 200 ] &&
	    [ "$(code "$ref_URL/buildid/$ID_prog_b/debuginfo")" = 200 ] &&
	    [ "$(code "$ref_URL/buildid/$ID_prog_c/executable")" = 200 ]
}
if wait_until 60 ref_has; then
	for q in "$ID_prog_a/debuginfo" "$ID_prog_a/executable" \
	    "$ID_shapes/debuginfo" "$ID_prog_c/executable" \
	    "$ID_prog_b/debuginfo" "$ID_prog_c/source$srcdir/prog_c.c" \
	    0123456789abcdef0123456789abcdef01234567/debuginfo; do
		a=$(curl -s -o "$T/ours" -w '%{http_code}' "$d_URL/buildid/$q")
		b=$(curl -s -o "$T/theirs" -w '%{http_code}' "$ref_URL/buildid/$q")
		if [ "${a:0:1}" = 2 ]; then
			[ "${a:0:1}" = "${b:0:1}" ] && cmp -s "$T/ours" "$T/theirs"
		else
			[ "${a:0:1}" = "${b:0:1}" ]
		fi
		ok $? "same as debuginfod -U -R for $q ($a, $b)"
	done
else
	ok 1 "debuginfod -U -R indexed the packages within 60 s"
fi

stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit 0"

# package-coextract 0: only the member asked for comes out.  (This daemon
# also tells its scan's progress: the clock stands at a known time.)
touch -d @1700000000 "$T/clock"
DBGMIRROR_TEST_CLOCK=$T/clock start_daemon solo --scan-dir none \
    --scan-packages "$P" --package-coextract 0 --rescan-interval 0
members=$(metric dbgmirror_index_package_members "$solo_URL")
lt 0 "$members"
ok $? "/metrics: the indexed packages' servable members ($members)"
is "$(metric dbgmirror_index_files "$solo_URL")" 0 \
    "... while no local file is indexed"
is "$(metric dbgmirror_scan_running "$solo_URL")" 0 "no scan runs now"
is "$(metric dbgmirror_scan_last_end_time_seconds "$solo_URL")" 1700000000 \
    "the last scan ended at the clock's time"
read_pkgs=$(metric 'dbgmirror_scan_packages{state="read"}' "$solo_URL")
is "$(metric 'dbgmirror_scan_packages{state="seen"}' "$solo_URL")" \
    "$(find "$P" -name '*.deb' -o -name '*.ddeb' -o -name '*.rpm' \
	-o -name '*.pkg.tar.*' | wc -l)" \
    "it walked every package"
lt 0 "$read_pkgs"
ok $? "and read $read_pkgs of them"
is "$(metric dbgmirror_scan_package_members "$solo_URL")" "$members" \
    "it indexed all the members (the first scan)"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/solo-cache" stats)
like "$out" "packages: +[0-9]+ indexed \(scan-packages\), 0 downloaded from repositories \(repo-cache-size\); $members servable members" \
    "stats: the same members"
like "$out" "last scan: +2023-11-14T22:13:20Z to 2023-11-14T22:13:20Z \([0-9.]+s, complete\): 0 files seen.*; [0-9]+ packages seen, [0-9]+ new or changed, $read_pkgs read \($members servable members\)" \
    "stats: the last scan's end and its packages, in words"
kill -USR1 "$solo_PID"
wait_scan solo 2
is "$(metric 'dbgmirror_scan_packages{state="read"}' "$solo_URL")" 0 \
    "an unchanged rescan reads no package..."
is "$(metric dbgmirror_index_package_members "$solo_URL")" "$members" \
    "... and the index still has every member"
code "$solo_URL/buildid/$ID_prog_a/executable" >/dev/null
curl -s -D "$T/solo.h" -o /dev/null "$solo_URL/buildid/$ID_prog_b/executable"
is "$(header X-Cache "$T/solo.h")" "MISS" \
    "package-coextract 0: the sibling is extracted on its own request"
stop_daemon solo

# DWARF 4 through dwz, as older distributions ship it: dwz moves each
# unit's DW_AT_comp_dir into the alt file, which a .ddeb holds after the
# debug files (.build-id/ sorts before .dwz/), so relative source names
# are indexed by a second pass once the alt file was met.  p4c's debug file
# comes alone in another package, as Fedora's sub-package -debuginfo files
# do: its alt file is taken from the package that ships it.  p4d's alt file
# is in no package.  A -source .deb ships the sources where their DWARF
# says they were compiled.
W=$T/dw4
P4=$T/pkgs4
mkdir -p "$W/src" "$W/src2" "$W/work" "$P4"
cp "$srcdir/prog_a.c" "$srcdir/prog_b.c" "$srcdir/prog_c.c" "$W/src/"
cp "$srcdir/prog_b.c" "$W/src2/"
cc4() {
	(cd "$W/$1" && cc -gdwarf-4 -O0 -Wl,--build-id=sha1 -o "../work/$2" "$3")
}
cc4 src p4a prog_a.c && cc4 src p4b prog_b.c && cc4 src p4c prog_c.c &&
    cc4 src2 p4d prog_b.c && cc4 src2 p4e prog_b.c &&
    (cd "$W/work" && dwz -m alt4.debug \
        -M /usr/lib/debug/.dwz/dbgmirror-test/dw4.debug p4a p4b p4c &&
        dwz -m alt5.debug -M /usr/lib/debug/.dwz/dbgmirror-test/dw5.debug \
            p4d p4e)
ok $? "DWARF 4 programs through dwz -m"
# put PKG PROG: PROG's debug file into package PKG's tree, as Debian lays
# it out; its build-id in ID_PROG.
put() {
	local id
	id=$(readelf -n "$W/work/$2" | awk '/Build ID:/ { print $3; exit }')
	mkdir -p "$W/$1/DEBIAN" "$W/$1/usr/lib/debug/.build-id/${id:0:2}"
	objcopy --only-keep-debug "$W/work/$2" \
	    "$W/$1/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
	eval "ID_$2=$id"
}
put ddeb p4a && put ddeb p4b && put lone p4c && put orphan p4d
strip --strip-all -o "$W/p4a" "$W/work/p4a"
mkdir -p "$W/ddeb/usr/lib/debug/.dwz/dbgmirror-test" "$W/srcdeb/DEBIAN" \
    "$W/srcdeb$W/src" "$W/srcdeb$W/src2"
cp "$W/work/alt4.debug" "$W/ddeb/usr/lib/debug/.dwz/dbgmirror-test/dw4.debug"
cp "$W/src/prog_a.c" "$W/src/prog_c.c" "$W/srcdeb$W/src/"
cp "$W/src2/prog_b.c" "$W/srcdeb$W/src2/"
for d in ddeb lone orphan srcdeb; do
	printf 'Package: p4%s\nVersion: 1.0\nArchitecture: amd64\nMaintainer: Test <t@example.org>\nDescription: fixture\n' \
	    "-$d" >"$W/$d/DEBIAN/control"
	dpkg-deb --root-owner-group -Zxz --build "$W/$d" "$P4/p4-$d.deb" >/dev/null ||
	    bail "dpkg-deb $d failed"
done
start_daemon dw4 --scan-dir none --scan-packages "$P4"
mv "$W/src/prog_a.c" "$T/prog_a4.c"
curl -s -o "$T/src4" -w '%{http_code}' \
    "$dw4_URL/buildid/$ID_p4a/source$W/src/prog_a.c" >"$T/src4.code"
[ "$(cat "$T/src4.code")" = 200 ] && cmp -s "$T/src4" "$T/prog_a4.c"
ok $? "DWARF 4 + dwz: prog_a.c, named through the alt file's comp_dir, served"
gdb_run dw4 "$W/p4a" 'list main'
like "$OUT" 'struct shape sq = \{ 4, 2\.5, "square" \}' \
    "gdb list main, DWARF 4 + dwz, the source gone from disk: from the .deb"
is "$(code "$dw4_URL/buildid/$ID_p4c/source$W/src/prog_c.c")" 200 \
    "... prog_c.c, its debug file's alt file in another package: served"
is "$(code "$dw4_URL/buildid/$ID_p4d/source$W/src2/prog_b.c")" 404 \
    "... prog_b.c of p4d, whose alt file no package ships: 404"
access_log_has dw4 "p4-orphan\.deb: 1 debug file\(s\) link to a dwz alt file no indexed package ships"
ok $? "... which the scan logs"
access_log_has dw4 "p4-(ddeb|lone)\.deb: .* no indexed package ships"
ok $((!$?)) "... and for no other package"
stop_daemon dw4
done_testing
