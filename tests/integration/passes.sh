#!/bin/bash
# Decompression passes over a package.  One Arch package of over 2 GiB
# holds K small debug files, a 2 GiB member that is not ELF, then 102 more
# debug files.  100 concurrent requests for 100 of those are answered with
# the right bytes by one decompression pass, with package-coextract 0 so
# that nothing but joining the pass can make it one; another one, asked for
# after that pass, gets a pass of its own.  Then, while a pass reads the
# filler on its way to the last one, K requests for the members before the
# filler, which it has read past, arrive one after the other: they share
# one more pass.  Scanning the package and passing over it four times keep
# the daemon's peak memory small.  Last, in a small package, a pass claims
# unasked the member clients will ask for next.
. "$top_srcdir/tests/integration/lib.sh"

N=100
K=8
LEAD=$((N + 1)) # after the filler, asked for while the K requests come
R=$T/root/usr/lib/debug/.build-id
mkdir -p "$R" "$T/got"

# The build-ids: 20 bytes, told apart by their last byte pair.
id_of() {
	printf 'feedface0123456789abcdef0123456789ab%04x' "$1"
}

# member I: the path in the package of debug file number I.
member() {
	local id
	id=$(id_of "$1")
	echo "usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
}

for i in $(seq 0 $((LEAD + K))); do
	id=$(id_of "$i")
	mkdir -p "$R/${id:0:2}"
	"$MKELF" --type dyn --build-id "$id" --debug .debug_info:6K \
	    --debug .debug_line:2K "$T/root/$(member "$i")" ||
	    bail "mkelf failed"
done
# The filler comes before all but K debug files in the tar, so that the
# pass reads it before them: 2 GiB that does not compress (AES-CTR of
# zeros), so that the package file itself is over 2 GiB.  Its tar header is
# taken from a sparse file of the same name and size; the bytes are
# streamed, never stored.  The K files before it are a tar without its end
# (two zero blocks, the whole record with -b1).
truncate -s 2G "$T/root/aaa-filler"
mkdir -p "$T/pkgs"
PKG=$T/pkgs/many-1.0-1-x86_64.pkg.tar.zst
# shellcheck disable=SC2046 # the member lists are split on purpose
{
	tar -b1 -cf - -C "$T/root" $(for i in $(seq $((LEAD + 1)) \
	    $((LEAD + K))); do member "$i"; done) | head -c -1024
	tar -cf - -C "$T/root" aaa-filler 2>/dev/null | head -c 512
	openssl enc -aes-128-ctr -pass pass:filler -nosalt -pbkdf2 \
	    </dev/zero 2>/dev/null | head -c 2G
	tar -cf - -C "$T/root" $(for i in $(seq 0 "$LEAD"); do
	    member "$i"; done)
} | zstd -q -1 >"$PKG"
[ "$(stat -c %s "$PKG")" -gt $((2 << 30)) ] &&
    tar --zstd -tf "$PKG" >"$T/listing"
ok $? "a package of over 2 GiB: debug files, an incompressible filler, then more"
is "$(grep -c '\.debug$' "$T/listing")" $((LEAD + K + 1)) \
    "... all $((LEAD + K + 1)) of them"
is "$(grep -n filler "$T/listing" | cut -d: -f1)" $((K + 1)) \
    "... $K of them before the filler"
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
	cmp -s "$T/got/$id" "$T/root/$(member "$i")" || bad=$((bad + 1))
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

# A pass for the lead member, after the filler: once the daemon has read
# 16 MiB more of the package, the pass is in the filler, past the K members
# before it.  Requests for those then come one after the other, in the
# reverse of their order in the package, so that a pass that one of them
# started has read past the next one's member, while the lead's request is
# still unanswered, that is while its pass is still running: that holds
# once every one of them has joined a fill or been answered.
# read_past BEFORE: poll (without forking, to see it as early as can be)
# until the daemon has read 16 MiB more than BEFORE; 60 s at most.
read_past() {
	local key val deadline=$((SECONDS + 60))
	while [ "$SECONDS" -lt "$deadline" ]; do
		while read -r key val; do
			[ "$key" = rchar: ] && break
		done <"/proc/$d_PID/io"
		[ "$val" -gt $(($1 + (16 << 20))) ] && return 0
	done
	return 1
}
# arrived N: N requests have each joined a fill or been answered.
arrived() {
	local answered
	answered=$(find "$T" -maxdepth 1 -name 'code.*' -size +0 | wc -l)
	[ $((answered + $(metric dbgmirror_fills_in_flight "$d_URL"))) \
	    -ge "$1" ]
}
# ask I: a request for debug file I in the background (its process id
# added to ASKED), its status to $T/code.ID once answered.
ASKED=""
ask() {
	local id
	id=$(id_of "$1")
	curl -s -o "$T/got/$id" -w '%{http_code}\n' --max-time 120 \
	    "$d_URL/buildid/$id/debuginfo" >"$T/code.$id" &
	ASKED="$ASKED $!"
}
lead=$(id_of "$LEAD")
rm -f "$T"/code.*
read -r _ before _ <"/proc/$d_PID/io"
ask "$LEAD"
read_past "$before"
ok $? "a pass for a member after the filler reads the filler"
for i in $(seq $((LEAD + K)) -1 $((LEAD + 1))); do
	ask "$i"
done
wait_until 60 arrived $((K + 1))
ok $? "... all $K requests for members it has read past arrive"
test ! -s "$T/code.$lead"
ok $? "... while it runs"
# shellcheck disable=SC2086 # one process id a word
wait $ASKED
is "$(cat "$T/code.$lead")" 200 "the member after the filler: 200"
cmp -s "$T/got/$lead" "$T/root/$(member "$LEAD")"
ok $? "... byte-identical"
bad=0
for i in $(seq $((LEAD + 1)) $((LEAD + K))); do
	id=$(id_of "$i")
	[ "$(cat "$T/code.$id")" = 200 ] &&
	    cmp -s "$T/got/$id" "$T/root/$(member "$i")" || bad=$((bad + 1))
done
is "$bad" 0 "the $K members before it: each 200, byte-identical"
is "$(metric dbgmirror_package_passes_total "$d_URL")" 4 \
    "... out of one more pass"

# Scanning and four passes over 2 GiB: the reader streams, so the peak
# stays far below the package's size.
peak=$(hwm d)
diag "VmHWM: $base KiB after the scan, $peak KiB after the passes"
lt "$peak" $((256 * 1024))
ok $? "peak memory over scan and passes of a 2 GiB package: under 256 MiB"
lt $((peak - base)) $((64 * 1024))
ok $? "... and the passes added under 64 MiB to it"
stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit 0"

# What a pass claims unasked goes to what clients ask for next: with
# package-coextract 1, a pass for an executable claims the debug file of
# its build-id, met last, rather than another debug file met before it.
exe=$(id_of 900)
other=$(id_of 901)
mkdir -p "$T/rank/usr/bin" "$T/rankpkgs"
for i in 900 901; do
	mkdir -p "$(dirname "$T/rank/$(member "$i")")"
	"$MKELF" --type dyn --build-id "$(id_of "$i")" --debug .debug_info:4K \
	    "$T/rank/$(member "$i")" || bail "mkelf failed"
done
"$MKELF" --type dyn --build-id "$exe" --text 4K "$T/rank/usr/bin/prog" ||
    bail "mkelf failed"
tar -cf - -C "$T/rank" usr/bin/prog "$(member 901)" "$(member 900)" |
    zstd -q >"$T/rankpkgs/rank-1.0-1-x86_64.pkg.tar.zst"
start_daemon e --scan-dir none --scan-packages "$T/rankpkgs" \
    --package-coextract 1
is "$(code "$e_URL/buildid/$exe/executable")" 200 "an executable: 200"
curl -s -D "$T/exe.h" -o "$T/exe.debug" "$e_URL/buildid/$exe/debuginfo"
is "$(header X-Cache "$T/exe.h")" HIT \
    "... its debug file, met last, came out in the same pass"
cmp -s "$T/exe.debug" "$T/rank/$(member 900)"
ok $? "... byte-identical"
curl -s -D "$T/other.h" -o /dev/null "$e_URL/buildid/$other/debuginfo"
is "$(header X-Cache "$T/other.h")" MISS \
    "... rather than the debug file of another id, met before it"
stop_daemon e
done_testing
