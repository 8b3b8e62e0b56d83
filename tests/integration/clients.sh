#!/bin/bash
# Real clients against dbgmirrord: elfutils debuginfod-find fetches every
# artifact kind byte-identical, and gdb (with debuginfod enabled) resolves
# functions and types of stripped programs -- including the struct that dwz
# moved into the alt file, which gdb can only get by its build-id through
# the server.  The same gdb run against a server without the files must
# fail, so the positive checks mean something.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
start_daemon d --scan-dir "$FX"
dbg=$FX/usr/lib/debug
mkdir -p "$T/empty" "$T/noalt/usr/lib/debug"
start_daemon none --scan-dir "$T/empty"
# Everything but the dwz alt file.
cp "$dbg/prog_a.debug" "$dbg/prog_b.debug" "$T/noalt/usr/lib/debug/"
start_daemon noalt --scan-dir "$T/noalt"
client_env

# ------------------------------------------------------------------- gdb

gdb_run d "$FX/usr/bin/prog_a" 'info line perimeter_a' \
    'info functions perimeter' 'ptype struct shape'
like "$OUT" 'Line [0-9]+ of "prog_a\.c"' \
    "gdb: perimeter_a resolves to a line of prog_a.c (stripped prog_a)"
like "$OUT" '[0-9]+:[[:space:]]+static int perimeter_a\(const struct shape \*\);' \
    "gdb: info functions lists perimeter_a with its debug type"
like "$OUT" 'type = struct shape \{' "gdb: ptype struct shape"
for f in 'int sides;' 'double length;' 'const char \*name;'; do
	like "$OUT" "$f" "... with the field '$f' (from the dwz alt file)"
done
# gdb runs before any other client here, so these lines are gdb's.
access_log_has d "\"GET /buildid/$ID_prog_a/debuginfo\" 200 $(stat -c %s "$dbg/prog_a.debug") "
ok $? "the access log shows gdb fetching prog_a's debuginfo"
access_log_has d "\"GET /buildid/$ID_shapes/debuginfo\" 200 $(stat -c %s "$dbg/.dwz/shapes.debug") "
ok $? "... and the alt file, by its build-id, all of it"

gdb_run d "$FX/usr/bin/prog_b" 'info line area_b' 'info functions area' \
    'ptype struct shape'
like "$OUT" 'Line [0-9]+ of "prog_b\.c"' \
    "gdb: area_b resolves to a line of prog_b.c (stripped prog_b)"
like "$OUT" '[0-9]+:[[:space:]]+static double area_b\(const struct shape \*\);' \
    "gdb: info functions lists area_b with its debug type"
like "$OUT" 'type = struct shape \{' "gdb: ptype struct shape for prog_b"
like "$OUT" 'const char \*name;' "... with its fields"
access_log_has d "\"GET /buildid/$ID_prog_b/debuginfo\" 200 "
ok $? "the access log shows prog_b's debuginfo fetched"
log_count() {
	[ "$(grep -c -- "$2" "$1")" -ge "$3" ]
}
wait_until 5 log_count "$d_LOG" "\"GET /buildid/$ID_shapes/debuginfo\" 200 " 2
ok $? "... and the alt file again (a fresh client cache)"

strip --strip-all -o "$T/prog_c" "$FX/usr/bin/prog_c"
gdb_run none "$T/prog_c" 'info line count_words_c'
if printf '%s' "$OUT" | grep -q 'Line [0-9]* of "prog_c\.c"'; then
	ok 1 "gdb: the stripped copy of prog_c has no line info of its own"
else
	ok 0 "gdb: the stripped copy of prog_c has no line info of its own"
fi
gdb_run d "$T/prog_c" 'info line count_words_c'
like "$OUT" 'Line [0-9]+ of "prog_c\.c"' \
    "gdb: count_words_c in a stripped copy of prog_c, through the server"
access_log_has d "\"GET /buildid/$ID_prog_c/debuginfo\" 200 "
ok $? "... whose debuginfo is the unstripped prog_c"

# The negative control: the same commands against a server without files.
gdb_run none "$FX/usr/bin/prog_a" 'info line perimeter_a' \
    'info functions perimeter' 'ptype struct shape'
if printf '%s' "$OUT" | grep -Eq 'Line [0-9]+ of "prog_a\.c"'; then
	ok 1 "gdb without the files: no line for perimeter_a"
else
	ok 0 "gdb without the files: no line for perimeter_a"
fi
if printf '%s' "$OUT" | grep -q 'double length;'; then
	ok 1 "gdb without the files: no struct shape"
else
	ok 0 "gdb without the files: no struct shape"
fi
access_log_has none "\"GET /buildid/$ID_prog_a/debuginfo\" 404 "
ok $? "... the empty server was asked and said 404"

# With prog_a.debug but not the alt file, gdb gets the debuginfo and still
# knows nothing: the struct, and even the line table's unit, are in the alt
# file, which is what the server provided by build-id above.
gdb_run noalt "$FX/usr/bin/prog_a" 'info line perimeter_a' \
    'ptype struct shape'
like "$OUT" "could not find '\.gnu_debugaltlink' file" \
    "gdb with the debuginfo but without the alt file: cannot find it"
if printf '%s' "$OUT" | grep -q 'double length;'; then
	ok 1 "... and has no struct shape"
else
	ok 0 "... and has no struct shape"
fi
access_log_has noalt "\"GET /buildid/$ID_shapes/debuginfo\" 404 "
ok $? "... it asked for the alt file by build-id (404 there)"

# ------------------------------------------------------- debuginfod-find

check_find d "the split debuginfo of prog_a" "$dbg/prog_a.debug" \
    debuginfo "$ID_prog_a"
check_find d "the stripped executable of prog_a" "$FX/usr/bin/prog_a" \
    executable "$ID_prog_a"
check_find d "the dwz alt file" "$dbg/.dwz/shapes.debug" \
    debuginfo "$ID_shapes"
check_find d "prog_c, its own debuginfo" "$FX/usr/bin/prog_c" \
    debuginfo "$ID_prog_c"
check_find d "prog_c, its own executable" "$FX/usr/bin/prog_c" \
    executable "$ID_prog_c"
dump_section "$dbg/prog_a.debug" .debug_info "$T/debug_info"
check_find d "the .debug_info section of prog_a" "$T/debug_info" \
    section "$ID_prog_a" .debug_info

dfind d debuginfo 0123456789abcdef0123456789abcdef01234567
rc=$?
[ "$rc" -ne 0 ]
ok $? "debuginfod-find of an unknown id: non-zero exit ($rc)"
is "$FOUND" "" "... and no path"
! dfind none debuginfo "$ID_prog_a"
ok $? "debuginfod-find against a server without the files fails"

stop_daemon noalt
stop_daemon none
stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit status 0"
done_testing
