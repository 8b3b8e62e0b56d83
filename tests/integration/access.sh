#!/bin/bash
# Access rules per endpoint class: addresses, hashed bearer tokens with
# scopes, client certificate subjects; X-Forwarded-For only from trusted
# proxies; 401/403 decided before any lookup, the same for ids that exist
# and ids that do not; libdebuginfod sending its token through
# DEBUGINFOD_HEADERS_FILE.
. "$top_srcdir/tests/integration/lib.sh"

build_fixtures
client_env
dbg=$FX/usr/lib/debug
missing=0123456789abcdef0123456789abcdef01234567

# tok NAME SCOPES: a token in $T/NAME.token, its line added to tokens.
tok() {
	"$DBGMIRROR" --no-config token "$1" --scopes "$2" >"$T/$1.out" ||
	    bail "dbgmirror token failed"
	sed -n 's/^token: //p' "$T/$1.out" >"$T/$1.token"
	sed -n 's/^line: //p' "$T/$1.out" >>"$T/tokens"
}
: >"$T/tokens"
tok reader read
tok watcher metrics
tok admin admin
grep -q "$(cat "$T/reader.token")" "$T/tokens"
ok $((! $?)) "the token file holds hashes, never the tokens"
like "$(cat "$T/tokens")" '^[0-9a-f]{64} read reader' "a token line: hash, scopes, name"

start_daemon d --scan-dir "$FX" --token-file "$T/tokens" \
    --access "read token" --access "metadata token" \
    --access "metrics addr=127.0.0.0/8" --access "status addr=10.0.0.0/8" \
    --access "admin token+addr=127.0.0.1"
bearer() { echo "Authorization: Bearer $(cat "$T/$1.token")"; }

# answer URL ARGS...: status line, headers without Date, body, into $T/ans.
answer() {
	local url=$1
	shift
	curl -s --max-time 10 -D "$T/h" -o "$T/b" "$@" "$url"
	tr -d '\r' <"$T/h" | grep -vi '^date:' >"$T/ans"
	cat "$T/b" >>"$T/ans"
}

answer "$d_URL/buildid/$ID_prog_a/debuginfo"
is "$(head -n 1 "$T/ans")" "HTTP/1.1 401 Unauthorized" "no token: 401"
grep -qi '^WWW-Authenticate: Bearer' "$T/ans"
ok $? "... with WWW-Authenticate: Bearer"
is "$(cat "$T/b")" "read: this needs Authorization: Bearer with a token" \
    "... and a one-line reason"
cp "$T/ans" "$T/ans.exists"
answer "$d_URL/buildid/$missing/debuginfo"
cmp -s "$T/ans" "$T/ans.exists"
ok $? "a missing id gets the very same answer: nothing leaks"
answer "$d_URL/buildid/$ID_prog_a/debuginfo" -H "Authorization: Bearer nope"
is "$(cat "$T/b")" "read: the bearer token is not valid" "a bad token: 401"
like "$(head -n 1 "$T/ans")" ' 401 ' "... status 401"
answer "$d_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer watcher)"
like "$(head -n 1 "$T/ans")" ' 403 ' "a token without the read scope: 403"
answer "$d_URL/buildid/$missing/debuginfo" -H "$(bearer watcher)"
like "$(head -n 1 "$T/ans")" ' 403 ' "... for a missing id too"
curl -s --max-time 10 -o "$T/body" -H "$(bearer reader)" \
    "$d_URL/buildid/$ID_prog_a/debuginfo"
cmp -s "$T/body" "$dbg/prog_a.debug"
ok $? "the read token gets the file"
is "$(code "$d_URL/buildid/$missing/debuginfo" -H "$(bearer reader)")" 404 \
    "... and a missing id is 404 only to it"
is "$(code "$d_URL/metadata?key=glob&value=/usr/*")" 401 "/metadata needs a token"
is "$(code "$d_URL/metadata?key=glob&value=/usr/*" -H "$(bearer reader)")" 403 \
    "... with the metadata scope"
is "$(code "$d_URL/metrics")" 200 "/metrics: open to 127.0.0.0/8"
is "$(code "$d_URL/status")" 403 "/status: only 10.0.0.0/8, so 403"
is "$(code "$d_URL/status" -H "X-Forwarded-For: 10.1.1.1")" 403 \
    "... and X-Forwarded-For from a peer not trusted changes nothing"
is "$(code "$d_URL/admin/purge?negative" -X POST)" 401 "admin: token needed"
is "$(code "$d_URL/admin/purge?negative" -X POST -H "$(bearer admin)")" 200 \
    "admin: token+addr both hold"
access_log_has d "\"GET /buildid/$missing/debuginfo\" 401 .* DENIED"
ok $? "a denial is in the access log"
lt 2 "$(metric 'dbgmirror_access_denied_total{reason="unauthorized"}' "$d_URL")"
ok $? "denials are counted"

# DEBUGINFOD_HEADERS_FILE: what libdebuginfod sends along.
bearer reader >"$T/headers"
FOUND=$(DEBUGINFOD_URLS=$d_URL DEBUGINFOD_HEADERS_FILE=$T/headers \
    DEBUGINFOD_CACHE_PATH=$T/hc1 timeout 60 debuginfod-find debuginfo \
    "$ID_prog_a" 2>/dev/null)
[ -n "$FOUND" ] && cmp -s "$FOUND" "$dbg/prog_a.debug"
ok $? "debuginfod-find sends the token from DEBUGINFOD_HEADERS_FILE"
FOUND=$(DEBUGINFOD_URLS=$d_URL DEBUGINFOD_CACHE_PATH=$T/hc2 timeout 60 \
    debuginfod-find debuginfo "$ID_prog_a" 2>/dev/null)
[ -z "$FOUND" ]
ok $? "... and without it gets nothing"

# SIGHUP reads the token file again.
tok late read
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer late)")" 401 \
    "a token added to the file is not known yet"
kill -HUP "$d_PID"
wait_until 20 grep -q 'certificates and tokens reloaded' "$d_LOG"
wait_until 20 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H '$(bearer late)' '$d_URL/buildid/$ID_prog_a/debuginfo')\" = 200 ]"
ok $? "... and after SIGHUP it is"

# X-Forwarded-For from a trusted proxy.
start_daemon p --scan-dir "$FX" --trusted-proxy 127.0.0.0/8 \
    --access "read addr=10.1.0.0/16"
is "$(code "$p_URL/buildid/$ID_prog_a/executable")" 403 \
    "the proxy itself is not in 10.1.0.0/16"
is "$(code "$p_URL/buildid/$ID_prog_a/executable" \
    -H "X-Forwarded-For: 10.1.2.3")" 200 \
    "from a trusted proxy, X-Forwarded-For names the client"
is "$(code "$p_URL/buildid/$ID_prog_a/executable" \
    -H "X-Forwarded-For: 10.1.2.3, 127.0.0.9")" 200 \
    "... the rightmost entry that is not a trusted proxy"
is "$(code "$p_URL/buildid/$ID_prog_a/executable" \
    -H "X-Forwarded-For: 10.1.2.3, 192.0.2.7")" 403 \
    "... not an entry the client wrote to its left"
is "$(code "$p_URL/buildid/$ID_prog_a/executable" \
    -H "X-Forwarded-For: nonsense")" 403 "... and garbage matches nothing"

# Client certificate subjects.
C=$T/certs
make_certs "$C"
start_daemon s --scan-dir "$FX" \
    --listen "127.0.0.1:0 tls cert=$C/server.pem key=$C/server.key client-ca=$C/ca.pem client-cert=optional" \
    --access "read subject=CN=ci,O=Example"
S=https://127.0.0.1:$(tls_port s)
is "$(code "$S/buildid/$ID_prog_a/executable" --cacert "$C/ca.pem" \
    --cert "$C/ci.pem" --key "$C/ci.key")" 200 "subject CN=ci,O=Example: allowed"
is "$(code "$S/buildid/$ID_prog_a/executable" --cacert "$C/ca.pem" \
    --cert "$C/dev.pem" --key "$C/dev.key")" 403 "another subject: 403"
is "$(code "$S/buildid/$ID_prog_a/executable" --cacert "$C/ca.pem")" 403 \
    "no certificate (optional here): 403"
is "$(code "$s_URL/buildid/$ID_prog_a/executable")" 403 \
    "plain HTTP has no subject: 403"

"$DBGMIRRORD" --no-config --cache-dir "$T/cc" --access "reed any" \
    --check-config >/dev/null 2>"$T/check.err"
[ $? -ne 0 ] && grep -q "the class is read" "$T/check.err"
ok $? "--check-config names a bad access class"
"$DBGMIRRORD" --no-config --cache-dir "$T/cc" --access "read addr=10.0.0.0/33" \
    --check-config >/dev/null 2>"$T/check.err"
[ $? -ne 0 ] && grep -q "addr= needs" "$T/check.err"
ok $? "... and a bad CIDR"

for n in d p s; do
	stop_daemon "$n"
	is "$STOP_RC" 0 "$n exits cleanly"
done
done_testing
