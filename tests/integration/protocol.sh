#!/bin/bash
# The HTTP protocol as dbgmirrord speaks it, request by request: HEAD, Range
# and If-Range, conditional requests, X-DEBUGINFOD-MAXSIZE, malformed build-ids
# and section names, path traversal in every position, methods, HTTP
# versions, head size limits (default and --max-header-size), keep-alive and
# pipelining, the header and keep-alive timeouts, the access log -- and that
# the daemon still serves normally after all the hostile input.
. "$top_srcdir/tests/integration/lib.sh"
# "printf ... | send": send runs in this shell and can set RAW_RC.
shopt -s lastpipe

build_fixtures
start_daemon d --scan-dir "$FX"
dbg=$FX/usr/lib/debug
A=$ID_prog_a
ADBG=$dbg/prog_a.debug
SIZE=$(stat -c %s "$ADBG")
P=$d_PORT

# get URL [CURL ARGS...]: body in $T/body, head in $T/head, status in $CODE.
get() {
	local url=$1
	shift
	CODE=$(curl -s --max-time 10 -o "$T/body" -D "$T/head" \
	    -w '%{http_code}' "$@" "$url")
}
# header NAME: a header of the last get (first one, CR removed).
header() {
	tr -d '\r' <"$T/head" | sed -n "s/^$1: //Ip" | head -n 1
}
# send PORT: stdin over raw into $T/r; RAW_RC is 0 when the server closed
# the connection, 1 when raw gave up waiting for it.
send() {
	rm -f "$T"/r.*
	raw "$1" >"$T/r"
	RAW_RC=$?
}
# rhead FILE: the first response head of a raw reply, CR removed.
rhead() {
	tr -d '\r' <"$1" | sed '/^$/q'
}
# rstatus FILE: the status code of the first response in a raw reply.
rstatus() {
	head -n 1 "$1" | awk '{ print $2 }'
}
# rheader FILE NAME: a header of the first response in a raw reply.
rheader() {
	rhead "$1" | sed -n "s/^$2: //Ip" | head -n 1
}
# split_responses FILE: cut a stream of responses into FILE.N.head and
# FILE.N.body (Content-Length bytes each); prints how many it found.
split_responses() {
	local f=$1 size off=0 n=0 blank cl
	size=$(stat -c %s "$f")
	while [ "$off" -lt "$size" ] && [ "$n" -lt 50 ]; do
		blank=$(tail -c +$((off + 1)) "$f" | grep -abm 1 $'^\r$' |
		    cut -d: -f1)
		[ -n "$blank" ] || break
		n=$((n + 1))
		tail -c +$((off + 1)) "$f" | head -c $((blank + 2)) |
		    tr -d '\r' >"$f.$n.head"
		cl=$(sed -n 's/^content-length: //Ip' "$f.$n.head" | head -n 1)
		off=$((off + blank + 2))
		tail -c +$((off + 1)) "$f" | head -c "${cl:-0}" >"$f.$n.body"
		off=$((off + ${cl:-0}))
	done
	echo "$n"
}
# one_line_text: the last get was text/plain with a one-line, non-empty body.
one_line_text() {
	[ "$(header content-type)" = "text/plain" ] &&
	    [ "$(wc -l <"$T/body")" -eq 1 ] &&
	    [ "$(wc -c <"$T/body")" -gt 1 ] &&
	    [ "$(tail -c 1 "$T/body" | od -An -c | tr -d ' ')" = '\n' ]
}
# no_passwd: the last body has no line of /etc/passwd.
no_passwd() {
	! grep -aq '^root:' "$T/body"
}

# ------------------------------------------------------------------- HEAD

get "$d_URL/buildid/$A/debuginfo"
cp "$T/head" "$T/get-head"
etag=$(header etag)
lastmod=$(header last-modified)
get "$d_URL/buildid/$A/debuginfo" -I
is "$CODE" 200 "HEAD of a hit: 200"
for h in content-length x-debuginfod-size x-debuginfod-file etag \
    last-modified; do
	is "$(rheader "$T/head" "$h")" "$(rheader "$T/get-head" "$h")" \
	    "HEAD: $h as for GET"
done
is "$(header content-length)" "$SIZE" "HEAD: Content-Length is the file size"
printf 'HEAD /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' \
    "$A" | send "$P"
is "$(rstatus "$T/r")" 200 "raw HEAD: 200"
is "$(tail -c 4 "$T/r" | od -An -tx1 | tr -d ' \n')" 0d0a0d0a \
    "raw HEAD: the reply ends with the blank line"
is "$(tr -d '\r' <"$T/r" | grep -c '^$')" 1 \
    "raw HEAD: nothing after the head (no body)"

# ------------------------------------------------------------------ Range

get "$d_URL/buildid/$A/debuginfo" -H 'Range: bytes=0-9'
is "$CODE" 206 "Range bytes=0-9: 206"
is "$(header content-range)" "bytes 0-9/$SIZE" "... Content-Range"
head -c 10 "$ADBG" | cmp -s - "$T/body"
ok $? "... exactly the first 10 bytes"
is "$(header content-length)" 10 "... Content-Length 10"

get "$d_URL/buildid/$A/debuginfo" -H 'Range: bytes=100-'
is "$CODE" 206 "Range bytes=100-: 206"
tail -c +101 "$ADBG" | cmp -s - "$T/body"
ok $? "... the rest of the file from byte 100"
is "$(header content-range)" "bytes 100-$((SIZE - 1))/$SIZE" \
    "... Content-Range"

get "$d_URL/buildid/$A/debuginfo" -H 'Range: bytes=-16'
is "$CODE" 206 "Range bytes=-16: 206"
tail -c 16 "$ADBG" | cmp -s - "$T/body"
ok $? "... the last 16 bytes"
is "$(header content-range)" "bytes $((SIZE - 16))-$((SIZE - 1))/$SIZE" \
    "... Content-Range"

get "$d_URL/buildid/$A/debuginfo" -H "Range: bytes=$SIZE-"
is "$CODE" 416 "Range starting at the size: 416"
is "$(header content-range)" "bytes */$SIZE" "... Content-Range bytes */SIZE"

for r in 'bytes=0-1,5-6' 'items=0-1' 'bytes=abc'; do
	get "$d_URL/buildid/$A/debuginfo" -H "Range: $r"
	is "$CODE" 200 "Range $r is ignored: 200"
	cmp -s "$T/body" "$ADBG"
	ok $? "... with the whole file"
done

get "$d_URL/buildid/$A/debuginfo" -H 'Range: bytes=0-9' -H "If-Range: $etag"
is "$CODE" 206 "If-Range with the current ETag: 206"
get "$d_URL/buildid/$A/debuginfo" -H 'Range: bytes=0-9' \
    -H 'If-Range: "0-0"'
is "$CODE" 200 "If-Range with another ETag: 200"
cmp -s "$T/body" "$ADBG"
ok $? "... the whole file"

# ------------------------------------------------------------ conditional

printf 'GET /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\nIf-None-Match: %s\r\nConnection: close\r\n\r\n' \
    "$A" "$etag" | send "$P"
is "$(rstatus "$T/r")" 304 "If-None-Match with the ETag: 304"
is "$(tail -c 4 "$T/r" | od -An -tx1 | tr -d ' \n')" 0d0a0d0a \
    "... and no body after the head"
get "$d_URL/buildid/$A/debuginfo" -H 'If-None-Match: "123-456"'
is "$CODE" 200 "If-None-Match with another tag: 200"
get "$d_URL/buildid/$A/debuginfo" -H 'If-None-Match: *'
is "$CODE" 304 "If-None-Match: *: 304"
get "$d_URL/buildid/$A/debuginfo" -H "If-Modified-Since: $lastmod"
is "$CODE" 304 "If-Modified-Since of the Last-Modified: 304"
mtime=$(stat -c %Y "$ADBG")
daybefore=$(TZ=GMT date -d "@$((mtime - 86400))" '+%a, %d %b %Y %H:%M:%S GMT')
get "$d_URL/buildid/$A/debuginfo" -H "If-Modified-Since: $daybefore"
is "$CODE" 200 "If-Modified-Since a day before: 200"
get "$d_URL/buildid/$A/debuginfo" -H 'If-None-Match: "123-456"' \
    -H "If-Modified-Since: $lastmod"
is "$CODE" 200 "a non-matching If-None-Match beats a matching If-Modified-Since"

# -------------------------------------------------------------- MAXSIZE

printf 'GET /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\nX-DEBUGINFOD-MAXSIZE: 10\r\nConnection: close\r\n\r\n' \
    "$A" | send "$P"
is "$(rstatus "$T/r")" 406 "X-DEBUGINFOD-MAXSIZE: 10: 406"
is "$(rheader "$T/r" content-type)" text/plain "... text/plain"
split_responses "$T/r" >/dev/null
is "$(wc -l <"$T/r.1.body")" 1 "... a one-line body"
is "$(($(stat -c %s "$T/r") - $(wc -c <"$T/r.1.head") - $(wc -l <"$T/r.1.head")))" \
    "$(wc -c <"$T/r.1.body")" "... and nothing else: no byte of the file"
! grep -aq ELF "$T/r"
ok $? "... no ELF magic anywhere in the reply"
get "$d_URL/buildid/$A/debuginfo" -H "X-DEBUGINFOD-MAXSIZE: $SIZE"
is "$CODE" 200 "MAXSIZE equal to the size: 200"
get "$d_URL/buildid/$A/debuginfo" -H "X-DEBUGINFOD-MAXSIZE: 0"
is "$CODE" 200 "MAXSIZE 0 means no limit: 200"
get "$d_URL/buildid/$A/debuginfo" -H "X-DEBUGINFOD-MAXSIZE: lots"
is "$CODE" 200 "a garbage MAXSIZE is ignored: 200"

# ------------------------------------------------------ malformed build-ids

hex128=$(printf '%0128d' 0 | tr 0 a)
hex130=$(printf '%0130d' 0 | tr 0 a)
for id in zz abc a "$hex130" g0 ''; do
	get "$d_URL/buildid/$id/debuginfo" --path-as-is
	is "$CODE" 400 "malformed build-id '${id:0:20}': 400"
	one_line_text
	ok $? "... with a one-line text/plain body saying why"
done
is "$(code "$d_URL/buildid/$hex128/debuginfo")" 404 \
    "128 hex digits (unknown): 404"
get "$d_URL/buildid/$A/foo"
is "$CODE" 400 "unknown artifact type: 400"
one_line_text
ok $? "... with a reason"
is "$(code "$d_URL/buildid/$A" --path-as-is)" 400 "missing type: 400"
is "$(code "$d_URL/buildid/$A/" --path-as-is)" 400 "empty type: 400"

# --------------------------------------------------------- section names

sec255=$(printf '%0254d' 0 | tr 0 x)
is "$(code "$d_URL/buildid/$A/section/" --path-as-is)" 400 \
    "empty section name: 400"
is "$(code "$d_URL/buildid/$A/section/.${sec255}y")" 400 \
    "a 256-character section name: 400"
is "$(code "$d_URL/buildid/$A/section/.$sec255")" 404 \
    "a 255-character section name that does not exist: 404"

# -------------------------------------------------------------- traversal

for path in "/buildid/../debuginfo" "/buildid/$A/.." \
    "/buildid/$A/debuginfo/../../etc/passwd" "/buildid/$A/section/.." \
    "/buildid/%2e%2e/debuginfo" "/buildid/$A/%2E%2e" \
    "/buildid/$A/debuginfo/%2e%2e/%2e%2e/etc/passwd" \
    "/buildid/$A/section/%2e%2E" "/../etc/passwd" "/x/.." \
    "/%2e%2e/etc/passwd" "/buildid/$A/debuginfo%00" "/buildid/%00/debuginfo" \
    "/%00" "/buildid/$A/section/.text%00x" "/buildid/$A/debuginfo%zz" \
    "/buildid/$A/debuginfo%4" "/nope%zz" "/buildid/$A/source/a%00b"; do
	get "$d_URL$path" --path-as-is
	is "$CODE" 400 "$path: 400"
	no_passwd
	ok $? "... and no byte of /etc/passwd"
done

# ---------------------------------------------------------------- sources

is "$(code "$d_URL/buildid/$A/source/usr/src/a.c")" 404 \
    "a source file: 404 (sources are not indexed)"
is "$(code "$d_URL/buildid/$A/source/usr/src/../src/a.c" --path-as-is)" 404 \
    "'..' is canonicalised in a source path: 404, not 400"
is "$(code "$d_URL/buildid/$A/source" --path-as-is)" 400 \
    "source without a path: 400"

# ----------------------------------------------- what the path may carry

get "$d_URL/buildid/$A/debuginfo/extra/stuff"
is "$CODE" 200 "extra path after debuginfo is ignored: 200"
cmp -s "$T/body" "$ADBG"
ok $? "... the same bytes"
get "$d_URL/buildid/$A/debuginfo?x=1"
is "$CODE" 200 "a query string is ignored: 200"
cmp -s "$T/body" "$ADBG"
ok $? "... the same bytes"
printf 'GET http://127.0.0.1:%s/buildid/%s/debuginfo HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' \
    "$P" "$A" | send "$P"
is "$(rstatus "$T/r")" 200 "absolute-form target: 200"
split_responses "$T/r" >/dev/null
cmp -s "$T/r.1.body" "$ADBG"
ok $? "... the debuginfo"
for path in /nope /metrics2 /buildidx/; do
	is "$(code "$d_URL$path")" 404 "$path: 404"
done

# ---------------------------------------------------------------- methods

for m in POST PUT DELETE OPTIONS FOO; do
	get "$d_URL/" -X "$m"
	is "$CODE" 405 "$m: 405"
	is "$(header allow)" "GET, HEAD" "... Allow: GET, HEAD"
done

printf 'GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello' | send "$P"
is "$(rstatus "$T/r")" 400 "GET with a Content-Length body: 400"
ok "$RAW_RC" "... and the server closes the connection"
is "$(grep -ac '^HTTP/' "$T/r")" 1 "... the body was not taken for a request"
printf 'GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' |
    send "$P"
is "$(rstatus "$T/r")" 400 "GET with a chunked body: 400"
ok "$RAW_RC" "... and the server closes the connection"

# ---------------------------------------------------------- HTTP versions

printf 'GET / HTTP/1.0\r\n\r\n' | send "$P"
is "$(rstatus "$T/r")" 200 "HTTP/1.0: 200"
ok "$RAW_RC" "... and the server closes after the response"
printf 'GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n' |
    send "$P"
is "$(split_responses "$T/r")" 2 "HTTP/1.0 keep-alive: two responses on one connection"
grep -qix 'connection: keep-alive' "$T/r.1.head"
ok $? "... the first says Connection: keep-alive"
ok "$RAW_RC" "... the second (plain 1.0) closes"
printf 'GET / HTTP/2.0\r\nHost: x\r\n\r\n' | send "$P"
is "$(rstatus "$T/r")" 505 "HTTP/2.0: 505"
printf 'GET / HTTP/x.y\r\nHost: x\r\n\r\n' | send "$P"
is "$(rstatus "$T/r")" 400 "HTTP/x.y: 400"
printf 'GET /\r\nHost: x\r\n\r\n' | send "$P"
is "$(rstatus "$T/r")" 400 "a request line without a version: 400"
printf 'GET / HTTP/1.1\nHost: x\nConnection: close\n\n' | send "$P"
is "$(rstatus "$T/r")" 200 "bare LF line ends: 200"
printf '\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | send "$P"
is "$(rstatus "$T/r")" 200 "an empty line before the request line is skipped"
# request.c: "Empty lines before the request line are allowed".
printf '\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' |
    send "$P"
is "$(rstatus "$T/r")" 200 "two empty lines before the request line are skipped"

# ----------------------------------------------------------------- limits

# long_request PORT PATHLEN HEADERLEN: one request with a path and an X-Pad
# header of about those lengths.
long_request() {
	local path pad
	path=/$(printf "%0$(($2 - 1))d" 0)
	pad=$(printf "%0$3d" 0)
	printf 'GET %s HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\nConnection: close\r\n\r\n' \
	    "$path" "$pad" | send "$1"
}
long_request "$P" 9000 1
is "$(rstatus "$T/r")" 414 "a 9000-byte request line: 414"
long_request "$P" 2 9000
is "$(rstatus "$T/r")" 431 "9000 bytes of headers: 431"
# exact_head PORT N: a GET / whose head is exactly N bytes.
exact_head() {
	local base
	base=$(printf 'GET / HTTP/1.1\r\nConnection: close\r\nX-Pad: \r\n\r\n' |
	    wc -c)
	printf 'GET / HTTP/1.1\r\nConnection: close\r\nX-Pad: %s\r\n\r\n' \
	    "$(printf "%0$(($2 - base))d" 0)" | send "$1"
}
exact_head "$P" 8192
is "$(rstatus "$T/r")" 200 "a head of exactly 8192 bytes: 200"
exact_head "$P" 8193
is "$(rstatus "$T/r")" 431 "a head of 8193 bytes: 431"
pad=$(printf '%05000d' 0)
printf 'GET / HTTP/1.1\r\nX-Pad: %s\r\n\r\nGET / HTTP/1.1\r\nX-Pad: %s\r\nConnection: close\r\n\r\n' \
    "$pad" "$pad" | send "$P"
is "$(grep -ac '^HTTP/1.1 200 OK' "$T/r")" 2 \
    "two pipelined 5000-byte heads (more than the buffer holds): two 200s"
{
	printf 'GET / HTTP/1.1\r\nHo'
	sleep 0.2
	printf 'st: x\r\nConnection: cl'
	sleep 0.2
	printf 'ose\r\n\r'
	sleep 0.2
	printf '\n'
} | send "$P"
is "$(rstatus "$T/r")" 200 "a head arriving in four pieces: 200"
{
	printf 'GET / HTTP/1.1\r\nConnection: close\r\n'
	for i in $(seq 1 100); do printf 'X-H%d: v\r\n' "$i"; done
	printf '\r\n'
} | send "$P"
is "$(rstatus "$T/r")" 431 "101 header lines: 431"
{
	printf 'GET / HTTP/1.1\r\nConnection: close\r\n'
	for i in $(seq 1 99); do printf 'X-H%d: v\r\n' "$i"; done
	printf '\r\n'
} | send "$P"
is "$(rstatus "$T/r")" 200 "100 header lines: 200"
printf 'GET / HTTP/1.1\r\nHost: x\r\nX-A: b\r\n c\r\nConnection: close\r\n\r\n' |
    send "$P"
is "$(rstatus "$T/r")" 400 "obsolete line folding: 400"
printf 'GET / HTTP/1.1\r\nHost : x\r\nConnection: close\r\n\r\n' | send "$P"
is "$(rstatus "$T/r")" 400 "a space before the colon: 400"
printf 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\001b\r\nConnection: close\r\n\r\n' |
    send "$P"
is "$(rstatus "$T/r")" 400 "a control byte in a header value: 400"

start_daemon small --scan-dir "$FX" --max-header-size 2048
long_request "$small_PORT" 3000 1
is "$(rstatus "$T/r")" 414 "--max-header-size 2048: a 3000-byte request line: 414"
long_request "$small_PORT" 2 3000
is "$(rstatus "$T/r")" 431 "--max-header-size 2048: 3000 bytes of headers: 431"
printf 'GET /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\nConnection: close\r\n\r\n' \
    "$A" "$(printf '%01400d' 0)" | send "$small_PORT"
is "$(rstatus "$T/r")" 200 "--max-header-size 2048: a 1500-byte request: 200"
split_responses "$T/r" >/dev/null
cmp -s "$T/r.1.body" "$ADBG"
ok $? "... with the file"
stop_daemon small

# ------------------------------------------------ keep-alive, pipelining

printf 'GET /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' \
    "$ID_shapes" | send "$P"
is "$(split_responses "$T/r")" 2 "two pipelined requests: two responses"
is "$(head -n 1 "$T/r.1.head")" "HTTP/1.1 200 OK" "... the first is 200"
is "$(head -n 1 "$T/r.2.head")" "HTTP/1.1 200 OK" "... the second is 200"
cmp -s "$T/r.1.body" "$dbg/.dwz/shapes.debug"
ok $? "... the first body is shapes.debug, Content-Length bytes long"
like "$(cat "$T/r.2.body")" '^dbgmirror ' "... the second is the banner, in order"
is "$(($(wc -c <"$T/r.1.head") + $(wc -l <"$T/r.1.head") + \
    $(wc -c <"$T/r.1.body") + $(wc -c <"$T/r.2.head") + \
    $(wc -l <"$T/r.2.head") + $(wc -c <"$T/r.2.body")))" \
    "$(stat -c %s "$T/r")" "... and nothing else on the connection"
ok "$RAW_RC" "... the connection closes after the second"

{
	for i in $(seq 1 9); do printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n'; done
	printf 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'
} | send "$P"
is "$(split_responses "$T/r")" 10 "ten pipelined requests: ten responses"
is "$(cat "$T"/r.*.head | grep -c '^HTTP/1.1 200 OK$')" 10 "... all 200"
printf 'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n' |
    send "$P"
is "$(split_responses "$T/r")" 1 "nothing is answered after a Connection: close request"
ok "$RAW_RC" "... and the connection closes at once"

# A pipelined section request (answered by a worker) keeps the order too.
printf 'GET /buildid/%s/section/.debug_info HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' \
    "$A" | send "$P"
dump_section "$ADBG" .debug_info "$T/ref"
is "$(split_responses "$T/r")" 2 "a pipelined section then a 404: two responses"
cmp -s "$T/r.1.body" "$T/ref"
ok $? "... the section first"
is "$(head -n 1 "$T/r.2.head")" "HTTP/1.1 404 Not Found" "... then the 404"
# Answers from workers, each followed by a request the loop must read on
# at its next turn (not from inside the worker's completion).
printf 'GET /buildid/%s/section/.debug_info HTTP/1.1\r\nHost: x\r\n\r\nGET /buildid/%s/section/.debug_info HTTP/1.1\r\nHost: x\r\n\r\nGET /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' \
    "$A" "$A" "$ID_shapes" | send "$P"
is "$(split_responses "$T/r")" 3 "two sections and a file pipelined: three responses"
cmp -s "$T/r.1.body" "$T/ref" && cmp -s "$T/r.2.body" "$T/ref"
ok $? "... both sections right"
cmp -s "$T/r.3.body" "$dbg/.dwz/shapes.debug"
ok $? "... then the file, in order"

# --------------------------------------------------------------- timeouts

start_daemon t --scan-dir "$FX" --header-timeout 1 --keepalive-timeout 1
# hold PORT: send stdin, keep the socket open, read until the server closes
# (RAW_WAIT s at most) into $T/r.  RAW_RC: 0 when the server closed it;
# RAW_MS: how long that took, only ever checked as a lower bound (a loaded
# machine makes it longer, never shorter).
hold() {
	local t0 t1
	rm -f "$T"/r.*
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	t0=$(date +%s%N)
	cat >&3
	timeout "${RAW_WAIT:-20}" cat <&3 >"$T/r"
	RAW_RC=$?
	t1=$(date +%s%N)
	exec 3>&-
	RAW_MS=$(((t1 - t0) / 1000000))
}
printf 'GET / HTTP/1.1\r\n' | hold "$t_PORT"
is "$(rstatus "$T/r")" 408 "a head that never ends: 408"
ok "$RAW_RC" "... then the server closes the connection"
is "$(rheader "$T/r" connection)" close "... saying Connection: close"

# The trickle: one header byte every 0.4 s does not extend the deadline.
# The server must close while the bytes still come: the trickle goes on
# for 30 s (far past the 1 s deadline on any machine) and leaves a mark
# when it is over, so a server that waited for its end is seen by the mark,
# not by a clock.
exec 4<>"/dev/tcp/127.0.0.1/$t_PORT"
printf 'GET / HTTP/1.1\r\n' >&4
(
	trap '' PIPE
	for i in $(seq 1 75); do
		printf 'x' >&4 2>/dev/null
		sleep 0.4
	done
	touch "$T/trickle.over"
) &
trickle=$!
timeout 40 cat <&4 >"$T/r" 2>/dev/null
rc=$?
[ -e "$T/trickle.over" ]
over=$?
exec 4>&-
kill "$trickle" 2>/dev/null
wait "$trickle" 2>/dev/null
is "$(rstatus "$T/r")" 408 "a trickling client: 408"
is "$rc/$over" 0/1 "... the server closed while the bytes still came"

printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | hold "$t_PORT"
is "$(rstatus "$T/r")" 200 "keep-alive: the response comes"
is "$(rheader "$T/r" connection)" "" "... without Connection: close"
ok "$RAW_RC" "... and the idle connection is closed by the server"
[ "$RAW_MS" -ge 700 ]
ok $? "... not before its 1 s keep-alive timeout (${RAW_MS} ms)"
stop_daemon t

# ------------------------------------------------------------- access log

access_log_has d '^[0-9T:Z-]+ 127\.0\.0\.1:[0-9]+ "GET /buildid/zz/debuginfo" 400 [0-9]+ [0-9.]+ms [^ ]+ [^ ]+ "'
ok $? "the access log has the 400 with peer, request, status, bytes, time"
access_log_has d '^[0-9T:Z-]+ 127\.0\.0\.1:[0-9]+ "PUT /" 405 [0-9]+ [0-9.]+ms [^ ]+ [^ ]+ "'
ok $? "the access log has the 405"
access_log_has d "\"GET /buildid/$A/debuginfo\" 206 10 [0-9.]+ms HIT local"
ok $? "the access log has the 206 with the bytes sent"
get "$d_URL/" -A probe-banner
n=$(wc -c <"$T/body")
access_log_has d "\"GET /\" 200 $n [0-9.]+ms .*\"probe-banner\"\$"
rc=$?
ok $rc "the access log counts the $n bytes of the banner"
[ $rc -eq 0 ] || grep -a probe-banner "$d_LOG" | sed 's/^/#   log: /'
get "$d_URL/buildid/zz/debuginfo" -A probe-error
n=$(wc -c <"$T/body")
access_log_has d "\"GET /buildid/zz/debuginfo\" 400 $n [0-9.]+ms .*\"probe-error\"\$"
rc=$?
ok $rc "the access log counts the $n bytes of an error body"
[ $rc -eq 0 ] || grep -a probe-error "$d_LOG" | sed 's/^/#   log: /'

# ------------------------------------------------------------ still alive

get "$d_URL/buildid/$A/debuginfo"
is "$CODE" 200 "after all this, a normal request: 200"
cmp -s "$T/body" "$ADBG"
ok $? "... with the file"
kill -0 "$d_PID"
ok $? "the daemon is still running"
stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit status 0"
done_testing
