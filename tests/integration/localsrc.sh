#!/bin/bash
# /buildid/ID/source/PATH from the local scan directories, as `debuginfod
# -F DIR` serves it: the source files the DWARF of an indexed file names.
# The same answers as elfutils' debuginfod -F over the same directory; gdb's
# `list` through the server when gdb cannot read the file itself (a mount
# namespace hides it); and nothing outside the source roots, whatever the
# DWARF names: a path outside, a link out of the root, "..".
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
client_env
src=$T/fx/src

# An ELF file whose line table names files it must not reach: /etc/passwd
# itself, and a link under the root that leads out of it.
mkdir -p "$T/fx/evil"
ln -s /etc/passwd "$src/escape.c"
cat >"$T/fx/evil/evil.c" <<EOF
#line 1 "/etc/passwd"
int outside(void) { return 1; }
#line 1 "$src/escape.c"
int linked(void) { return 2; }
int main(void) { return outside() + linked(); }
EOF
cc -g -O0 -Wl,--build-id=sha1 -o "$T/fx/evil/evil" "$T/fx/evil/evil.c" ||
    bail "cc failed"
ID_evil=$(readelf -n "$T/fx/evil/evil" | awk '/Build ID:/ { print $3; exit }')

start_daemon d --scan-dir "$T/fx"
start_debuginfod ref -F "$T/fx"
wait_until 60 sh -c "grep -q 'fts traversed' '$ref_LOG'" ||
    diag "debuginfod did not say its traversal ended"

# prog_c: unstripped; prog_a: a split debug file whose DWARF is partly in
# the dwz alt file.
for p in prog_c prog_a; do
	eval "id=\$ID_$p"
	dfind d source "$id" "$src/$p.c"
	ok $? "$p.c through dbgmirrord"
	cmp -s "$FOUND" "$src/$p.c"
	ok $? "... byte-identical to the file"
	mine=$FOUND
	dfind ref source "$id" "$src/$p.c"
	ok $? "$p.c through debuginfod -F"
	cmp -s "$FOUND" "$mine"
	ok $? "... the same answer as dbgmirrord's"
done
access_log_has d "\"GET /buildid/$ID_prog_c/source$src/prog_c.c\" 200 [0-9]+ [0-9.]+ms HIT local"
ok $? "the access log: a local hit"

# gdb in a mount namespace where the sources are hidden: `list` only works
# through the server.
if unshare -m --propagation private true 2>/dev/null; then
	OUT=$(DEBUGINFOD_URLS=$d_URL DEBUGINFOD_CACHE_PATH=$T/gdb-cache \
	    timeout 60 unshare -m --propagation private sh -c '
		mount -t tmpfs none "$1" || exit 9
		exec gdb -nx -batch -iex "set debuginfod enabled on" \
		    -ex "list main" "$2"' sh "$src" "$FX/usr/bin/prog_c" \
	    2>&1 </dev/null)
	like "$OUT" 'main\(int argc, char \*\*argv\)' \
	    "gdb list main, the source hidden: through the server"
	access_log_has d "\"GET /buildid/$ID_prog_c/source$src/prog_c.c\" 200 .*elfutils|GNU gdb"
	ok $? "... which gdb asked for it"
else
	skip 2 "no mount namespace here (unshare -m)"
fi

# Nothing outside the roots.
is "$(code "$d_URL/buildid/$ID_evil/source/etc/passwd")" 404 \
    "a path the DWARF names outside the source roots: 404"
is "$(code "$d_URL/buildid/$ID_evil/source$src/escape.c")" 404 \
    "a link under the root that leads out of it: 404"
like "$(code "$d_URL/buildid/$ID_prog_c/source$src/../../../../../../etc/passwd")" \
    '^40[04]$' "... and '..' out of a named path: 400 or 404"
is "$(code "$d_URL/buildid/$ID_prog_a/source$src/prog_c.c")" 404 \
    "a file another build-id names: 404"

# source-root none: no local sources at all.
start_daemon n --scan-dir "$T/fx" --source-root none
is "$(code "$n_URL/buildid/$ID_prog_c/source$src/prog_c.c")" 404 \
    "source-root none: 404"
done_testing
