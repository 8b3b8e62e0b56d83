#!/bin/bash
# The Debian package (make deb-check, which ./quickstart check runs after
# the suite): built with dpkg-buildpackage from packaging/debian/, lintian
# clean but for the tags packaging/debian/dbgmirror.lintian-overrides
# explains, holding the programs, the man pages, the configuration as a
# conffile (naming the package's directories and user), the systemd unit,
# a README and examples; in a private mount namespace, after what
# ./quickstart run does as root, its postinst makes the user, the cache
# and upload directories and the unit enabled, its daemon serves and takes
# an upload with the packaged configuration, and its postrm purge removes
# what it made and nothing else; unpacked into a fresh tree (dpkg -x), its
# daemon, as nobody, serves a fixture's build-id.
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
grep -q 'deb-systemd-helper' "$T/control/postinst"
ok $? "... and enables the unit"

# A fresh tree: nothing but the package.
dpkg -x "$deb" "$T/stage"
ok $? "dpkg -x into a fresh tree"
conf=$T/stage/etc/dbgmirror/dbgmirror.conf
is "$(grep -E '^(cache-dir|upload-dir|user) ' "$conf" | sed 's/  #.*//')" \
    "cache-dir = /var/cache/dbgmirror
upload-dir = /var/lib/dbgmirror/uploads
user = dbgmirror" \
    "the packaged configuration names the package's directories and user"
for f in README.md examples/haproxy.cfg examples/dbgmirror.conf; do
	ls "$T/stage/usr/share/doc/dbgmirror/$f"* >/dev/null 2>&1
	ok $? "/usr/share/doc/dbgmirror has $f"
done

build_fixtures
chmod 755 "$T"

# The maintainer scripts and the daemon, run for real in a private mount
# namespace whose /etc, /lib/systemd/system are copies, /var/cache and
# /run empty and /var/lib an overlay: the user and the directories are
# made there, never here.  First what ./quickstart run does as root (the real script,
# with make and dpkg-query stubbed and the package's daemon as its
# build), then postinst configure, the packaged daemon as its user with
# the packaged configuration, foreign files, and postrm purge.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    command -v adduser >/dev/null && command -v deb-systemd-helper >/dev/null; then
	ns=$T/ns
	mkdir -p "$ns/cache" "$ns/varlib" "$ns/work" "$T/qs/bin" "$T/qs/build"
	cp -a /etc "$ns/etc"
	cp -a /lib/systemd/system "$ns/units"
	dpkg-deb --fsys-tarfile "$deb" |
	    tar -xOf - ./lib/systemd/system/dbgmirrord.service >"$ns/units/dbgmirrord.service"
	cp "$top_srcdir/quickstart" "$T/qs/quickstart"
	printf '#!/bin/sh\nexit 0\n' >"$T/qs/configure"
	: >"$T/qs/build/Makefile"
	ln -s "$T/stage/usr/sbin/dbgmirrord" "$T/qs/build/dbgmirrord"
	printf '#!/bin/sh\nexit 0\n' >"$T/qs/bin/make"
	printf '#!/bin/sh\necho "install ok installed"\n' >"$T/qs/bin/dpkg-query"
	chmod 755 "$T/qs/configure" "$T/qs/bin/"*
	"$DBGMIRROR" --no-config token ci --scopes upload >"$T/token.out"
	sed -n 's/^line: //p' "$T/token.out" >"$T/tokens"
	sed -n 's/^token: //p' "$T/token.out" >"$T/token"
	upid=abcd000000000000000000000000000000000001
	cp "$(mkbin "$upid")" "$T/upload.bin"
	chmod 644 "$T/tokens"
	cat >"$T/ns.sh" <<'NS'
# In the namespace: NAME=VALUE lines of what was found, for deb.sh.
set -u
T=$1 FX=$2 ID=$3 UPID=$4
export DBGMIRROR_TEST_ALLOW_ROOT=
# listening LOG: the port a daemon logged, once it did (60 s at most).
port_of() {
	local i
	for i in $(seq 1 600); do
		p=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$1" | head -n 1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.1
	done
	return 1
}
stop() {
	kill -TERM "$1"
	wait "$1"
}
PATH=$T/qs/bin:$PATH "$T/qs/quickstart" run --listen 127.0.0.1:0 \
    --scan-dir "$FX" 2>"$T/quickstart.log" &
qs=$!
p=$(port_of "$T/quickstart.log")
echo "quickstart_code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/buildid/$ID/executable")"
stop "$qs"
echo "quickstart_cache=$(stat -c %U /var/cache/dbgmirror-quickstart 2>&1)"
echo "package_cache_before=$(stat -c %U /var/cache/dbgmirror 2>&1 | sed 's/.*No such file.*/none/')"
DPKG_MAINTSCRIPT_PACKAGE=dbgmirror DPKG_MAINTSCRIPT_NAME=postinst \
    sh -e "$T/control/postinst" configure "" >"$T/postinst.log" 2>&1
echo "postinst=$?"
wants=/etc/systemd/system/multi-user.target.wants/dbgmirrord.service
echo "enabled=$([ -L "$wants" ] && echo yes || echo no)"
for d in /var/cache/dbgmirror /var/lib/dbgmirror /var/lib/dbgmirror/uploads; do
	echo "dir $d=$(stat -c '%U:%G %a' "$d" 2>&1)"
done
"$T/stage/usr/sbin/dbgmirrord" --config "$T/stage/etc/dbgmirror/dbgmirror.conf" \
    --check-config >"$T/check.log" 2>&1
echo "check_config=$?"
setpriv --reuid=dbgmirror --regid=dbgmirror --clear-groups \
    "$T/stage/usr/sbin/dbgmirrord" --config "$T/stage/etc/dbgmirror/dbgmirror.conf" \
    --listen 127.0.0.1:0 --scan-dir "$FX" --token-file "$T/tokens" \
    2>"$T/packaged.log" &
pd=$!
p=$(port_of "$T/packaged.log")
echo "packaged_code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$p/buildid/$ID/executable")"
echo "upload_code=$(curl -s -o /dev/null -w '%{http_code}' -T "$T/upload.bin" \
    -H "Authorization: Bearer $(cat "$T/token")" "http://127.0.0.1:$p/buildid/$UPID/debuginfo")"
# dbgmirror as the package's user: the daemon's index, asked of it, and
# with no daemon answering, the packaged configuration's.
cli() {
	setpriv --reuid=dbgmirror --regid=dbgmirror --clear-groups \
	    env HOME=/nonexistent "$T/stage/usr/bin/dbgmirror" \
	    --config "$T/stage/etc/dbgmirror/dbgmirror.conf" "$@"
}
echo "cli_daemon=$(cli --url "http://127.0.0.1:$p" stats 2>&1 | head -n 1)"
stop "$pd"
echo "cli_config=$(cli --url http://127.0.0.1:1 stats 2>&1 | head -n 1)"
echo "uploads=$(find /var/lib/dbgmirror/uploads -path '*/tmp' -prune -o -type f -user dbgmirror -print | wc -l)"
echo "index=$(stat -c %U /var/cache/dbgmirror/index/data.mdb 2>&1)"
echo "notes" >/var/lib/dbgmirror/notes.txt
echo "notes" >/var/cache/dbgmirror-quickstart/notes.txt
sh -e "$T/control/postrm" purge >"$T/postrm.log" 2>&1
echo "postrm=$?"
echo "enabled after purge=$([ -L "$wants" ] && echo yes || echo no)"
for f in /var/cache/dbgmirror /var/lib/dbgmirror/uploads \
    /var/lib/dbgmirror/notes.txt /var/cache/dbgmirror-quickstart/notes.txt; do
	echo "after purge $f=$([ -e "$f" ] && echo kept || echo gone)"
done
NS
	DPKG_MAINTSCRIPT_PACKAGE=dbgmirror DPKG_MAINTSCRIPT_NAME=postinst \
	    unshare --mount --propagation private sh -c '
		    mount --bind "$1/etc" /etc &&
		    mount --bind "$1/cache" /var/cache &&
		    mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$1/varlib,workdir=$1/work" /var/lib &&
		    mount --bind "$1/units" /lib/systemd/system &&
		    mount -t tmpfs tmpfs /run &&
		    bash "$2/ns.sh" "$2" "$3" "$4" "$5"
	    ' sh "$ns" "$T" "$FX" "$ID_prog_c" "$upid" >"$T/ns.out" 2>"$T/ns.err"
	sed 's/^/#   ns: /' "$T/ns.out"
	val() { sed -n "s|^$1=||p" "$T/ns.out"; }
	is "$(val quickstart_code)" 200 "./quickstart run as root serves"
	is "$(val quickstart_cache)" nobody \
	    "... as nobody, from /var/cache/dbgmirror-quickstart"
	is "$(val package_cache_before)" none "... leaving /var/cache/dbgmirror alone"
	is "$(val postinst)" 0 "postinst configure runs" ||
	    sed 's/^/#   /' "$T/postinst.log"
	like "$(grep '^dbgmirror:' "$ns/etc/passwd")" \
	    '^dbgmirror:x:[1-9][0-9]?[0-9]?:[0-9]+:[^:]*:/var/cache/dbgmirror:/usr/sbin/nologin$' \
	    "... it made the system user dbgmirror (in the namespace's /etc)"
	is "$(val 'dir /var/cache/dbgmirror')" "dbgmirror:dbgmirror 750" \
	    "... and /var/cache/dbgmirror, the user's, mode 750"
	is "$(val 'dir /var/lib/dbgmirror/uploads')" "dbgmirror:dbgmirror 750" \
	    "... and /var/lib/dbgmirror/uploads"
	is "$(val enabled)" yes "... and enabled the unit"
	ok "$(grep -q '^dbgmirror:' /etc/passwd && echo 1 || echo 0)" \
	    "... and this machine's /etc has no such user"
	is "$(val check_config)" 0 \
	    "the installed daemon accepts the installed configuration (checked as dbgmirror)" ||
	    sed 's/^/#   /' "$T/check.log"
	is "$(val packaged_code)" 200 \
	    "after a quickstart run, the packaged daemon (as dbgmirror, the packaged configuration) serves" ||
	    sed 's/^/#   /' "$T/packaged.log"
	is "$(val index)" dbgmirror "... its index in /var/cache/dbgmirror"
	like "$(val cli_daemon)" "^index: +/var/cache/dbgmirror/index \(the cache-dir of the dbgmirrord at http://127.0.0.1:[0-9]+, pid [0-9]+\)" \
	    "dbgmirror stats as dbgmirror reads the running daemon's index"
	is "$(val cli_config)" \
	    "index:       /var/cache/dbgmirror/index (the cache-dir of $T/stage/etc/dbgmirror/dbgmirror.conf)" \
	    "... and with no daemon, the packaged configuration's"
	is "$(val upload_code)" 201 "an upload to it is taken"
	is "$(val uploads)" 1 "... into /var/lib/dbgmirror/uploads"
	is "$(val postrm)" 0 "postrm purge runs" || sed 's/^/#   /' "$T/postrm.log"
	is "$(val 'enabled after purge')" no "... disables the unit"
	is "$(val 'after purge /var/cache/dbgmirror')" gone "... removes the cache"
	is "$(val 'after purge /var/lib/dbgmirror/uploads')" gone "... and the uploads"
	is "$(val 'after purge /var/lib/dbgmirror/notes.txt')" kept \
	    "... but not a file the package did not make"
	is "$(val 'after purge /var/cache/dbgmirror-quickstart/notes.txt')" kept \
	    "... nor what a quickstart run made"
	like "$(cat "$T/postrm.log")" "kept /var/lib/dbgmirror: it holds files the package did not make" \
	    "... and says what it kept"
else
	skip "postinst, postrm: needs root, unshare, adduser and deb-systemd-helper"
fi

unit=$T/stage/lib/systemd/system/dbgmirrord.service
like "$(sed -n 's/^ExecStart=//p' "$unit")" \
    '^/usr/sbin/dbgmirrord --config /etc/dbgmirror/dbgmirror.conf$' \
    "the unit runs /usr/sbin/dbgmirrord with /etc/dbgmirror/dbgmirror.conf"
is "$(sed -n 's/^User=//p' "$unit")" dbgmirror "... as the user dbgmirror"
like "$("$T/stage/usr/bin/dbgmirror" --version 2>&1)" 'dbgmirror.* 0\.1\.0' \
    "the installed dbgmirror runs"

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
