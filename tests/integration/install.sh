#!/bin/bash
# make install (into DESTDIR): the programs, the man pages, the systemd
# unit with this build's paths, and the example configuration -- which
# never replaces an edited one (the example then goes beside it), neither
# does make uninstall remove it.  The unit's hardening is rated by
# systemd-analyze security.
. "$top_srcdir/tests/integration/lib.sh"

root=$T/root
inst() {
	make -s -C "$top_builddir" "$1" DESTDIR="$root" >"$T/make-$1.log" 2>&1
}

inst install
ok $? "make install DESTDIR=..."
conf=$(find "$root" -path '*/dbgmirror/dbgmirror.conf' | head -n 1)
unit=$(find "$root" -name dbgmirrord.service | head -n 1)
ok "$([ -n "$conf" ] && cmp -s "$conf" "$top_srcdir/conf/dbgmirror.conf" && echo 0 || echo 1)" \
    "the example configuration is installed"
ok "$([ -n "$unit" ] && echo 0 || echo 1)" "so is the systemd unit"
case $unit in
*/lib/systemd/system/dbgmirrord.service) ok 0 "... in lib/systemd/system" ;;
*) ok 1 "... in lib/systemd/system (it is at '$unit')" ;;
esac
exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
ok "$([ -x "$root$exe" ] && echo 0 || echo 1)" \
    "its ExecStart names the installed daemon ($exe)"
like "$(sed -n 's/^ExecStart=//p' "$unit")" "--config ${conf#"$root"}\$" \
    "... and the installed configuration"
is "$(grep -c '@[a-z]*@' "$unit")" 0 "no placeholder left in it"
is "$(sed -n 's/^Type=//p' "$unit")" notify "Type=notify"
for m in man1/dbgmirror.1 man5/dbgmirror.conf.5 man8/dbgmirrord.8; do
	is "$(find "$root" -path "*/$m" | wc -l)" 1 "man page $m"
done

if command -v systemd-analyze >/dev/null; then
	score=$(systemd-analyze security --offline=yes "$unit" 2>/dev/null |
	    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
	diag "systemd-analyze security: $score"
	ok "$(awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 2.0) }' && echo 0 || echo 1)" \
	    "systemd-analyze security rates the unit 2.0 or better ($score)"
else
	skip "no systemd-analyze"
fi

# An edited configuration survives make install and make uninstall.
echo "listen = 127.0.0.1:9999" >>"$conf"
cp "$conf" "$T/edited"
inst install
ok $? "make install again"
cmp -s "$conf" "$T/edited"
ok $? "the edited configuration is kept"
cmp -s "$conf.example" "$top_srcdir/conf/dbgmirror.conf"
ok $? "... and the example goes beside it"
inst uninstall
ok $? "make uninstall"
cmp -s "$conf" "$T/edited"
ok $? "the edited configuration is still kept"
is "$(find "$root" -type f ! -path "$conf" | wc -l)" 0 "everything else is gone"

done_testing
