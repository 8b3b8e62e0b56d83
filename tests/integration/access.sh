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
wait_until 20 grep -q 'reloaded \|reload failed' "$d_LOG"
wait_until 20 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' -H '$(bearer late)' '$d_URL/buildid/$ID_prog_a/debuginfo')\" = 200 ]"
ok $? "... and after SIGHUP it is"

# dbgmirror token refuses a scope the daemon would not know.
"$DBGMIRROR" --no-config token typo --scopes read,uplaod >"$T/typo.out" \
    2>"$T/typo.err"
is "$?" 2 "dbgmirror token --scopes read,uplaod: exit status 2"
like "$(cat "$T/typo.err")" '"uplaod" is not a scope' "... naming the word"
is "$(cat "$T/typo.out")" "" "... and printing no token or line"

# A revocation fails closed: one edit removes reader's line and adds a
# line the daemon cannot take.  After SIGHUP reader is refused, the good
# lines stay, and the bad one is logged with its file and line.
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer reader)")" 200 \
    "reader's token works before the edit"
"$DBGMIRROR" --no-config token typo --scopes read >"$T/typo.out"
sed -n 's/^token: //p' "$T/typo.out" >"$T/typo.token"
grep -v ' reader$' "$T/tokens" >"$T/tokens.new"
echo "$(sed -n 's/^line: \([0-9a-f]*\) .*/\1/p' "$T/typo.out") read,uplaod typo" \
    >>"$T/tokens.new"
badline=$(wc -l <"$T/tokens.new")
mv "$T/tokens.new" "$T/tokens"
reloads=$(grep -c 'reloaded \|reload failed' "$d_LOG")
kill -HUP "$d_PID"
wait_until 20 sh -c "[ \$(grep -c 'reloaded \|reload failed' '$d_LOG') -gt $reloads ]"
ok $? "SIGHUP with a bad line in the token file"
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer reader)")" 401 \
    "... the token removed in that edit: 401"
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer late)")" 200 \
    "... a token still listed: 200"
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer typo)")" 401 \
    "... the bad line's token: 401"
grep -q "token-file $T/tokens:$badline: \"uplaod\" is not a scope: .*; the line is ignored" "$d_LOG"
ok $? "... the bad line is logged with its file and line"
"$DBGMIRRORD" --no-config --cache-dir "$T/cc" --token-file "$T/tokens" \
    --check-config >/dev/null 2>"$T/check.err"
[ $? -ne 0 ] && grep -q "tokens:$badline: \"uplaod\"" "$T/check.err"
ok $? "--check-config counts the bad line as a problem"
# A restart with the same file: the same tokens, not a refusal to start.
start_daemon d2 --scan-dir "$FX" --token-file "$T/tokens" \
    --access "read token"
is "$(code "$d2_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer reader)")" 401 \
    "a restart with that file: the removed token 401"
is "$(code "$d2_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer late)")" 200 \
    "... a listed one 200"
grep -q "tokens:$badline: \"uplaod\" is not a scope" "$d2_LOG"
ok $? "... and the bad line logged"
stop_daemon d2
# A token file that cannot be read on SIGHUP leaves no token valid.
mv "$T/tokens" "$T/tokens.away"
reloads=$(grep -c 'reloaded \|reload failed' "$d_LOG")
kill -HUP "$d_PID"
wait_until 20 sh -c "[ \$(grep -c 'reloaded \|reload failed' '$d_LOG') -gt $reloads ]"
is "$(code "$d_URL/buildid/$ID_prog_a/debuginfo" -H "$(bearer late)")" 401 \
    "a token file gone on SIGHUP: no token is valid"
grep -q "token-file $T/tokens: No such file or directory: none of its tokens is valid" "$d_LOG"
ok $? "... which is logged"
mv "$T/tokens.away" "$T/tokens"

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

# subject= is bound to the CA that verified the certificate.  Listener A
# trusts the in-house CA, listener B a partner's (other): a partner
# certificate with the in-house DN meets no rule meant for the in-house CA.
start_daemon b --scan-dir "$FX" \
    --listen "127.0.0.1:0 tls cert=$C/server.pem key=$C/server.key client-ca=$C/ca.pem client-cert=optional" \
    --listen "127.0.0.1:0 tls cert=$C/server.pem key=$C/server.key client-ca=$C/other.pem client-cert=optional" \
    --access "read subject=CN=ci,O=Example+ca=$C/ca.pem"
A=https://127.0.0.1:$(tls_port b)
B=https://127.0.0.1:$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) (TLS).*/\1/p' "$b_LOG" | sed -n 2p)
is "$(code "$A/buildid/$ID_prog_a/executable" --cacert "$C/ca.pem" \
    --cert "$C/ci.pem" --key "$C/ci.key")" 200 \
    "two CAs: the in-house certificate on the in-house listener: allowed"
is "$(code "$B/buildid/$ID_prog_a/executable" --cacert "$C/ca.pem" \
    --cert "$C/rogue.pem" --key "$C/rogue.key")" 403 \
    "... the partner's certificate with the same DN, on its listener: 403"
"$DBGMIRRORD" --no-config --cache-dir "$T/cc" \
    --listen "127.0.0.1:0 tls cert=$C/server.pem key=$C/server.key client-ca=$C/ca.pem" \
    --listen "127.0.0.1:0 tls cert=$C/server.pem key=$C/server.key client-ca=$C/other.pem" \
    --access "read subject=CN=ci,O=Example" --check-config >/dev/null \
    2>"$T/check.err"
[ $? -ne 0 ] && grep -q "command line: access read: a subject= rule without ca=" "$T/check.err"
ok $? "a subject= rule without ca= while two CAs verify: refused"
"$DBGMIRRORD" --no-config --cache-dir "$T/cc" \
    --listen "127.0.0.1:0 tls cert=$C/server.pem key=$C/server.key client-ca=$C/ca.pem" \
    --access "read subject=CN=ci,O=Example+ca=$C/other.pem" --check-config \
    >/dev/null 2>"$T/check.err"
[ $? -ne 0 ] && grep -q "ca=$C/other.pem: no listen line has this client-ca" "$T/check.err"
ok $? "a ca= that no listener verifies with: refused"
stop_daemon b

"$DBGMIRRORD" --no-config --cache-dir "$T/cc" --access "reed any" \
    --check-config >/dev/null 2>"$T/check.err"
[ $? -ne 0 ] && grep -q "the class is read" "$T/check.err"
ok $? "--check-config names a bad access class"
"$DBGMIRRORD" --no-config --cache-dir "$T/cc" --access "read addr=10.0.0.0/33" \
    --check-config >/dev/null 2>"$T/check.err"
[ $? -ne 0 ] && grep -q "addr= needs" "$T/check.err"
ok $? "... and a bad CIDR"

# admin-token and access = admin lines: the lines replace admin-access,
# the admin-token is still required; both are said at start-up and by
# --check-config, naming the line.
printf 'adm1n-t0ken\n' >"$T/admin.token"
start_daemon ad --scan-dir none --admin-token "$T/admin.token" \
    --access "admin addr=127.0.0.0/8"
is "$(code "$ad_URL/admin/purge?negative" -X POST)" 401 \
    "admin-token with an access = admin line: still needed"
is "$(code "$ad_URL/admin/purge?negative" -X POST \
    -H "Authorization: Bearer adm1n-t0ken")" 200 "... and enough with the line"
grep -q "warning: access = admin addr=127.0.0.0/8 (command line) and the other access = admin lines override admin-access = loopback (default).*admin-token still applies" "$ad_LOG"
ok $? "... the start-up log says the lines override admin-access, by which line"
stop_daemon ad
"$DBGMIRRORD" --no-config --cache-dir "$T/cc" --access "admin any" \
    --trusted-proxy 0.0.0.0/0 --upstream-redirects any --check-config \
    >"$T/check.out" 2>"$T/check.err"
is "$?" 0 "--check-config: weakened defaults are no errors"
grep -q "warning: access = admin any (command line) opens the admin endpoints .* to every client, without a token" "$T/check.err"
ok $? "... but access = admin any is said"
grep -q "warning: trusted-proxy = 0.0.0.0/0 (command line) trusts" "$T/check.err"
ok $? "... and trusted-proxy 0.0.0.0/0"
grep -q "warning: upstream-redirects = any (command line)" "$T/check.err"
ok $? "... and upstream-redirects any"
"$DBGMIRRORD" --no-config --cache-dir "$T/cc" --check-config \
    >"$T/check.out" 2>"$T/check.err"
is "$(cat "$T/check.err")" "" "the defaults: nothing to say"

for n in d p s; do
	stop_daemon "$n"
	is "$STOP_RC" 0 "$n exits cleanly"
done
done_testing
