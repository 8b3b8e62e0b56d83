#!/bin/bash
# Decompression passes over a package (issue: packages).  One Arch package
# holds a 1 GiB member that is not ELF, then 100 small debug files.  100
# concurrent requests, one for each debug file, are answered with the right
# bytes by one decompression pass, with package-coextract 0 so that nothing
# but joining the pass can make it one; a member asked for after that pass
# gets a pass of its own.  Scanning and extracting the 1 GiB package keep
# the daemon's peak memory small.
. "$top_srcdir/tests/integration/lib.sh"

N=100
R=$T/root/usr/lib/debug/.build-id
mkdir -p "$R" "$T/got"

# The build-ids: 20 bytes, told apart by their last byte pair.
id_of() {
	printf 'feedface0123456789abcdef0123456789ab%04x' "$1"
}

files=""
for i in $(seq 0 "$N"); do
	id=$(id_of "$i")
	mkdir -p "$R/${id:0:2}"
	"$MKELF" --type dyn --build-id "$id" --debug .debug_info:6K \
	    --debug .debug_line:2K "$R/${id:0:2}/${id:2}.debug" ||
	    bail "mkelf failed"
	files="$files usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
done
# The filler comes first in the tar, so the pass reads it before any
# debug file: 1 GiB of zeros, which zstd keeps small on disk.
truncate -s 1G "$T/root/aaa-filler"
mkdir -p "$T/pkgs"
# shellcheck disable=SC2086 # the member list is split on purpose
tar --zstd -cf "$T/pkgs/many-1.0-1-x86_64.pkg.tar.zst" -C "$T/root" \
    aaa-filler $files
ok $? "tar --zstd builds a package of 1 GiB and $((N + 1)) debug files"
rm -f "$T/root/aaa-filler"

# VmHWM NAME: the daemon's peak resident memory, in KiB.
hwm() {
	local pid
	eval "pid=\$${1}_PID"
	awk '$1 == "VmHWM:" { print $2 }' "/proc/$pid/status"
}

start_daemon d --scan-dir none --scan-packages "$T/pkgs" \
    --package-coextract 0
base=$(hwm d)
is "$(metric dbgmirror_package_passes_total "$d_URL")" 0 \
    "no pass before the first request"

# The 100 requests at once, each to its own file.
args=()
for i in $(seq 1 "$N"); do
	id=$(id_of "$i")
	args+=(-o "$T/got/$id" "$d_URL/buildid/$id/debuginfo")
done
curl -s -Z --parallel-immediate --parallel-max "$N" --max-time 60 \
    -w '%{http_code}\n' "${args[@]}" >"$T/codes"
is "$(grep -c '^200$' "$T/codes")" "$N" "$N concurrent requests: $N times 200"
bad=0
for i in $(seq 1 "$N"); do
	id=$(id_of "$i")
	cmp -s "$T/got/$id" "$R/${id:0:2}/${id:2}.debug" || bad=$((bad + 1))
done
is "$bad" 0 "... each with its own member's bytes"
is "$(metric dbgmirror_package_passes_total "$d_URL")" 1 \
    "... out of one decompression pass"
is "$(metric 'dbgmirror_requests_total{endpoint="debuginfo",result="miss"}' \
    "$d_URL")" "$N" "... each counted a miss, none served another's fill"

id=$(id_of 0)
check_find d "a member asked for after the pass" \
    "$R/${id:0:2}/${id:2}.debug" debuginfo "$id"
is "$(metric dbgmirror_package_passes_total "$d_URL")" 2 \
    "... has a pass of its own"
id=$(id_of 7)
curl -s -D "$T/again.h" -o /dev/null "$d_URL/buildid/$id/debuginfo"
is "$(header X-Cache "$T/again.h")" HIT "a member of the first pass: a hit"

# Scanning and two passes over 1 GiB: the reader streams, so the peak
# stays far below the package's size.
peak=$(hwm d)
diag "VmHWM: $base KiB after the scan, $peak KiB after the passes"
lt "$peak" $((256 * 1024))
ok $? "peak memory over scan and passes of a 1 GiB package: under 256 MiB"
lt $((peak - base)) $((64 * 1024))
ok $? "... and the passes added under 64 MiB to it"
stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit 0"
done_testing
