#!/bin/bash
# dbgmirrord side by side with the reference server, elfutils debuginfod -F,
# both indexing the same fixture tree: for a table of requests both answer
# with the same status class, every success carries the same bytes, and a
# hit has the same X-DEBUGINFOD-SIZE and names the same file.
. "$top_srcdir/tests/integration/lib.sh"

command -v debuginfod >/dev/null || bail "elfutils debuginfod is not installed"
build_fixtures

# -F scans the tree for ELF files; it does not follow symlinks (no -L), so
# it indexes the real files and not the .build-id links to them.
start_debuginfod ref -F "$FX"
REF=$ref_URL
client_env
diag "debuginfod $(debuginfod --version | head -n 1 | awk '{ print $NF }') on port $ref_PORT"

# The reference scans in the background: wait until it serves every
# fixture (debuginfo of all four, executables of the three programs).
ref_indexed() {
	local id
	for id in "$ID_prog_a" "$ID_prog_b" "$ID_prog_c" "$ID_shapes"; do
		[ "$(code "$REF/buildid/$id/debuginfo")" = 200 ] || return 1
	done
	for id in "$ID_prog_a" "$ID_prog_b" "$ID_prog_c"; do
		[ "$(code "$REF/buildid/$id/executable")" = 200 ] || return 1
	done
}
wait_until 60 ref_indexed || { cat "$ref_LOG"; bail "debuginfod did not index the fixtures"; }
diag "debuginfod metrics: $(curl -s "$REF/metrics" |
    grep -E '^(found_debuginfo_total|found_executable_total|scanned_files_total)' |
    tr '\n' ' ')"

start_daemon d --scan-dir "$FX"
OURS=$d_URL

# fetch BASE PATH TAG: body in $T/TAG.body, head in $T/TAG.head; status.
fetch() {
	curl -s --max-time 10 --path-as-is -o "$T/$3.body" -D "$T/$3.head" \
	    -w '%{http_code}' "$1$2"
}
hdr() {
	tr -d '\r' <"$T/$1.head" | sed -n "s/^$2: //Ip" | head -n 1
}
buildid_of() {
	readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }'
}

# compare PATH KIND: KIND is "file" (a hit: same class, same bytes),
# "miss" (same status class), "error" (both refuse: neither is 2xx) or
# "banner" (both 2xx; the text names each server, so bodies differ).
compare() {
	local path=$1 kind=$2 rc oc
	rc=$(fetch "$REF" "$path" ref)
	oc=$(fetch "$OURS" "$path" ours)
	case $kind in
	error)
		[ "${rc:0:1}" != 2 ] && [ "${oc:0:1}" != 2 ]
		ok $? "$path: both refuse (debuginfod $rc, dbgmirrord $oc)"
		[ "$rc" = "$oc" ] ||
		    diag "  exact codes differ: debuginfod $rc \"$(head -c 80 "$T/ref.body")\", dbgmirrord $oc \"$(head -c 80 "$T/ours.body" | tr -d '\n')\""
		return
		;;
	banner)
		[ "${rc:0:1}" = 2 ] && [ "${oc:0:1}" = 2 ]
		ok $? "$path: both 2xx (debuginfod $rc, dbgmirrord $oc)"
		diag "  banners: \"$(head -n 1 "$T/ref.body")\" / \"$(head -n 1 "$T/ours.body")\""
		return
		;;
	esac
	is "${oc:0:1}xx" "${rc:0:1}xx" "$path: same status class (debuginfod $rc, dbgmirrord $oc)"
	[ "$kind" = file ] || return
	if [ "${rc:0:1}" != 2 ] || [ "${oc:0:1}" != 2 ]; then
		ok 1 "$path: both serve it"
		return
	fi
	if cmp -s "$T/ref.body" "$T/ours.body"; then
		ok 0 "$path: byte-identical bodies ($(wc -c <"$T/ours.body") bytes)"
		return
	fi
	# Several files may legitimately carry one build-id; then the two
	# servers may pick different ones, and the build-ids must agree.
	local rid oid
	rid=$(buildid_of "$T/ref.body")
	oid=$(buildid_of "$T/ours.body")
	[ -n "$rid" ] && [ "$rid" = "$oid" ]
	ok $? "$path: different files, same build-id ($rid / $oid)"
	diag "  debuginfod served $(hdr ref x-debuginfod-file), dbgmirrord $(hdr ours x-debuginfod-file)"
}

for id in "$ID_prog_a" "$ID_prog_b" "$ID_prog_c" "$ID_shapes"; do
	compare "/buildid/$id/debuginfo" file
done
for id in "$ID_prog_a" "$ID_prog_b" "$ID_prog_c"; do
	compare "/buildid/$id/executable" file
done
compare "/buildid/$ID_shapes/executable" miss
for sec in .debug_info .debug_line .text; do
	compare "/buildid/$ID_prog_a/section/$sec" file
done
compare "/buildid/$ID_prog_a/section/.no_such_section" miss
compare /buildid/0123456789abcdef0123456789abcdef01234567/debuginfo miss
compare /buildid/zz/debuginfo error
compare "/buildid/$ID_prog_a/foo" error
compare / banner

# The metadata headers of a hit.
fetch "$REF" "/buildid/$ID_prog_a/debuginfo" ref >/dev/null
fetch "$OURS" "/buildid/$ID_prog_a/debuginfo" ours >/dev/null
is "$(hdr ours x-debuginfod-size)" "$(hdr ref x-debuginfod-size)" \
    "a hit: the same X-DEBUGINFOD-SIZE"
is "$(hdr ours content-length)" "$(hdr ref content-length)" \
    "a hit: the same Content-Length"
is "$(hdr ours last-modified)" "$(hdr ref last-modified)" \
    "a hit: the same Last-Modified (the file's mtime)"
rf=$(hdr ref x-debuginfod-file)
of=$(hdr ours x-debuginfod-file)
is "${of##*/}" "${rf##*/}" "a hit: X-DEBUGINFOD-FILE names the same file"
[ "$rf" = "$of" ] ||
    diag "  X-DEBUGINFOD-FILE: debuginfod \"$rf\", dbgmirrord \"$of\""
is "$(hdr ours content-type)" "$(hdr ref content-type)" \
    "a hit: the same Content-Type"

fetch "$REF" "/buildid/$ID_prog_a/section/.debug_info" ref >/dev/null
fetch "$OURS" "/buildid/$ID_prog_a/section/.debug_info" ours >/dev/null
is "$(hdr ours x-debuginfod-size)" "$(hdr ref x-debuginfod-size)" \
    "a section: the same X-DEBUGINFOD-SIZE (the section's)"
rf=$(hdr ref x-debuginfod-file)
of=$(hdr ours x-debuginfod-file)
is "${of##*/}" "${rf##*/}" "a section: both cut it from the same file"

# A client that asks both, in order: gets the same file either way.
for url in "$REF" "$OURS"; do
	DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$T/cc-${url##*:} \
	    timeout 30 debuginfod-find debuginfo "$ID_shapes" >"$T/found" 2>/dev/null
done
cmp -s "$T/cc-$ref_PORT/$ID_shapes/debuginfo" "$T/cc-$d_PORT/$ID_shapes/debuginfo"
ok $? "debuginfod-find gets the same alt file from either server"

kill -TERM "$ref_PID"
wait_until 20 sh -c "! kill -0 $ref_PID" || kill -KILL "$ref_PID" 2>/dev/null
wait "$ref_PID" 2>/dev/null
stop_daemon d
is "$STOP_RC" 0 "dbgmirrord: SIGTERM, exit status 0"
done_testing
