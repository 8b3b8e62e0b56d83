#!/bin/bash
# The Debian package (make deb-check, which ./quickstart check runs after
# the suite): built with dpkg-buildpackage from packaging/debian/, lintian
# clean but for the tags packaging/debian/dbgmirror.lintian-overrides
# explains, holding the programs, the man pages, the configuration as a
# conffile and the systemd unit; its postinst, run in a private mount
# namespace, makes the user, the cache directory and the unit enabled;
# unpacked into a fresh tree (dpkg -x), its daemon, as nobody, serves a
# fixture's build-id.
. "$top_srcdir/tests/integration/lib.sh"

if ! command -v dpkg-buildpackage >/dev/null || ! command -v lintian >/dev/null; then
	skip "needs dpkg-buildpackage and lintian"
	done_testing
	exit 0
fi

make -s -C "$top_builddir" deb >"$T/deb.log" 2>&1
ok $? "make deb" || sed 's/^/#   /' "$T/deb.log" | tail -n 40
deb=$(ls "$top_builddir"/deb/dbgmirror_*.deb 2>/dev/null | head -n 1)
ok "$([ -f "$deb" ] && echo 0 || echo 1)" "... made ${deb##*/}"

lintian --fail-on error,warning --display-info "$top_builddir"/deb/*.changes \
    >"$T/lintian.log" 2>&1
ok $? "lintian finds no error or warning"
sed 's/^/#   lintian: /' "$T/lintian.log"

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\.||' >"$T/contents"
for f in /usr/sbin/dbgmirrord /usr/bin/dbgmirror \
    /usr/share/man/man8/dbgmirrord.8.gz /usr/share/man/man1/dbgmirror.1.gz \
    /usr/share/man/man5/dbgmirror.conf.5.gz /etc/dbgmirror/dbgmirror.conf \
    /lib/systemd/system/dbgmirrord.service; do
	grep -qx -- "$f" "$T/contents"
	ok $? "the package holds $f"
done
dpkg-deb -e "$deb" "$T/control"
grep -qx /etc/dbgmirror/dbgmirror.conf "$T/control/conffiles"
ok $? "the configuration is a conffile"
sh -n "$T/control/postinst" && sh -n "$T/control/postrm"
ok $? "the maintainer scripts parse"
grep -q 'adduser --system' "$T/control/postinst"
ok $? "postinst creates the system user"
grep -q 'chown dbgmirror:dbgmirror /var/cache/dbgmirror' "$T/control/postinst"
ok $? "... and the cache directory, for it"
grep -q 'deb-systemd-helper' "$T/control/postinst"
ok $? "... and enables the unit"

# The maintainer scripts, run for real in a private mount namespace whose
# /etc, /var/cache, /var/lib/systemd, /lib/systemd/system and /run are
# copies or empty: the user and the cache are made there, never here.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    command -v adduser >/dev/null && command -v deb-systemd-helper >/dev/null; then
	ns=$T/ns
	mkdir -p "$ns/cache" "$ns/varlib"
	cp -a /etc "$ns/etc"
	cp -a /lib/systemd/system "$ns/units"
	dpkg-deb --fsys-tarfile "$deb" |
	    tar -xOf - ./lib/systemd/system/dbgmirrord.service >"$ns/units/dbgmirrord.service"
	# As dpkg runs it (deb-systemd-helper insists).
	DPKG_MAINTSCRIPT_PACKAGE=dbgmirror DPKG_MAINTSCRIPT_NAME=postinst \
	    unshare --mount --propagation private sh -c '
		    mount --bind "$1/etc" /etc &&
		    mount --bind "$1/cache" /var/cache &&
		    mount --bind "$1/varlib" /var/lib/systemd &&
		    mount --bind "$1/units" /lib/systemd/system &&
		    mount -t tmpfs tmpfs /run &&
		    sh -e "$2" configure "" &&
		    stat -c "%U:%G %a" /var/cache/dbgmirror
	    ' sh "$ns" "$T/control/postinst" >"$T/postinst.log" 2>&1
	ok $? "postinst configure runs" || sed 's/^/#   /' "$T/postinst.log"
	like "$(grep '^dbgmirror:' "$ns/etc/passwd")" \
	    '^dbgmirror:x:[1-9][0-9]?[0-9]?:[0-9]+:[^:]*:/var/cache/dbgmirror:/usr/sbin/nologin$' \
	    "... it made the system user dbgmirror (in the namespace's /etc)"
	like "$(tail -n 1 "$T/postinst.log")" '^dbgmirror:dbgmirror 750$' \
	    "... and /var/cache/dbgmirror, the user's, mode 750"
	ok "$([ -L "$ns/etc/systemd/system/multi-user.target.wants/dbgmirrord.service" ] && echo 0 || echo 1)" \
	    "... and enabled the unit"
	ok "$(grep -q '^dbgmirror:' /etc/passwd && echo 1 || echo 0)" \
	    "... and this machine's /etc has no such user"
else
	skip "postinst: needs root, unshare, adduser and deb-systemd-helper"
fi

# A fresh tree: nothing but the package.
dpkg -x "$deb" "$T/stage"
ok $? "dpkg -x into a fresh tree"
unit=$T/stage/lib/systemd/system/dbgmirrord.service
like "$(sed -n 's/^ExecStart=//p' "$unit")" \
    '^/usr/sbin/dbgmirrord --config /etc/dbgmirror/dbgmirror.conf$' \
    "the unit runs /usr/sbin/dbgmirrord with /etc/dbgmirror/dbgmirror.conf"
is "$(sed -n 's/^User=//p' "$unit")" dbgmirror "... as the user dbgmirror"
like "$("$T/stage/usr/bin/dbgmirror" --version 2>&1)" 'dbgmirror.* 0\.1\.0' \
    "the installed dbgmirror runs"
"$T/stage/usr/sbin/dbgmirrord" --config "$T/stage/etc/dbgmirror/dbgmirror.conf" \
    --check-config >"$T/check.log" 2>&1
ok $? "the installed daemon accepts the installed configuration"

build_fixtures
chmod 755 "$T"
# As nobody when nobody can reach $T, else as root (the suite's way).
as=(--user nobody)
setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$T" || as=()
DBGMIRRORD=$T/stage/usr/sbin/dbgmirrord
start_daemon pkg "${as[@]}" --scan-dir "$FX"
is "$(code "$pkg_URL/buildid/$ID_prog_c/executable")" 200 \
    "the installed daemon (${as[*]:-as root}) serves a fixture's build-id"
curl -s -o "$T/got" "$pkg_URL/buildid/$ID_prog_c/executable"
cmp -s "$T/got" "$FX/usr/bin/prog_c"
ok $? "... with the right bytes"
stop_daemon pkg
is "$STOP_RC" 0 "... and stops cleanly"

done_testing
