#!/bin/bash
# Remote rpm repositories (repo = rpm URL [gpgkey=FILE]): a -debuginfo rpm
# built here (rpmbuild) in a repository made by createrepo_c (primary and
# filelists as xz, then as gzip), repomd.xml signed with a throwaway key
# (repomd.xml.asc), served by nginx on loopback.  debuginfod-find gets the
# debug file byte for byte from a cold cache, with the package's name in
# X-DEBUGINFOD-ARCHIVE; a bad repomd.xml.asc refuses the repository; an
# armored gpgkey= works; a repository without gpgkey= is read unsigned.
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
SPEC
mkdir -p "$W/fedora/Packages"
HOME=$T rpmbuild -bb --quiet --define "_topdir $T/rpmtop" \
    --define "_rpmdir $W/fedora/Packages" \
    --define '_rpmfilename %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' \
    "$T/progc.spec" >"$T/rpmbuild.log" 2>&1
ok $? "rpmbuild builds progc-debuginfo" || sed 's/^/# /' "$T/rpmbuild.log"
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
cp -a "$W/fedora" "$W/gz"
rm -rf "$W/gz/repodata"
repository gz --compress-type gz
cp -a "$W/gz" "$W/badsig"
sed -i 's/<revision>/<revision>1/' "$W/badsig/repodata/repomd.xml"
chmod -R a+rX "$W"

start_nginx "$W"


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
like "$out" "repo $N/fedora: package Packages/$rpm " \
    "dbgmirror lookup names the repository and the rpm"

# gpgkey= naming an ASCII-armored key, as /etc/pki/rpm-gpg holds them.
gpg --batch --armor --export >"$T/key.asc"
start_daemon a --scan-dir none --repo "rpm $N/fedora gpgkey=$T/key.asc"
wait_until 60 refreshed a 1
ok $? "an armored gpgkey= checks repomd.xml.asc"

start_daemon g --scan-dir none --repo "rpm $N/gz"
wait_until 60 refreshed g 1
ok $? "a repository without gpgkey= is read unsigned (gzip repodata)"
check_find g "prog_c's debug file from a gzip repodata" \
    "$T/rpmroot$cdbg" debuginfo "$ID_prog_c"

done_testing
