#!/bin/bash
# Files larger than 2 and 4 GiB (sparse, so they cost no disk): served whole
# with flat memory, and by ranges beyond the 32-bit boundaries.
. "$top_srcdir/tests/integration/lib.sh"

mkdir -p "$T/big"
ID2=a1b2c3d4e5f60718293a4b5c6d7e8f9001122334
ID5=b1b2c3d4e5f60718293a4b5c6d7e8f9001122335
"$MKELF" --type rel --build-id "$ID2" --debug .debug_info:2G "$T/big/two.debug" ||
    bail "mkelf failed"
"$MKELF" --type rel --build-id "$ID5" --debug .debug_info:5G "$T/big/five.debug" ||
    bail "mkelf failed"
size2=$(stat -c %s "$T/big/two.debug")
size5=$(stat -c %s "$T/big/five.debug")
start_daemon d --scan-dir "$T/big"

rss_peak() {
	awk '/^VmHWM:/ { print $2 }' "/proc/$d_PID/status"
}
before=$(rss_peak)

curl -s -D "$T/head" "$d_URL/buildid/$ID2/debuginfo" | cmp -s - "$T/big/two.debug"
ok $? "a 2 GiB debuginfo is served whole and byte-identical"
like "$(tr -d '\r' <"$T/head")" "Content-Length: $size2" \
    "Content-Length is the 64-bit size"
after=$(rss_peak)
diag "peak RSS before ${before} kB, after ${after} kB"
[ $((after - before)) -lt 16384 ]
ok $? "memory stays flat while 2 GiB go out (peak grew < 16 MiB)"

head=$(curl -s -I "$d_URL/buildid/$ID5/debuginfo" | tr -d '\r')
like "$head" "Content-Length: $size5" "HEAD of a 5 GiB file: its size"
like "$head" "X-DEBUGINFOD-SIZE: $size5" "X-DEBUGINFOD-SIZE too"

# Ranges past 2^31 and 2^32, and the last bytes.
for off in 2147483000 4294967000 $((size5 - 700)); do
	curl -s -H "Range: bytes=$off-$((off + 699))" \
	    "$d_URL/buildid/$ID5/debuginfo" -o "$T/part"
	tail -c +$((off + 1)) "$T/big/five.debug" | head -c 700 >"$T/ref"
	cmp -s "$T/part" "$T/ref"
	ok $? "Range at offset $off is exact"
done
# The 1 MiB of pattern bytes at the start of the section, via Range.
curl -s -H "Range: bytes=0-1048575" "$d_URL/buildid/$ID5/debuginfo" |
    cmp -s - <(head -c 1048576 "$T/big/five.debug")
ok $? "the first MiB (ELF header, pattern bytes) is exact"

curl -s "$d_URL/buildid/$ID5/section/.debug_info" -r 4294967290-4294967299 \
    -o "$T/secpart"
is "$(stat -c %s "$T/secpart")" 10 "a range of a 5 GiB section past 2^32"
is "$(code "$d_URL/buildid/$ID5/debuginfo" -H 'X-DEBUGINFOD-MAXSIZE: 4294967296')" \
    406 "MAXSIZE just under the size is 406 (64-bit compare)"
stop_daemon d
is "$STOP_RC" 0 "exit status 0"
done_testing
