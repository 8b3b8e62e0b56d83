#!/bin/bash
# Decompression passes over a package.  One Arch package of over 1 GiB
# holds a 1 GiB member that is not ELF, then 101 small debug files.  100
# concurrent requests for 100 of them are answered with the right bytes by
# one decompression pass, with package-coextract 0 so that nothing but
# joining the pass can make it one; the other one, asked for after that
# pass, gets a pass of its own.  Scanning the package and passing over it
# twice keep the daemon's peak memory small.
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
# The filler comes first in the tar, so that the pass reads it before any
# debug file: 1 GiB that does not compress (AES-CTR of zeros), so that the
# package file itself is over 1 GiB.  Its tar header is taken from a sparse
# file of the same name and size; the bytes are streamed, never stored.
truncate -s 1G "$T/root/aaa-filler"
mkdir -p "$T/pkgs"
PKG=$T/pkgs/many-1.0-1-x86_64.pkg.tar.zst
# shellcheck disable=SC2086 # the member list is split on purpose
{
	tar -cf - -C "$T/root" aaa-filler 2>/dev/null | head -c 512
	openssl enc -aes-128-ctr -pass pass:filler -nosalt -pbkdf2 \
	    </dev/zero 2>/dev/null | head -c 1G
	tar -cf - -C "$T/root" $files
} | zstd -q -1 >"$PKG"
[ "$(stat -c %s "$PKG")" -gt $((1 << 30)) ] &&
    tar --zstd -tf "$PKG" | grep -c '\.debug$' >"$T/ndebug"
ok $? "a package of over 1 GiB: an incompressible filler, then the debug files"
is "$(cat "$T/ndebug")" $((N + 1)) "... all $((N + 1)) of them"
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
