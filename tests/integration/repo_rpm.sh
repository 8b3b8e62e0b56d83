#!/bin/bash
# Remote rpm repositories (repo = rpm URL [gpgkey=FILE]): a -debuginfo rpm
# built here (rpmbuild) in a repository made by createrepo_c (primary and
# filelists as xz, then as gzip), repomd.xml signed with a throwaway key
# (repomd.xml.asc), served by nginx on loopback.  debuginfod-find gets the
# debug file byte for byte from a cold cache, with the package's name in
# X-DEBUGINFOD-ARCHIVE; a bad repomd.xml.asc refuses the repository; an
# armored gpgkey= works; a repository without gpgkey= is read unsigned.
# Executables: a binary rpm whose filelists carry /usr/lib/.build-id/xx/rest
# serves /executable byte for byte; an id only a debug file names is a
# 404 there.  A refresh fetches no primary or filelists whose checksum in
# repomd.xml is unchanged.  The IMA signature of the rpm's header (tests/rpmsig) is on the
# first answer, streamed while the rpm downloads, as on later ones.
. "$top_srcdir/tests/integration/lib.sh"

command -v nginx >/dev/null || bail "nginx is not installed"
command -v gpgv >/dev/null || bail "gpgv is not installed"
command -v createrepo_c >/dev/null || bail "createrepo-c is not installed"
command -v rpmbuild >/dev/null || bail "rpm is not installed"
# nginx's workers run as another user when started as root.
chmod 755 "$T"
build_fixtures
client_env
export GNUPGHOME=$T/gnupg
mkdir -m 700 "$GNUPGHOME"
W=$T/www
mkdir -p "$W" "$T/nginx" "$T/rpmroot/usr/lib/debug/usr/bin" \
    "$T/rpmroot/usr/lib/debug/.build-id/${ID_prog_c:0:2}"

gpg --batch --passphrase '' --quick-gen-key 'dbgmirror test <t@example.org>' \
    ed25519 sign never >/dev/null 2>&1 &&
    gpg --batch --export >"$T/keyring.gpg"
ok $? "a throwaway signing key"

# Fedora's layout: the debug file under /usr/lib/debug/usr/bin, a
# .build-id link to it.
cdbg=/usr/lib/debug/usr/bin/prog_c-1.0-1.x86_64.debug
objcopy --only-keep-debug "$FX/usr/bin/prog_c" "$T/rpmroot$cdbg"
ln -s "../../usr/bin/prog_c-1.0-1.x86_64.debug" \
    "$T/rpmroot/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug"
# ... and, as Fedora's, a suffix-less link to the executable, which is in
# the binary rpm, not here.
ln -s "../../../../../usr/bin/prog_c" \
    "$T/rpmroot/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}"
# An id only a debug file names (no executable anywhere).
ID_d=d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1d1
bin_d=$(mkbin $ID_d)
mkdir -p "$T/rpmroot/usr/lib/debug/.build-id/${ID_d:0:2}"
ddbg=/usr/lib/debug/.build-id/${ID_d:0:2}/${ID_d:2}.debug
objcopy --only-keep-debug "$bin_d" "$T/rpmroot$ddbg"
cat >"$T/progc.spec" <<SPEC
%global debug_package %{nil}
%global __os_install_post %{nil}
%define _build_id_links none
Name: progc-debuginfo
Version: 1.0
Release: 1
Summary: fixture
License: MIT
AutoReqProv: no
%description
fixture
%install
cp -a $T/rpmroot/. %{buildroot}/
%files
$cdbg
/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug
/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}
/usr/lib/debug/.build-id/${ID_d:0:2}/${ID_d:2}.debug
SPEC
# The binary rpm: prog_c, stripped as Fedora's are (else it is a debuginfo
# too), and the /usr/lib/.build-id link to it that rpmbuild makes (made
# here, so that nothing else differs).
mkdir -p "$T/binroot/usr/bin" "$T/binroot/usr/lib/.build-id/${ID_prog_c:0:2}"
strip --strip-all -o "$T/binroot/usr/bin/prog_c" "$FX/usr/bin/prog_c"
ln -s ../../../../usr/bin/prog_c \
    "$T/binroot/usr/lib/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}"
sed -e 's/^Name: progc-debuginfo/Name: progc/' -e "s|$T/rpmroot|$T/binroot|" \
    -e '/^%files/q' "$T/progc.spec" >"$T/progbin.spec"
printf '/usr/bin/prog_c\n/usr/lib/.build-id/%s/%s\n' "${ID_prog_c:0:2}" \
    "${ID_prog_c:2}" >>"$T/progbin.spec"
mkdir -p "$W/fedora/Packages"
for spec in progc progbin; do
	HOME=$T rpmbuild -bb --quiet --define "_topdir $T/rpmtop" \
	    --define "_rpmdir $W/fedora/Packages" \
	    --define '_rpmfilename %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' \
	    "$T/$spec.spec" >"$T/rpmbuild.log" 2>&1
	ok $? "rpmbuild builds $spec.spec" || sed 's/^/# /' "$T/rpmbuild.log"
done
rpm=progc-debuginfo-1.0-1.x86_64.rpm

# repository DIR [createrepo_c options]: repodata for DIR, signed.
repository() {
	local d=$W/$1
	shift
	createrepo_c -q "$@" "$d" >/dev/null &&
	    gpg --batch --yes --armor --detach-sign -o "$d/repodata/repomd.xml.asc" \
		"$d/repodata/repomd.xml" 2>/dev/null
}
repository fedora --compress-type xz
ok $? "createrepo_c makes a signed repository (xz)"
# ima: the debug rpm with an IMA signature for each regular file
# (tests/rpmsig), which librpm, and so createrepo_c, no longer reads: the
# repodata is made for the rpm as built, then its checksum and size are
# swapped for the signed one's.
IMA=030204ab12cd3400483046022100c0ffee
mkdir -p "$W/ima/Packages"
cp "$W/fedora/Packages/$rpm" "$W/ima/Packages/"
createrepo_c -q --simple-md-filenames --no-database --compress-type gz \
    "$W/ima" >/dev/null
old=$(sha256sum <"$W/ima/Packages/$rpm" | cut -d' ' -f1)
olds=$(stat -c %s "$W/ima/Packages/$rpm")
"$top_builddir/tests/rpmsig" "$W/fedora/Packages/$rpm" "$W/ima/Packages/$rpm" \
    "$IMA"
ok $? "the debug rpm gets per-file IMA signatures"
new=$(sha256sum <"$W/ima/Packages/$rpm" | cut -d' ' -f1)
news=$(stat -c %s "$W/ima/Packages/$rpm")
for f in primary filelists; do
	x=$W/ima/repodata/$f.xml.gz
	b=$(sha256sum <"$x" | cut -d' ' -f1) bs=$(stat -c %s "$x")
	zcat "$x" | sed -e "s/$old/$new/g" -e "s/package=\"$olds\"/package=\"$news\"/" |
	    gzip -9n >"$x.new" && mv "$x.new" "$x"
	sed -i -e "s/$b/$(sha256sum <"$x" | cut -d' ' -f1)/" \
	    -e "s|<size>$bs</size>|<size>$(stat -c %s "$x")</size>|" \
	    "$W/ima/repodata/repomd.xml"
done
cp -a "$W/fedora" "$W/gz"
rm -rf "$W/gz/repodata"
repository gz --compress-type gz
cp -a "$W/gz" "$W/badsig"
sed -i 's/<revision>/<revision>1/' "$W/badsig/repodata/repomd.xml"
chmod -R a+rX "$W"

start_nginx "$W" "		location /noval/ {
			alias $W/fedora/;
			etag off;
			if_modified_since off;
		}"


start_daemon d --scan-dir none \
    --repo "rpm $N/fedora gpgkey=$T/keyring.gpg" \
    --repo "rpm $N/badsig gpgkey=$T/keyring.gpg"
wait_until 60 refreshed d 1
ok $? "the signed repository is refreshed"
wait_until 60 grep -q 'badsig: refresh failed.*BADSIG' "$d_LOG"
ok $? "a repomd.xml that does not match its signature is refused"
check_find d "prog_c's debug file from an xz repodata" \
    "$T/rpmroot$cdbg" debuginfo "$ID_prog_c"
curl -s -D "$T/h" -o /dev/null "$d_URL/buildid/$ID_prog_c/debuginfo"
is "$(header X-DEBUGINFOD-ARCHIVE "$T/h")" "$rpm" \
    "X-DEBUGINFOD-ARCHIVE names the rpm"
is "$(grep -c "fedora/Packages/$rpm" "$T/nginx/access.log")" 1 \
    "one download"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/d-cache" \
    --repo "rpm $N/fedora gpgkey=$T/keyring.gpg" lookup "$ID_prog_c")
like "$out" "repository +$N/fedora: package Packages/$rpm .* as debuginfo" \
    "dbgmirror lookup names the repository and the rpm"
like "$out" "repository +$N/fedora: package Packages/progc-1\.0-1\.x86_64\.rpm .* as executable" \
    "... and the binary rpm its /usr/lib/.build-id link is in"

like "$out" "repository +$N/fedora: package Packages/$rpm .* as executable, by a debug link" \
    "... and the debug rpm its suffix-less link is in"

# Executables: by the binary rpm's /usr/lib/.build-id link, which wins
# over the debug rpm's suffix-less one.
check_find d "prog_c from the binary rpm" "$T/binroot/usr/bin/prog_c" executable \
    "$ID_prog_c"
is "$(grep -c "fedora/Packages/progc-1.0-1" "$T/nginx/access.log")" 1 \
    "... one download of it"
check_find d "the debug-only id's debug file" "$T/rpmroot$ddbg" debuginfo \
    "$ID_d"
is "$(code "$d_URL/buildid/$ID_d/executable")" 404 \
    "an id only a debug file names: no executable (404)"

# IMA signatures: on the first answer, cold, streamed while the rpm
# downloads (its header comes before the payload), as on a later one from
# the package cache.
start_daemon i --scan-dir none --repo "rpm $N/ima"
wait_until 60 refreshed i 1
ok $? "the repository of the signed rpm is refreshed"
curl -s -D "$T/first.h" -o "$T/first.out" "$i_URL/buildid/$ID_prog_c/debuginfo"
cmp -s "$T/first.out" "$T/rpmroot$cdbg"
ok $? "the first answer: the debug file"
is "$(header X-DEBUGINFOD-ARCHIVE "$T/first.h")" "$rpm" "... from the rpm"
is "$(header X-DEBUGINFOD-IMASIGNATURE "$T/first.h")" "$IMA" \
    "... with the IMA signature of the file its .build-id link names"
is "$(header X-DEBUGINFOD-FILE "$T/first.h")" "$cdbg" \
    "... and X-DEBUGINFOD-FILE names that file, as the package cache does"
curl -s -D "$T/later.h" -o /dev/null "$i_URL/buildid/$ID_d/debuginfo"
is "$(header X-DEBUGINFOD-IMASIGNATURE "$T/later.h")" "$IMA" \
    "a sibling, later, from the package cache: the same header"

# gpgkey= naming an ASCII-armored key, as /etc/pki/rpm-gpg holds them.
gpg --batch --armor --export >"$T/key.asc"
start_daemon a --scan-dir none --repo "rpm $N/fedora gpgkey=$T/key.asc"
wait_until 60 refreshed a 1
ok $? "an armored gpgkey= checks repomd.xml.asc"

start_daemon g --scan-dir none --repo "rpm $N/gz"
wait_until 60 refreshed g 1
ok $? "a repository without gpgkey= is read unsigned (gzip repodata)"
# Cold: the executable first, by the binary rpm's link, not the debug rpm's.
check_find g "prog_c first, from a cold cache" "$T/binroot/usr/bin/prog_c" \
    executable \
    "$ID_prog_c"
is "$(grep -c "gz/Packages/$rpm" "$T/nginx/access.log")" 0 \
    "... the debug rpm not downloaded for it"
check_find g "prog_c's debug file from a gzip repodata" \
    "$T/rpmroot$cdbg" debuginfo "$ID_prog_c"
# repomd.xml changes, its primary and filelists do not: they are read from
# the copies kept by their checksums, not fetched again.
echo >>"$W/gz/repodata/repomd.xml"
kill -USR1 "$g_PID"
wait_until 60 refreshed g 2
ok $? "a changed repomd.xml: refreshed"
is "$(grep -c 'GET /gz/repodata/repomd.xml ' "$T/nginx/access.log")" 2 \
    "... fetched again"
is "$(grep -Ec 'GET /gz/repodata/[^ ]*(primary|filelists)' "$T/nginx/access.log")" 2 \
    "... but not its primary and filelists, whose checksums are the same"
check_find g "prog_c's debug file after that refresh" \
    "$T/rpmroot$cdbg" debuginfo "$ID_prog_c"

# A repomd.xml byte for byte the one verified last, from a server that
# sends no validators: nothing parsed, no new generation.
start_daemon u --scan-dir none --repo "rpm $N/noval gpgkey=$T/keyring.gpg"
wait_until 60 refreshed u 1
kill -USR1 "$u_PID"
wait_until 60 refreshed u 2
ok $? "a second refresh of an unchanged repository from a server without validators"
is "$(grep -c 'GET /noval/repodata/repomd.xml HTTP/1.1" 200' "$T/nginx/access.log")" 2 \
    "... repomd.xml fetched whole both times"
like "$(grep ': refreshed' "$u_LOG" | tail -n 1)" \
    "noval: refreshed: unchanged, repomd.xml as last verified: nothing parsed" \
    "... found unchanged"
is "$(metric "dbgmirror_repo_generation{repo=\"$N/noval\",suite=\"\"}" "$u_URL")" 1 \
    "... no new generation"

done_testing
