#!/bin/bash
# How dbgmirrord reaches its upstreams: https verified against the system
# store plus ca-file (nginx with a self-signed certificate as the
# upstream, which also shows HTTP/2 and connection reuse), fetches from
# one plain-http upstream that do not queue behind each other, the outbound
# proxy from the environment or the config (a fake
# upstream as the proxy, which logs the absolute-form requests it gets),
# per-upstream settings (headers, enabled=off, negative-ttl), and HEAD and
# Range answered while a fill is still running.
. "$top_srcdir/tests/integration/lib.sh"

id=7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a7a
bin=$(mkbin $id)

# ------------------------------------------------------------------ https

command -v nginx >/dev/null || bail "nginx is not installed"
# nginx's workers run as another user when started as root.
chmod 755 "$T"
id2=7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d
bin2=$(mkbin $id2)
mkdir -p "$T/www/buildid/$id" "$T/www/buildid/$id2" "$T/nginx"
cp "$bin" "$T/www/buildid/$id/debuginfo"
cp "$bin2" "$T/www/buildid/$id2/debuginfo"
chmod -R a+rX "$T/www"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" -keyout "$T/nginx/key.pem" \
    -out "$T/nginx/cert.pem" >/dev/null 2>&1
ok $? "a self-signed certificate for 127.0.0.1"
for try in 1 2 3 4 5; do
	port=$(pick_port)
	cat >"$T/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 64; }
http {
	log_format conn '\$connection \$server_protocol \$request_uri';
	access_log $T/nginx/access.log conn;
	default_type application/octet-stream;
	server {
		listen 127.0.0.1:$port ssl http2;
		ssl_certificate $T/nginx/cert.pem;
		ssl_certificate_key $T/nginx/key.pem;
		root $T/www;
	}
}
CONF
	# Its own output file: a worker must not hold the test's stdout.
	nginx -e "$T/nginx/error.log" -c "$T/nginx/nginx.conf" -p "$T/nginx/" \
	    >"$T/nginx/out.log" 2>&1 &
	nginx_pid=$!
	DAEMON_PIDS="$DAEMON_PIDS $nginx_pid"
	wait_until 10 listening "$port" && break
done
listening "$port" || { cat "$T/nginx/error.log"; bail "nginx did not start"; }
tls=https://127.0.0.1:$port

# Deadlines far past any handshake: a slow one (ThreadSanitizer on a loaded
# machine took more than the 5 s default) must end in the verification
# failure this checks, not in a timeout.
start_daemon plain --scan-dir none --upstream "$tls" --error-ttl 0 \
    --upstream-connect-timeout 60 --upstream-first-byte-timeout 60
is "$(code "$plain_URL/buildid/$id/debuginfo")" 502 \
    "an https upstream with an unknown certificate: 502"
like "$(metric "dbgmirror_upstream_errors_total{upstream=\"$tls\",kind=\"connect\"}" "$plain_URL")" \
    '^[1-9]' "... counted as a connect error (verification failed)"
stop_daemon plain

start_daemon trusting --scan-dir none --upstream "$tls" \
    --ca-file "$T/nginx/cert.pem"
curl -s -o "$T/got" "$trusting_URL/buildid/$id/debuginfo"
cmp -s "$T/got" "$bin"
ok $? "with ca-file naming its certificate: the right bytes over https"
curl -s -o "$T/got2" "$trusting_URL/buildid/$id2/debuginfo"
cmp -s "$T/got2" "$bin2"
ok $? "a second id from the same upstream"
grep "$id" "$T/nginx/access.log" | grep -q ' HTTP/2.0 '
ok $? "... over HTTP/2, which the upstream offers"
is "$(grep -E "$id|$id2" "$T/nginx/access.log" | cut -d' ' -f1 | sort -u | wc -l)" 1 \
    "... both on one connection, reused"
stop_daemon trusting
kill -TERM "$nginx_pid"
wait "$nginx_pid" 2>/dev/null

# ------------------------------------------- plain http: no waiting in line

# A plain-http upstream cannot multiplex, so a fetch must not wait for the
# one in flight to end.  The upstream answers after 2 s, so the second
# fetch starts before the first connection has shown what it can do; the
# first then never ends (its body stalls), and a second fetch queued
# behind it would time out (first-byte-timeout, 15 s here: room for a
# loaded machine).
ids=7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e
idf=7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f7f
binf=$(mkbin $idf)
start_fake stuck --delay 2000 "$ids=stall:$(mkbin $ids)" "$idf=ok:$binf"
start_daemon lanes --scan-dir none --upstream "$stuck_URL" \
    --upstream-first-byte-timeout 15 --upstream-stall-timeout 30
curl -s -o /dev/null -m 30 "$lanes_URL/buildid/$ids/debuginfo" &
wait_until 10 grep -q "$ids" "$stuck_LOG"
ok $? "a fetch that will stall is in flight"
curl -s -o "$T/lane" -m 30 "$lanes_URL/buildid/$idf/debuginfo"
cmp -s "$T/lane" "$binf"
ok $? "... while another id from the same upstream arrives whole"
stop_daemon lanes

# ------------------------------------------------------------------ proxy

start_fake px "*=status:404"
# For the daemon only: the test's own curl must not use the proxy.
http_proxy=$px_URL start_daemon viaenv --scan-dir none \
    --upstream http://127.0.0.1:9 --error-ttl 0
code "$viaenv_URL/buildid/$id/debuginfo" >/dev/null
is "$(requests_to px "GET http://127\.0\.0\.1:9/buildid/$id/debuginfo")" 1 \
    "http_proxy in the environment: the request goes through the proxy"
stop_daemon viaenv
http_proxy=$px_URL start_daemon direct --scan-dir none \
    --upstream http://127.0.0.1:9 --error-ttl 0 --proxy none
is "$(code "$direct_URL/buildid/$id/debuginfo")" 502 \
    "proxy = none: straight to the (closed) upstream port: 502"
is "$(requests_to px "$id")" 1 "... and not through the proxy"
stop_daemon direct
start_daemon viaconf --scan-dir none --upstream http://127.0.0.1:9 \
    --error-ttl 0 --proxy "$px_URL"
code "$viaconf_URL/buildid/$id/debuginfo" >/dev/null
is "$(requests_to px "GET http://127\.0\.0\.1:9/buildid/$id")" 2 \
    "proxy in the config: through the proxy"
stop_daemon viaconf

# ------------------------------------------------- per-upstream settings

start_fake one "*=status:404"
start_fake two "*=status:404"
start_fake off "*=status:404"
# The test clock (daemon/clock.h) stands still between the steps.
touch -d @1700000000 "$T/clock"
DBGMIRROR_TEST_CLOCK=$T/clock start_daemon per --scan-dir none \
    --negative-ttl 60 \
    --upstream "$one_URL negative-ttl=2" --upstream "$two_URL/" \
    --upstream "$off_URL enabled=off" \
    --upstream-header "$one_URL Authorization: Bearer s3cret"
miss=7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c
curl -s -D "$T/neg0.h" -o /dev/null "$per_URL/buildid/$miss/debuginfo"
is "$(sed -n 's/^HTTP[^ ]* \([0-9]*\).*/\1/p' "$T/neg0.h")" 404 \
    "three upstreams, one off: 404"
is "$(header Cache-Control "$T/neg0.h")" "max-age=2" \
    "the 404 that ends the fill has the entry's max-age (2 s), not the global 60"
grep -q "$miss.*auth=\"Bearer s3cret\"" "$one_LOG"
ok $? "upstream-header for one upstream: sent to it"
grep -q "$miss.*auth=\"-\"" "$two_LOG"
ok $? "... and not to the other"
is "$(requests_to off "$miss")" 0 "enabled=off: never asked"
curl -s -D "$T/neg.h" -o /dev/null "$per_URL/buildid/$miss/debuginfo"
is "$(header Cache-Control "$T/neg.h")" "max-age=2" \
    "the negative entry lasts the shortest per-upstream negative-ttl (2 s)"
is "$(requests_to one "$miss")/$(requests_to two "$miss")" 1/1 \
    "... and answers the next request without asking upstream"
touch -d @1700000003 "$T/clock"
code "$per_URL/buildid/$miss/debuginfo" >/dev/null
is "$(requests_to one "$miss")/$(requests_to two "$miss")" 2/2 \
    "... after which both upstreams are asked again"
stop_daemon per
start_daemon every --scan-dir none --upstream "$two_URL" \
    --upstream-header "* Authorization: Bearer all"
code "$every_URL/buildid/$miss/executable" >/dev/null
grep -q "$miss/executable.*auth=\"Bearer all\"" "$two_LOG"
ok $? "upstream-header '*': sent to every upstream"
stop_daemon every

# ------------------------------------------------- HEAD and Range mid-fill

# A Range request joining a fill that fails the final check (an executable
# asked for as debuginfo: the opening bytes pass, the sections do not) gets
# no bytes of it: ranges wait for the verdict.
nodebug=$(mkbin 7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d 200000)
strip "$nodebug"
start_fake wrongkind --rate 50000 "7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d=trickle:$nodebug"
start_daemon wk --scan-dir none --upstream "$wrongkind_URL"
url=$wk_URL/buildid/7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d7d/debuginfo
curl -s -o /dev/null -m 60 "$url" &
fill=$!
wait_until 10 sh -c "curl -s '$wk_URL/metrics' | grep -q '^dbgmirror_fills_in_flight 1'"
ok $? "a fill of the wrong kind is running"
curl -s -r 0-99 -o "$T/wkpart" -w '%{http_code}' -m 60 "$url" >"$T/wkcode"
is "$(cat "$T/wkcode")" 502 "Range joining it: 502 once it fails, not a 206 of its bytes"
! head -c 4 "$T/wkpart" | grep -q ELF
ok $? "... and no byte of the file"
wait "$fill"
stop_daemon wk

big=$(mkbin 7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b 200000)
start_fake slow --rate 50000 "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b=trickle:$big"
start_daemon f --scan-dir none --upstream "$slow_URL"
url=$f_URL/buildid/7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b/debuginfo
curl -s -o "$T/whole" -m 30 "$url" &
fill=$!
wait_until 5 sh -c "curl -s '$f_URL/metrics' | grep -q '^dbgmirror_fills_in_flight 1'"
ok $? "a fill is running"
curl -s -I -o /dev/null -w '%{http_code} %header{content-length}' "$url" >"$T/head"
is "$(cat "$T/head")" "200 $(stat -c %s "$big")" \
    "HEAD during the fill: 200 with the whole length"
is "$(curl -s -r 100-199 "$url" | wc -c)" 100 "Range during the fill: 100 bytes"
curl -s -r 100-199 -o "$T/part" "$url"
cmp -s "$T/part" <(tail -c +101 "$big" | head -c 100)
ok $? "... the right ones"
wait "$fill"
cmp -s "$T/whole" "$big"
ok $? "the fill's own client gets every byte"
stop_daemon f
is "$STOP_RC" 0 "SIGTERM: exit 0"
done_testing
