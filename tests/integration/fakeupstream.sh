#!/bin/bash
# tests/fakeupstream on its own, with curl as the client: each mode answers
# exactly as documented in tests/fakeupstream.c (the other integration tests
# rely on it), the request log, keep-alive, Range on a 3 GB sparse file,
# many clients at once behind --delay, and a clean exit on SIGTERM.
. "$top_srcdir/tests/integration/lib.sh"
FAKE=$top_builddir/tests/fakeupstream

# get URL [CURL ARGS...]: body in $T/body, head in $T/head, HTTP status in
# $CODE, curl's exit status in $RC, wall time in milliseconds in $MS.
get() {
	local url=$1 t0
	shift
	t0=$(date +%s%N)
	CODE=$(curl -s --max-time 10 -o "$T/body" -D "$T/head" \
	    -w '%{http_code}' "$@" "$url")
	RC=$?
	MS=$((($(date +%s%N) - t0) / 1000000))
}
# header NAME: a header of the last get (the last one, CR removed).
header() {
	tr -d '\r' <"$T/head" | sed -n "s/^$1: //Ip" | tail -n 1
}

i_ok=0123456789abcdef0123456789abcdef01234567
head -c 100000 /dev/urandom >"$T/blob"
head -c 10240 /dev/urandom >"$T/slow"
truncate -s 3G "$T/huge"
printf 'END-MARK' | dd of="$T/huge" bs=1 seek=$((3 * 1024 * 1024 * 1024 - 8)) \
    conv=notrunc status=none
SIZE=100000

# Usage.
"$FAKE" --help >"$T/help" 2>&1
ok $? "--help exits 0"
like "$(cat "$T/help")" 'truncate:PATH' "--help lists the modes"
"$FAKE" aa=nosuchmode >/dev/null 2>&1
is $? 2 "an unknown mode is a usage error"
"$FAKE" aa=ok >/dev/null 2>&1
is $? 2 "ok without a path is a usage error"

start_fake up \
    "$i_ok=ok:$T/blob" \
    "aa=hang" \
    "bb=stall:$T/blob" \
    "cc=html" \
    "dd=truncate:$T/blob" \
    "ee=reset:$T/blob" \
    "ff=status:503" \
    "a1=redirect:/buildid/$i_ok/debuginfo" \
    "a2=redirectloop" \
    "a3=ok:$T/huge"
U=$up_URL
like "$(cat "$T/up.port")" '^[0-9]+$' "the port file holds the port"

# ok: the bytes and the debuginfod headers.
get "$U/buildid/$i_ok/debuginfo"
is "$CODE" 200 "ok: 200"
cmp -s "$T/blob" "$T/body"
ok $? "ok: the body is the file"
is "$(header Content-Length)" "$SIZE" "ok: Content-Length"
is "$(header Content-Type)" application/octet-stream "ok: Content-Type"
is "$(header X-DEBUGINFOD-SIZE)" "$SIZE" "ok: X-DEBUGINFOD-SIZE"
is "$(header X-DEBUGINFOD-FILE)" /fake/blob "ok: X-DEBUGINFOD-FILE"
is "$(header X-DEBUGINFOD-ARCHIVE)" /fake/archive.deb \
    "ok: X-DEBUGINFOD-ARCHIVE"
is "$(header Last-Modified)" \
    "$(TZ=GMT LC_ALL=C date -r "$T/blob" '+%a, %d %b %Y %H:%M:%S GMT')" \
    "ok: Last-Modified is the mtime"
get "$U/buildid/$i_ok/source/usr/src/x.c"
cmp -s "$T/blob" "$T/body"
ok $? "ok: any artifact type of the id"

# Range.
get "$U/buildid/$i_ok/debuginfo" -r 1000-1999
is "$CODE" 206 "bytes=N-M: 206"
is "$(header Content-Range)" "bytes 1000-1999/$SIZE" "bytes=N-M: Content-Range"
tail -c +1001 "$T/blob" | head -c 1000 | cmp -s - "$T/body"
ok $? "bytes=N-M: the right bytes"
get "$U/buildid/$i_ok/debuginfo" -r 99990-
is "$(header Content-Range)" "bytes 99990-99999/$SIZE" "bytes=N-: Content-Range"
tail -c 10 "$T/blob" | cmp -s - "$T/body"
ok $? "bytes=N-: the last bytes"
get "$U/buildid/$i_ok/debuginfo" -r 200000-
is "$CODE" 416 "a range past the end: 416"

# HEAD: the head alone, with the full size.
get "$U/buildid/$i_ok/debuginfo" -I
is "$CODE" 200 "HEAD: 200"
is "$(header Content-Length)" "$SIZE" "HEAD: Content-Length of the file"
r=$(printf 'HEAD /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' \
    "$i_ok" | raw "$up_PORT")
like "$r" $'X-DEBUGINFOD-ARCHIVE: /fake/archive.deb\r\n\r\n$' \
    "HEAD: no body follows the head"

# Unknown ids and other paths.
get "$U/buildid/99999999/debuginfo"
is "$CODE" 404 "unknown id: 404"
is "$(cat "$T/body")" "not found" "unknown id: body"
get "$U/buildid/$i_ok"
is "$CODE" 404 "/buildid/ID without an artifact: 404"
get "$U/"
is "$CODE/$(cat "$T/body")" 200/fakeupstream "/: 200 fakeupstream"

# html, status.
get "$U/buildid/cc/debuginfo"
is "$CODE" 200 "html: 200"
like "$(header Content-Type)" '^text/html' "html: text/html"
like "$(cat "$T/body")" 'Service temporarily unavailable' "html: the page"
is "$(header Content-Length)" "$(stat -c %s "$T/body")" \
    "html: Content-Length is the body's"
get "$U/buildid/ff/debuginfo"
is "$CODE" 503 "status:503 gives 503"

# truncate and reset: half the body, then FIN or RST.
get "$U/buildid/dd/debuginfo"
is "$RC" 18 "truncate: curl sees a partial file"
is "$(stat -c %s "$T/body")" $((SIZE / 2)) "truncate: half the bytes came"
get "$U/buildid/ee/debuginfo"
is "$RC" 56 "reset: curl sees the connection reset"

# hang and stall: curl -m 1 gives up (how fast is curl's business and the
# machine's load, not the fake's).
get "$U/buildid/aa/debuginfo" -m 1
is "$RC" 28 "hang: curl times out"
get "$U/buildid/bb/debuginfo" -m 1
is "$RC" 28 "stall: curl times out"
is "$(header Content-Length)" "$SIZE" "stall: the head came, with the size"

# redirect, redirectloop.
get "$U/buildid/a1/debuginfo"
is "$CODE" 302 "redirect: 302"
is "$(header Location)" "/buildid/$i_ok/debuginfo" "redirect: Location"
get "$U/buildid/a1/debuginfo" -L
cmp -s "$T/blob" "$T/body"
ok $? "redirect: curl -L gets the target's file"
get "$U/buildid/a2/executable?x=1" -L --max-redirs 3
is "$RC" 47 "redirectloop: curl -L --max-redirs 3 fails"
is "$(requests_to up '^GET /buildid/a2/executable\?x=1 ')" 4 \
    "redirectloop: Location is the same target"

# A 3 GB sparse file: the tail, by Range.
get "$U/buildid/a3/debuginfo" -r 3221225400-
is "$CODE" 206 "3 GB file: 206"
is "$(stat -c %s "$T/body")" 72 "3 GB file: 72 bytes from 3221225400"
is "$(tail -c 8 "$T/body")" END-MARK "3 GB file: the last bytes"
is "$(header X-DEBUGINFOD-SIZE)" 3221225472 "3 GB file: X-DEBUGINFOD-SIZE"

# The request log: one line per request, headers recorded.
before=$(wc -l <"$up_LOG")
get "$U/buildid/$i_ok/debuginfo" -H 'X-Forwarded-For: 192.0.2.7' \
    -A 'tester/1.0' -H 'Authorization: Bearer t0k' -r 5-6 \
    -H 'X-DEBUGINFOD-MAXSIZE: 3'
is "$(wc -l <"$up_LOG")" $((before + 1)) "log: one line per request"
is "$(tail -n 1 "$up_LOG")" \
    "GET /buildid/$i_ok/debuginfo xff=\"192.0.2.7\" ua=\"tester/1.0\" range=\"bytes=5-6\" auth=\"Bearer t0k\" maxsize=\"3\"" \
    "log: method, target, xff, ua, range, auth, maxsize"
is "$CODE" 206 "without --maxsize, X-DEBUGINFOD-MAXSIZE is only logged"

# --maxsize: 406 to a limit under the file's size, as debuginfod does.
start_fake lim --maxsize "$i_ok=ok:$T/blob"
blobsize=$(stat -c %s "$T/blob")
get "$lim_URL/buildid/$i_ok/debuginfo" -H "X-DEBUGINFOD-MAXSIZE: $((blobsize - 1))"
is "$CODE" 406 "--maxsize: a limit under the size gets 406"
get "$lim_URL/buildid/$i_ok/debuginfo" -H "X-DEBUGINFOD-MAXSIZE: $blobsize"
is "$CODE" 200 "--maxsize: a limit of the size gets the file"

# --gate: /buildid/ answers wait for the file, "/" does not.
start_fake gated --gate "$T/gate" "$i_ok=ok:$T/blob"
curl -s -o "$T/gated.body" --max-time 60 "$gated_URL/buildid/$i_ok/debuginfo" &
gpid=$!
wait_until 10 sh -c "grep -q '^GET /buildid/' '$gated_LOG'"
ok $? "--gate: the request is in"
is "$(curl -s --max-time 10 "$gated_URL/")" fakeupstream "--gate: / answers meanwhile"
kill -0 "$gpid" 2>/dev/null
ok $? "--gate: the answer waits for the gate"
touch "$T/gate"
wait "$gpid"
cmp -s "$T/gated.body" "$T/blob"
ok $? "--gate: then comes the file"
like "$(grep -m 1 ' /buildid/ff/' "$up_LOG")" 'xff="-" ua="curl/' \
    "log: absent headers are -"

# Keep-alive: curl reuses the connection; pipelined requests are answered
# in order; Connection: close ends it.
n=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects} ' \
    "$U/buildid/$i_ok/debuginfo" "$U/buildid/ff/x")
is "$n" "1 0 " "keep-alive: the second request reuses the connection"
t0=$SECONDS
r=$(printf 'GET /buildid/ff/x HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' |
    raw "$up_PORT" | tr -d '\r')
is "$(printf '%s\n' "$r" | grep '^HTTP/1.1')" \
    "$(printf 'HTTP/1.1 503 Service Unavailable\nHTTP/1.1 200 OK')" \
    "pipelining: both answers, in order"
lt $((SECONDS - t0)) 3
ok $? "Connection: close closes the connection"

stop_daemon up
is "$STOP_RC" 0 "SIGTERM: exit 0"

# trickle, and "*" for every other id.
start_fake slow --rate 4000 "ab=trickle:$T/slow" "*=status:500"
get "$slow_URL/buildid/ab/debuginfo"
cmp -s "$T/slow" "$T/body"
ok $? "trickle: the body is the file"
lt 1999 "$MS"
ok $? "trickle: 10 KB at 4000 B/s takes 2 s or more ($MS ms)"
lt "$MS" 9000
ok $? "trickle: but not far more ($MS ms)"
get "$slow_URL/buildid/0000/debuginfo"
is "$CODE" 500 "*: the rule for ids not listed"

# Many clients at once behind --delay are served in parallel; stdout says
# the port.  One after the other they would take 200 s; the bound leaves
# room for a ThreadSanitizer build on a loaded machine (about 9 s unloaded,
# more than 20 s with other tests beside it).
"$FAKE" --listen 127.0.0.1 --port-file "$T/many.port" --delay 1000 \
    --log "$T/many.log" "*=ok:$T/slow" >"$T/many.out" 2>&1 &
many_PID=$!
DAEMON_PIDS="$DAEMON_PIDS $many_PID"
wait_until 10 test -s "$T/many.port" || bail "fakeupstream did not start"
port=$(cat "$T/many.port")
is "$(cat "$T/many.out")" "port $port" "stdout: port N"
urls=()
for i in $(seq 200); do
	urls+=("http://127.0.0.1:$port/buildid/$i/debuginfo" -o /dev/null)
done
t0=$(date +%s%N)
n=$(curl -s --parallel --parallel-max 200 --max-time 90 2>/dev/null \
    -w '%{http_code}\n' "${urls[@]}" | grep -c '^200$')
ms=$((($(date +%s%N) - t0) / 1000000))
is "$n" 200 "200 parallel clients all get 200"
lt "$ms" 60000
ok $? "they are not served one after the other ($ms ms)"
is "$(grep -c '^GET ' "$T/many.log")" 200 "the log has 200 lines"
stop_daemon many
is "$STOP_RC" 0 "SIGTERM after 200 clients: exit 0"

done_testing
