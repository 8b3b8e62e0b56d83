#!/bin/bash
# Configuration as a user meets it: --check-config on good and bad files,
# the example config, settings from a file, the command line over the file,
# --help/--version, and start-up failures that must be clear and non-zero.
. "$top_srcdir/tests/integration/lib.sh"

D=$DBGMIRRORD
out=$("$D" --check-config --config "$top_srcdir/conf/dbgmirror.conf" 2>&1)
is "$?" 0 "the example config passes --check-config"
like "$out" "configuration OK" "and says so"

cat >"$T/bad.conf" <<'CONF'
# three problems
threads = many
listen = 127.0.0.1:8002
no-such-option = 1
rescan-interval = 10
rescan-interval = 20
CONF
out=$("$D" --check-config --config "$T/bad.conf" 2>&1)
is "$?" 1 "a bad config fails --check-config"
like "$out" "$T/bad.conf:2: threads" "problem 1 with file:line"
like "$out" "$T/bad.conf:4: no-such-option" "problem 2 with file:line"
like "$out" "$T/bad.conf:6: rescan-interval.*set twice" "problem 3 with file:line"
like "$out" "3 problems" "every problem is reported, and counted"
out=$("$D" --config "$T/bad.conf" 2>&1)
is "$?" 1 "the daemon refuses to start on a bad config"

# Which file was read is always said: the default path this build reads
# (the one --help names), or that none was.
deffile=$("$D" --help | sed -n 's/.*read FILE instead of //p')
like "$deffile" '/dbgmirror/dbgmirror\.conf$' "--help names the default file: $deffile"
out=$("$D" --check-config 2>&1)
if [ -f "$deffile" ]; then
	like "$out" "^$deffile: " "--check-config names the default file it read"
else
	like "$out" "no file \($deffile does not exist\): embedded defaults: configuration OK" \
	    "--check-config says no file was read, naming the path looked for"
fi
like "$("$D" --no-config --check-config 2>&1)" "no file \(--no-config\)" \
    "... or that --no-config read none"
like "$("$D" --check-config --config "$top_srcdir/conf/dbgmirror.conf" 2>&1)" \
    "^$top_srcdir/conf/dbgmirror.conf: configuration OK" "... or the file given"

# A misspelt option gets a suggestion; a word like no option gets none.
like "$("$D" --no-config --cache-sise 1G --check-config 2>&1)" \
    "--cache-sise: unknown option \(did you mean --cache-size\?\)" \
    "a misspelt option on the command line: did you mean"
printf 'negativ-ttl = 5\n' >"$T/typo.conf"
like "$("$D" --config "$T/typo.conf" --check-config 2>&1)" \
    "typo.conf:1: negativ-ttl: unknown option \(did you mean negative-ttl\?\)" \
    "... and in a file"
out=$("$D" --no-config --zzzzzzzz 1 --check-config 2>&1)
like "$out" "--zzzzzzzz: unknown option$" "... but not for a word like no option"

out=$("$D" --check-config --config "$T/missing.conf" 2>&1)
is "$?" 1 "a missing config file is an error"
like "$out" "missing.conf" "naming the file"

# Every file and directory a setting names, as the daemon's user finds
# them: the user "user" names when checked as root, else the caller.
chmod 755 "$T"
mkdir -p "$T/cf/scan" "$T/cf/ro-cache"
printf 'dbgm_x\n' >"$T/cf/secret"
chmod 600 "$T/cf/secret"
if [ "$(id -u)" -eq 0 ]; then
	userline="user = nobody"
	who="the user nobody"
else
	userline="# no user: checked as the caller"
	who="this user"
	chmod 000 "$T/cf/secret"
fi
chmod 555 "$T/cf/ro-cache"
cat >"$T/cf/paths.conf" <<CONF
$userline
cache-dir = $T/cf/ro-cache
scan-dir = $T/cf/scan
scan-dir = $T/cf/no-such-dir
admin-token = $T/cf/no-admin-token
token-file = $T/cf/secret
ca-file = $T/cf/no-ca.pem
listen = 127.0.0.1:0 tls cert=$T/cf/no-cert.pem key=$T/cf/no-key.pem
repo = deb http://127.0.0.1:1/debian stable main signed-by=$T/cf/no-keyring.gpg
CONF
out=$("$D" --check-config --config "$T/cf/paths.conf" 2>&1)
is "$?" 1 "--check-config fails on files and directories that are not there"
like "$out" "paths.conf:4: scan-dir: $T/cf/no-such-dir: No such file or directory" \
    "... a missing scan-dir, with its line"
like "$out" "paths.conf:5: admin-token: $T/cf/no-admin-token: No such file or directory" \
    "... a missing admin-token file"
like "$out" "paths.conf:6: token-file: $T/cf/secret: $who cannot read it" \
    "... a token-file $who cannot read"
like "$out" "paths.conf:7: ca-file: $T/cf/no-ca.pem: No such file" \
    "... a missing ca-file"
like "$out" "paths.conf:8: listen: $T/cf/no-cert.pem: No such file" \
    "... a missing certificate"
like "$out" "paths.conf:8: listen: $T/cf/no-key.pem: No such file" \
    "... and key"
like "$out" "paths.conf:9: repo: $T/cf/no-keyring.gpg: No such file" \
    "... a missing keyring"
if [ "$(id -u)" -eq 0 ]; then
	like "$out" "paths.conf:2: cache-dir: $T/cf/ro-cache: belongs to uid 0, not to the user nobody" \
	    "... a cache directory of another user"
else
	like "$out" "paths.conf:2: cache-dir: $T/cf/ro-cache: this user cannot write in it" \
	    "... a cache directory the user cannot write in"
fi
ok "$(echo "$out" | grep -c "paths.conf:3:" | grep -qx 0; echo $?)" \
    "... and nothing about the scan-dir that is there"
like "$("$D" --no-config --scan-dir "$T/cf/gone" --cache-dir "$T/cf/c" \
    --check-config 2>&1)" \
    "^dbgmirrord: command line: scan-dir: $T/cf/gone: No such file or directory" \
    "... and the command line as where a value came from"

mkdir -p "$T/scan"
cp /bin/true "$T/scan/" 2>/dev/null
cat >"$T/good.conf" <<CONF
listen = 127.0.0.1:0
cache-dir = $T/conf-cache
scan-dir = $T/scan
access-log = off
threads = 1
CONF
"$D" --config "$T/good.conf" 2>"$T/c.log" &
c_PID=$!
DAEMON_PIDS="$DAEMON_PIDS $c_PID"
c_LOG=$T/c.log
wait_until 10 grep -q 'listening on' "$c_LOG"
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$c_LOG")
like "$(cat "$c_LOG")" "cache $T/conf-cache, 1 threads" \
    "cache-dir and threads come from the file"
like "$(cat "$c_LOG")" "configuration: $T/good.conf" "the log names the file read"
like "$(cat "$c_LOG")" "scanning $T/scan" "scan-dir from the file"
is "$(code "http://127.0.0.1:$port/")" 200 "it serves"
stop_daemon c
is "$STOP_RC" 0 "stops cleanly"
# Stopped, it has written every line it would.
if grep -q '"GET /"' "$c_LOG"; then r=1; else r=0; fi
ok $r "access-log = off: no access-log line"

"$D" --config "$T/good.conf" --access-log on --threads 2 2>"$T/c2.log" &
c_PID=$!
DAEMON_PIDS="$DAEMON_PIDS $c_PID"
c_LOG=$T/c2.log
wait_until 10 grep -q 'listening on' "$c_LOG"
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$c_LOG")
like "$(cat "$c_LOG")" "2 threads" "the command line overrides the file"
code "http://127.0.0.1:$port/" >/dev/null
access_log_has c '"GET /" 200'
ok $? "--access-log on overrides access-log = off"
stop_daemon c

out=$("$D" --no-config --threads -1 2>&1)
is "$?" 1 "a bad command-line value exits 1"
like "$out" "command line.*threads" "saying which option"
out=$("$D" --no-config --frobnicate 2>&1)
is "$?" 1 "an unknown flag exits 1"
out=$("$D" --no-config extra-argument 2>&1)
is "$?" 1 "a stray argument exits 1"
like "$out" "extra-argument" "naming it"
out=$("$D" --help)
is "$?" 0 "--help exits 0"
for opt in listen threads workers cache-dir scan-dir rescan-interval \
    index-map-size max-header-size max-connections header-timeout \
    keepalive-timeout send-timeout shutdown-timeout access-log log-level; do
	like "$out" "--$opt" "--help lists --$opt"
done
like "$("$D" --version)" "^dbgmirrord [0-9]+\.[0-9]+" "--version"

# A port in use is a start-up error, not a silent share.
start_daemon a
out=$("$D" --no-config --listen "127.0.0.1:$a_PORT" --cache-dir "$T/b-cache" \
    2>&1)
is "$?" 1 "a listen address in use: exit 1"
like "$out" "listen 127.0.0.1:$a_PORT: Address already in use" \
    "with the address and the reason"
out=$("$D" --no-config --listen 127.0.0.1:0 --cache-dir /proc/forbidden 2>&1)
is "$?" 1 "an unusable cache directory: exit 1"
like "$out" "/proc/forbidden" "naming it"

# Defaults: 127.0.0.1:8002 and [::1]:8002 when the port is free.
if (exec 3<>/dev/tcp/127.0.0.1/8002) 2>/dev/null; then
	skip "port 8002 is in use on this machine"
	skip "port 8002 is in use on this machine"
else
	"$D" --no-config --cache-dir "$T/default-cache" 2>"$T/def.log" &
	def_PID=$!
	DAEMON_PIDS="$DAEMON_PIDS $def_PID"
	wait_until 10 grep -q 'scan finished' "$T/def.log"
	like "$(cat "$T/def.log")" "listening on 127.0.0.1:8002" \
	    "listens on 127.0.0.1:8002 by default"
	if grep -q '::1' /proc/net/if_inet6 2>/dev/null ||
	    [ -n "$(ip -6 addr show lo 2>/dev/null)" ]; then
		like "$(cat "$T/def.log")" "listening on \[::1\]:8002" \
		    "and on [::1]:8002"
	else
		skip "no IPv6 loopback here"
	fi
	stop_daemon def
fi
done_testing
