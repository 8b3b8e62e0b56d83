#!/bin/bash
# A real elfutils debuginfod as the upstream, slowed the way a large package
# slows it: its members sit behind 2 GiB of a .deb, so it sends nothing
# until it has read that far.  The mirror tells an upstream at work (it
# answers "GET /") from one that answers nothing at all, waits for the
# first, lets a fill whose client gave up finish in the background, and
# answers an upstream that is gone with 502 and Retry-After, never 404.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
client_env

# debug_of ID: the file in the fixture tree with the debuginfo of ID.
debug_of() {
	if [ "$1" = "$ID_prog_c" ]; then
		echo "$FX/usr/bin/prog_c" # not stripped
	else
		echo "$FX/usr/lib/debug/.build-id/${1:0:2}/${1:2}.debug"
	fi
}

# The package, a .deb whose data.tar holds an incompressible filler (AES-CTR
# of zeros) first, then the debug files.  It is written as it is made: the
# ar header of data.tar, the filler's tar header (from a sparse file of
# that size), the filler streamed, then a tar of the debug files.
mkdir -p "$T/deb/root/usr/lib/debug" "$T/deb/control" "$T/pkgs"
for id in "$ID_prog_a" "$ID_prog_b" "$ID_prog_c"; do
	cp "$(debug_of "$id")" "$T/deb/root/usr/lib/debug/$id.debug"
done
tar -cf "$T/deb/files.tar" -C "$T/deb/root" ./usr
truncate -s 2G "$T/deb/aaa-filler"
printf 'Package: slow\nVersion: 1.0\nArchitecture: amd64\nMaintainer: t <t@example.org>\nDescription: debug files behind 2 GiB\n' \
    >"$T/deb/control/control"
tar -czf "$T/deb/control.tar.gz" -C "$T/deb/control" ./control
# ar_member NAME SIZE: the 60-byte header of an ar member.
ar_member() {
	printf '%-16s%-12s%-6s%-6s%-8s%-10s`\n' "$1" 0 0 0 100644 "$2"
}
csize=$(stat -c %s "$T/deb/control.tar.gz")
dsize=$((512 + (2 << 30) + $(stat -c %s "$T/deb/files.tar")))
{
	printf '!<arch>\n'
	ar_member debian-binary 4
	printf '2.0\n'
	ar_member control.tar.gz "$csize"
	cat "$T/deb/control.tar.gz"
	[ $((csize % 2)) -eq 0 ] || printf '\n'
	ar_member data.tar "$dsize"
	tar -cf - -C "$T/deb" ./aaa-filler 2>/dev/null | head -c 512
	openssl enc -aes-128-ctr -pass pass:filler -nosalt -pbkdf2 \
	    </dev/zero 2>/dev/null | head -c 2G
	cat "$T/deb/files.tar"
	[ $((dsize % 2)) -eq 0 ] || printf '\n'
} >"$T/pkgs/slow_1.0_amd64.deb"
rm -f "$T/deb/aaa-filler"
[ "$(dpkg-deb -c "$T/pkgs/slow_1.0_amd64.deb" | grep -c '\.debug$')" -eq 3 ]
ok $? "a .deb of 2 GiB and three debug files behind it"

# scanned NAME: debuginfod NAME has read the package.
scanned() {
	local url
	eval "url=\$${1}_URL"
	curl -s "$url/metrics" | grep -q '^scanned_files_total{source=".deb archive"} 1$'
}

# upstream_up: start debuginfod -U "up" on the package and wait until it
# has read it; again: on the same port and database, which has it already.
upstream_up() {
	DEBUGINFOD_PORT=${UP_PORT:-} start_debuginfod up -U "$T/pkgs"
	[ -n "${UP_PORT:-}" ] && return
	UP_PORT=$up_PORT
	wait_until 120 scanned up || bail "debuginfod did not scan the package"
}

upstream_up
ok 0 "elfutils debuginfod has indexed the package"

# One second of patience before asking whether the upstream is at work:
# reading 2 GiB of a .deb takes debuginfod -U longer than that here.
start_daemon m --scan-dir none --upstream "$up_URL" \
    --upstream-first-byte-timeout 1 --error-ttl 2

# ------------------------------------------------- an upstream at work
t0=$(date +%s.%N)
got=$(curl -s -o "$T/a" -w '%{http_code}' -m 120 \
    "$m_URL/buildid/$ID_prog_a/debuginfo")
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
is "$got" 200 "a member behind 2 GiB of a package: 200 (after $secs s)"
cmp -s "$T/a" "$(debug_of "$ID_prog_a")"
ok $? "... byte-identical"
# Slower than the first-byte timeout (where it was given up before): the
# log says it was waited for, unless its answer beat the "GET /".
lt "$secs" 1.2 &&
    diag "debuginfod answered within the first-byte timeout ($secs s): nothing was waited for"
grep "no answer for /buildid/$ID_prog_a/debuginfo" "$m_LOG" | sed 's/^/# /'
check_find m "the debuginfo" "$(debug_of "$ID_prog_a")" debuginfo "$ID_prog_a"

# --------------------------------- a client that gives up; the fill goes on
# A new debuginfod on the same port: its cache of extracted files is empty.
kill -TERM "$up_PID"
wait "$up_PID" 2>/dev/null
upstream_up
curl -s -o /dev/null -m 0.3 "$m_URL/buildid/$ID_prog_b/debuginfo"
rc=$?
if [ "$rc" -ne 28 ]; then
	skip "debuginfod answered within 0.3 s (curl $rc): no client gave up"
else
	ok 0 "a client gives up after 0.3 s"
fi
wait_until 120 sh -c "curl -s -D - -o /dev/null '$m_URL/buildid/$ID_prog_b/debuginfo' | grep -qi '^X-Cache: HIT'"
ok $? "... yet the fill completed in the background: the next request is a hit"
curl -s -o "$T/b" "$m_URL/buildid/$ID_prog_b/debuginfo"
cmp -s "$T/b" "$(debug_of "$ID_prog_b")"
ok $? "... byte-identical"
is "$(metric "dbgmirror_upstream_requests_total{upstream=\"$up_URL\"}" "$m_URL")" 2 \
    "... one upstream request for each of the two ids"

# ------------------------------------- an upstream that answers nothing
# Stopped, its socket still accepts connections: no answer at all, and no
# answer to "GET /" either.
kill -STOP "$up_PID"
t0=$(date +%s.%N)
got=$(curl -s -o /dev/null -D "$T/c.h" -w '%{http_code}' -m 60 \
    "$m_URL/buildid/$ID_prog_c/debuginfo")
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
is "$got" 502 "a stopped upstream: 502"
lt "$secs" 30
ok $? "... within seconds ($secs s), not the whole fill's deadline"
curl -s -o /dev/null -D "$T/c2.h" "$m_URL/buildid/$ID_prog_c/debuginfo"
like "$(head -n 1 "$T/c2.h")" ' 502' "the failure remembered: 502 again, never a 404"
like "$(header Retry-After "$T/c2.h")" '^[12]$' "... with Retry-After within the error TTL (2 s)"
kill -CONT "$up_PID"
wait_until 120 sh -c "[ \"\$(curl -s -o '$T/c' -w '%{http_code}' -m 60 '$m_URL/buildid/$ID_prog_c/debuginfo')\" = 200 ]"
ok $? "the upstream back and the error TTL over: 200"
cmp -s "$T/c" "$(debug_of "$ID_prog_c")"
ok $? "... byte-identical"

stop_daemon m
is "$STOP_RC" 0 "SIGTERM: exit 0"
done_testing
