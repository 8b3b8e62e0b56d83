#!/bin/bash
# Serving local files: every artifact kind comes back byte-identical with the
# headers clients rely on; unknown ids are 404; the access log records each.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
start_daemon d --scan-dir "$FX"
dbg=$FX/usr/lib/debug

get() {
	curl -s --max-time 10 -o "$T/body" -D "$T/head" "$@"
}
header() {
	tr -d '\r' <"$T/head" | sed -n "s/^$1: //Ip" | head -n 1
}

get "$d_URL/buildid/$ID_prog_a/debuginfo"
cmp -s "$T/body" "$dbg/prog_a.debug"
ok $? "debuginfo of prog_a is byte-identical"
is "$(header content-type)" "application/octet-stream" "Content-Type"
is "$(header content-length)" "$(stat -c %s "$dbg/prog_a.debug")" \
    "Content-Length is the file size"
is "$(header x-debuginfod-size)" "$(stat -c %s "$dbg/prog_a.debug")" \
    "X-DEBUGINFOD-SIZE is the file size"
is "$(header x-debuginfod-file)" "$dbg/prog_a.debug" \
    "X-DEBUGINFOD-FILE names the real path, not the .build-id symlink"
is "$(header cache-control)" "public" "Cache-Control: public"
is "$(header last-modified)" \
    "$(TZ=GMT date -r "$dbg/prog_a.debug" '+%a, %d %b %Y %H:%M:%S GMT')" \
    "Last-Modified is the file's mtime"
like "$(header etag)" '^"[0-9a-f]+-[0-9a-f]+"$' "a strong ETag"
like "$(header date)" 'GMT$' "Date header"

get "$d_URL/buildid/$ID_prog_a/executable"
cmp -s "$T/body" "$FX/usr/bin/prog_a"
ok $? "executable of prog_a is the stripped binary"

get "$d_URL/buildid/$ID_shapes/debuginfo"
cmp -s "$T/body" "$dbg/.dwz/shapes.debug"
ok $? "the dwz alt file is served under its own build-id"

get "$d_URL/buildid/$ID_prog_c/debuginfo"
cmp -s "$T/body" "$FX/usr/bin/prog_c"
ok $? "an unstripped binary is its own debuginfo"
get "$d_URL/buildid/$ID_prog_c/executable"
cmp -s "$T/body" "$FX/usr/bin/prog_c"
ok $? "... and its own executable"

is "$(code "$d_URL/buildid/$ID_shapes/executable")" 404 \
    "a debug-only file is not an executable"
is "$(code "$d_URL/buildid/0123456789abcdef0123456789abcdef01234567/debuginfo")" \
    404 "an unknown build-id is 404"
upper=$(echo "$ID_prog_a" | tr a-f A-F)
get "$d_URL/buildid/$upper/debuginfo"
cmp -s "$T/body" "$dbg/prog_a.debug"
ok $? "an uppercase build-id is folded to lowercase"

for sec in .debug_info .debug_line .debug_abbrev .gnu_debugaltlink; do
	dump_section "$dbg/prog_a.debug" "$sec" "$T/ref"
	get "$d_URL/buildid/$ID_prog_a/section/$sec"
	cmp -s "$T/body" "$T/ref"
	ok $? "section $sec equals objcopy --dump-section"
	is "$(header x-debuginfod-size)" "$(stat -c %s "$T/ref")" \
	    "section $sec: X-DEBUGINFOD-SIZE is the section size"
done
dump_section "$FX/usr/bin/prog_a" .text "$T/ref"
get "$d_URL/buildid/$ID_prog_a/section/.text"
cmp -s "$T/body" "$T/ref"
ok $? ".text (NOBITS in the debuginfo) comes from the executable"
is "$(code "$d_URL/buildid/$ID_prog_a/section/.no_such_section")" 404 \
    "a section that exists nowhere is 404"

body=$(curl -s "$d_URL/")
like "$body" '^dbgmirror [0-9.]+' "the banner names the server and version"

access_log_has d "\"GET /buildid/$ID_prog_a/debuginfo\" 200 [0-9]+ [0-9.]+ms HIT local"
ok $? "the access log has the hit with status, bytes, duration, result"
access_log_has d "\"GET /buildid/0123456789abcdef0123456789abcdef01234567/debuginfo\" 404 .* MISS"
ok $? "the access log has the miss"

stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit status 0"
done_testing
