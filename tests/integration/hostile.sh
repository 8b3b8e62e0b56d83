#!/bin/bash
# What a hostile test broke (issue 16), each kept broken no more: answers
# whose replayed headers are long (an upstream's X-DEBUGINFOD-* lines, a
# package member's long path) served on the first request and as cache
# hits; header values with control or 8-bit bytes not replayed.
. "$top_srcdir/tests/integration/lib.sh"

# hdr NAME FILE: the value of header NAME in a saved head.
hdr() {
	tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | head -n 1
}

# ------------------------------------------- long replayed header lines

id_pad=5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a
bin_pad=$(mkbin $id_pad)
for pad in 1800 1900; do
	start_fake "pad$pad" --pad-header "$pad" "$id_pad=ok:$bin_pad"
	start_daemon "p$pad" --scan-dir none --upstream "$(eval echo "\$pad${pad}_URL")"
	url=$(eval echo "\$p${pad}_URL")/buildid/$id_pad/debuginfo
	for round in fill hit; do
		curl -s -D "$T/h" -o "$T/b" "$url"
		is "$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$T/h" | tr -d '\r')" 200 \
		    "$pad bytes of X-DEBUGINFOD-PAD, $round: 200"
		is "$(hdr X-DEBUGINFOD-PAD "$T/h" | wc -c)" $((pad + 1)) \
		    "... with the header replayed whole"
		cmp -s "$T/b" "$bin_pad"
		ok $? "... and the right bytes"
	done
	like "$(hdr X-Cache "$T/h")" '^HIT$' "... the second from the cache"
	stop_daemon "p$pad"
done

# A header too long to keep (over 2 KiB of them) is dropped, not fatal.
start_fake pad4k --pad-header 4000 "$id_pad=ok:$bin_pad"
start_daemon p4k --scan-dir none --upstream "$pad4k_URL"
for round in fill hit; do
	curl -s -D "$T/h" -o "$T/b" "$p4k_URL/buildid/$id_pad/debuginfo"
	is "$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$T/h" | tr -d '\r')/$(hdr X-DEBUGINFOD-PAD "$T/h" | wc -c)" \
	    200/0 "4000 bytes of one header, $round: 200 without it"
done
stop_daemon p4k

# 8-bit bytes in a value: the line is not replayed; the rest is.
start_fake pad8 --pad-header 16 --pad-byte 233 "$id_pad=ok:$bin_pad"
start_daemon p8 --scan-dir none --upstream "$pad8_URL"
curl -s -D "$T/h" -o "$T/b" "$p8_URL/buildid/$id_pad/debuginfo"
is "$(hdr X-DEBUGINFOD-PAD "$T/h" | wc -c)" 0 \
    "a value with 8-bit bytes is not replayed"
like "$(hdr X-DEBUGINFOD-FILE "$T/h")" "^/fake/" "... the other headers are"
stop_daemon p8

# -------------------------------------------------- secrets stay secret

# Userinfo in an upstream URL and upstream-header values appear in no
# answer, no metric and no log line, whether the upstream fails or serves.
id_ok=5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b5b
id_fail=5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c
start_fake sec "$id_ok=ok:$(mkbin $id_ok)" "$id_fail=status:503"
secret_url=http://agent:Pa55w0rdXYZ@127.0.0.1:$sec_PORT
start_daemon s --scan-dir none --breaker-failures 100 --upstream "$secret_url" \
    --upstream-header "$secret_url Authorization: Bearer T0kenABC"
is "$(code "$s_URL/buildid/$id_ok/debuginfo")" 200 "an upstream with credentials serves"
grep -q "auth=\"Bearer T0kenABC\"" "$sec_LOG"
ok $? "... which get its header"
curl -s -o "$T/sec.502" "$s_URL/buildid/$id_fail/debuginfo"
curl -s -o "$T/sec.again" "$s_URL/buildid/$id_fail/debuginfo"
curl -s -o "$T/sec.hit" -D "$T/sec.hit.h" "$s_URL/buildid/$id_ok/debuginfo"
curl -s -o "$T/sec.metrics" "$s_URL/metrics"
like "$(cat "$T/sec.502")" "127\.0\.0\.1:$sec_PORT" \
    "the failure's answer names the upstream ..."
grep -q "upstream=\"http://127\.0\.0\.1:$sec_PORT\"" "$T/sec.metrics"
ok $? "... and so do its metrics"
stop_daemon s
! grep -l -e Pa55w0rdXYZ -e T0kenABC "$T/sec.502" "$T/sec.again" \
    "$T/sec.hit.h" "$T/sec.metrics" "$s_LOG"
ok $? "... without the password or the token: answers, metrics, log"

# ------------------------------------------- redirects and admin actions

id_r=5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e
id_r2=5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f5f
id_r3=6060606060606060606060606060606060606060
id_r4=6161616161616161616161616161616161616161
# Each redirect leads to a file with the id asked for, so that only the
# redirect policy can refuse it.
start_fake other "*=ok:$(mkbin $id_r2)"
own=$(pick_port)
start_fake redir \
    "$id_r=redirect:http://127.0.0.1:$own/admin/purge?negative" \
    "$id_r2=redirect:$other_URL/buildid/$id_r2/debuginfo" \
    "$id_r3=redirect:/buildid/$id_r4/debuginfo" \
    "$id_r4=ok:$(mkbin $id_r3)"
# Even with upstream-redirects = any: never to this server itself.
start_daemon ra --scan-dir none --listen "127.0.0.1:$own" \
    --upstream "$redir_URL" --upstream-redirects any --error-ttl 0
curl -s -o "$T/ra.body" -w '%{http_code}' "$ra_URL/buildid/$id_r/debuginfo" >"$T/ra.code"
is "$(cat "$T/ra.code")" 502 "an upstream redirecting to our own admin endpoint: 502"
like "$(cat "$T/ra.body")" "redirect to http://127.0.0.1:$own/admin/purge.* refused" \
    "... saying the redirect was refused"
! grep -q '"[A-Z]* /admin/purge' "$ra_LOG"
ok $? "... and nothing reached the admin endpoint"
is "$(code "$ra_URL/buildid/$id_r2/debuginfo")" 200 \
    "upstream-redirects = any: to another server, followed"
stop_daemon ra
start_daemon rs --scan-dir none --upstream "$redir_URL" --error-ttl 0
is "$(code "$rs_URL/buildid/$id_r2/debuginfo")" 502 \
    "by default (same-host): to another server (port), refused"
is "$(code "$rs_URL/buildid/$id_r3/debuginfo")" 200 \
    "... on the same server, followed"
stop_daemon rs
start_daemon rn --scan-dir none --upstream "$redir_URL" --error-ttl 0 \
    --upstream-redirects none
is "$(code "$rn_URL/buildid/$id_r3/debuginfo")" 502 \
    "upstream-redirects = none: not even on the same server"
stop_daemon rn

# Admin actions: POST only (a redirect, a crawler or a page cannot GET
# them), and with admin-token the bearer token.
printf '  s3cr3t-admin \n' >"$T/admin.token"
start_daemon ad --scan-dir none --admin-token "$T/admin.token"
get_h() { curl -s -D "$T/ad.h" -o "$T/ad.b" -w '%{http_code}' "$@"; }
is "$(get_h "$ad_URL/admin/purge?negative")" 405 "GET /admin/purge: 405"
is "$(hdr Allow "$T/ad.h")" POST "... Allow: POST"
is "$(get_h -X POST "$ad_URL/admin/purge?negative")" 401 \
    "POST without the token: 401"
is "$(get_h -X POST -H 'Authorization: Bearer wrong' "$ad_URL/admin/purge?negative")" \
    401 "... with a wrong one: 401"
is "$(get_h -X POST -H 'Authorization: Bearer s3cr3t-admin' "$ad_URL/admin/purge?negative")" \
    200 "... with the token: 200"
is "$(get_h -X POST "$ad_URL/buildid/$id_r/debuginfo")" 405 \
    "POST anywhere else: 405"
is "$(hdr Allow "$T/ad.h")" "GET, HEAD" "... Allow: GET, HEAD"
stop_daemon ad

# metrics-access: /metrics like the admin endpoint.
start_daemon mx --scan-dir none --metrics-access none
is "$(code "$mx_URL/metrics")" 403 "metrics-access none: /metrics answers 403"
stop_daemon mx
start_daemon my --scan-dir none
is "$(code "$my_URL/metrics")" 200 "by default (any) it is open"
stop_daemon my

# ------------------------------------------------- a trickling upstream

# 10 bytes/s never stalls, but is far below upstream-min-rate: the client
# gets its error after the stall timeout's window, not upstream-timeout.
id_tr=5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d
start_fake trickle --rate 10 "$id_tr=trickle:$(mkbin $id_tr)"
start_daemon tr --scan-dir none --upstream "$trickle_URL" \
    --upstream-stall-timeout 2 --upstream-timeout 300 --upstream-retries 0
t0=$SECONDS
code=$(curl -s -o "$T/tr.body" -w '%{http_code}' -m 120 \
    "$tr_URL/buildid/$id_tr/debuginfo")
is "$code" 502 "a 10 bytes/s upstream: 502"
like "$(cat "$T/tr.body")" "slower than 1024 bytes/s for 2s" "... saying why"
[ $((SECONDS - t0)) -lt 120 ]
ok $? "... long before upstream-timeout (300 s): $((SECONDS - t0)) s"
stop_daemon tr
"$DBGMIRRORD" --no-config --check-config \
    --upstream "$trickle_URL min-rate=0" >"$T/mr.out" 2>&1
like "$(cat "$T/mr.out")" "min-rate= expects bytes per second" \
    "a per-upstream min-rate of 0 is refused, saying why"

# ----------------------------------------- a package member's long path

build_fixtures
long=/usr/lib/debug/usr/lib
while [ ${#long} -lt 1650 ]; do
	long=$long/a-directory-name-of-some-length-0123456789
done
mkdir -p "$T/deb/DEBIAN" "$T/deb$long" "$T/pkgs"
cp "$FX/usr/lib/debug/.build-id/${ID_prog_a:0:2}/${ID_prog_a:2}.debug" \
    "$T/deb$long/prog_a.debug"
printf 'Package: longpath-dbgsym\nVersion: 1.0\nArchitecture: amd64\nMaintainer: Test <t@example.org>\nDescription: fixture\n' \
    >"$T/deb/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$T/deb" "$T/pkgs/longpath.ddeb" >/dev/null
ok $? "a .ddeb with a member path of $((${#long} + 13)) characters"
start_daemon lp --scan-dir none --scan-packages "$T/pkgs"
wait_scan lp 1
for round in extracted cached; do
	curl -s -D "$T/h" -o "$T/b" "$lp_URL/buildid/$ID_prog_a/debuginfo"
	is "$(sed -n '1s/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$T/h" | tr -d '\r')" 200 \
	    "its debuginfo, $round: 200"
	is "$(hdr X-DEBUGINFOD-FILE "$T/h" | wc -c)" $((${#long} + 13 + 1)) \
	    "... naming the member's whole path"
done
! grep -q ' 500 ' "$lp_LOG"
ok $? "no 500 in the access log"
stop_daemon lp
# ----------------------------- an indexed package replaced by a FIFO

# Nothing the daemon reads from a scanned tree may block it: a package
# turned into a FIFO is an error, the workers stay free, SIGTERM works.
mkdir -p "$T/fifo/DEBIAN" "$T/fifo/usr/lib/debug" "$T/fifopkgs"
cp "$FX/usr/lib/debug/.build-id/${ID_prog_b:0:2}/${ID_prog_b:2}.debug" \
    "$T/fifo/usr/lib/debug/prog_b.debug"
printf 'Package: fifo-dbgsym\nVersion: 1.0\nArchitecture: amd64\nMaintainer: Test <t@example.org>\nDescription: fixture\n' \
    >"$T/fifo/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$T/fifo" "$T/fifopkgs/fifo.ddeb" >/dev/null
# The watch off: it could drop the package's records before the request.
DBGMIRROR_TEST_WATCH_MAX=0 start_daemon ff --scan-dir none \
    --scan-packages "$T/fifopkgs" --rescan-interval 0
wait_scan ff 1
rm "$T/fifopkgs/fifo.ddeb"
mkfifo "$T/fifopkgs/fifo.ddeb"
code=$(timeout 60 curl -s -o /dev/null -w '%{http_code}' -m 50 \
    "$ff_URL/buildid/$ID_prog_b/debuginfo")
like "$code" '^5[0-9][0-9]$' "a member of a package now a FIFO: an error ($code), not a hang"
code=$(timeout 60 curl -s -o /dev/null -w '%{http_code}' -m 50 \
    "$ff_URL/buildid/$ID_prog_b/section/.debug_info")
like "$code" '^[45][0-9][0-9]$' "... a section of it too ($code)"
kill -USR1 "$ff_PID"
wait_scan ff 2
ok $? "... a rescan over the FIFO finishes"
is "$(code "$ff_URL/")" 200 "... and the daemon answers"
stop_daemon ff
is "$STOP_RC" 0 "... and stops on SIGTERM"
# ------------------------------------------------------------ a full disk

# The cache on a 1.5 MiB tmpfs, in a mount namespace of the daemon's own;
# the upstream's answer (2 MiB) cannot be written.  That is this server's
# failure: 503 saying so, counted as such, and never the upstream's error,
# breaker or error entry.
if [ "$(id -u)" -eq 0 ] && unshare -m --propagation private true 2>/dev/null; then
	id_big=6464646464646464646464646464646464646464
	start_fake fullup "$id_big=ok:$(mkbin $id_big 2000000)"
	mkdir -p "$T/df-cache"
	cat >"$T/small-disk" <<EOF2
#!/bin/bash
exec unshare -m --propagation private bash -c \
    'mount -t tmpfs -o size=1536k tmpfs "\$0" && exec "\$@"' \
    "$T/df-cache" "$DBGMIRRORD" "\$@"
EOF2
	chmod +x "$T/small-disk"
	DBGMIRRORD="$T/small-disk" start_daemon df --scan-dir none \
	    --upstream "$fullup_URL" --breaker-failures 1
	code=$(curl -s -o "$T/df.body" -w '%{http_code}' "$df_URL/buildid/$id_big/debuginfo")
	rc=$?
	# The disk fills after the first bytes went out, or before: a cut
	# transfer, or a 503 saying so -- never a complete 200.
	if [ "$code" = 503 ]; then
		like "$(cat "$T/df.body")" "cannot keep it now: No space left on device" \
		    "a fill the cache disk cannot hold: 503 saying why"
	else
		ok $((rc == 0)) "a fill the cache disk cannot hold: cut (curl $rc), never complete"
	fi
	like "$(metric dbgmirror_local_write_errors_total "$df_URL")" '^[1-9]' \
	    "... counted as a local write error"
	is "$(metric "dbgmirror_upstream_breaker_state{upstream=\"$fullup_URL\",state=\"closed\"}" "$df_URL")" 1 \
	    "... the upstream's breaker (1 failure opens it) stays closed"
	is "$(curl -s "$df_URL/metrics" | grep "^dbgmirror_upstream_errors_total{upstream=\"$fullup_URL\"" | grep -vc ' 0$')" \
	    0 "... and no upstream error is counted"
	code "$df_URL/buildid/$id_big/debuginfo" >/dev/null
	is "$(requests_to fullup "$id_big")" 2 \
	    "... nor an error entry written: the next request asks again"
	stop_daemon df

	# A 2.5 MiB cache holding a file of 1.2 MB: a fill of 1.5 MB from the
	# upstream, then one from a package, find the disk full part-way.
	# Each makes room (evicts what is cached) and goes on: 200, whole.
	id_old=6565656565656565656565656565656565656565
	id_up=6666666666666666666666666666666666666666
	id_pkg=6767676767676767676767676767676767676767
	bin_pkg=$(mkbin $id_pkg 1500000)
	mkdir -p "$T/room/usr/lib/debug/.build-id/67" "$T/roompkgs"
	cp "$bin_pkg" "$T/room/usr/lib/debug/.build-id/67/${id_pkg:2}.debug"
	tar --zstd -cf "$T/roompkgs/room-1-1-x86_64.pkg.tar.zst" -C "$T/room" usr
	start_fake roomup "$id_old=ok:$(mkbin $id_old 1200000)" \
	    "$id_up=ok:$(mkbin $id_up 1500000)"
	sed -i 's/size=1536k/size=2560k/' "$T/small-disk"
	rm -rf "$T/df-cache"
	mkdir -p "$T/df-cache"
	DBGMIRRORD="$T/small-disk" start_daemon df --scan-dir none \
	    --scan-packages "$T/roompkgs" --upstream "$roomup_URL" \
	    --min-free-disk 0
	is "$(code "$df_URL/buildid/$id_old/debuginfo" -m 60)" 200 \
	    "a small cache: a 1.2 MB file is cached" ||
	    diag "$(tail -n 5 "$df_LOG")"
	curl -s -m 60 -o "$T/room-up" "$df_URL/buildid/$id_up/debuginfo"
	cmp -s "$T/room-up" "$T/bins/$id_up"
	ok $? "a 1.5 MB fill from the upstream that the disk cannot hold: room is made, and it is whole"
	grep -q "no room for a fill: [1-9][0-9]* cached files" "$df_LOG" &&
	    grep -q "fill of /buildid/$id_up/debuginfo: goes on, now that there is room" "$df_LOG"
	ok $? "... the log says what was evicted, and that the fill went on"
	is "$(requests_to roomup "$id_up")" 1 "... from one upstream request"
	curl -s -m 60 -o "$T/room-pkg" "$df_URL/buildid/$id_pkg/debuginfo"
	cmp -s "$T/room-pkg" "$bin_pkg"
	ok $? "a 1.5 MB member of a package that the disk cannot hold: room is made, and it is whole"
	is "$(grep -c "no room for a fill: [1-9][0-9]* cached files" "$df_LOG")" 2 \
	    "... evicting again"
	stop_daemon df
else
	skip "a full disk: needs root and unshare -m to mount a small tmpfs"
fi
done_testing
