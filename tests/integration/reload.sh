#!/bin/bash
# SIGHUP reads the configuration file again (daemon/reload.c), as an
# operator does it: edit the file, kill -HUP, wait for the reload's line.
# The daemon is started with the file alone (and one setting on the
# command line, which still wins).  An upstream added (an id only it has
# is served), then removed (an id only it has is a 404, and it gets no
# request); negative-ttl on the test clock (new misses get the new TTL);
# an apt repository added (refreshed, then served), then removed (not
# consulted, its refresh stopped); listen changed (needs a restart, logged,
# and served on the old address); a 100 MiB download through a throttled
# client across a reload (byte-identical) and a kept-alive connection that
# serves requests after; a file with a syntax error (nothing changed, the
# metric of failed reloads, /status says so); an access rule changed, and
# one removed while a typo sits elsewhere in the file (the removed rule
# lets no one in, the typo is logged with its line, the other settings
# stay); an access line that does not parse closes its class; a
# symbolicate-* limit changed applies to the next /symbolicate request;
# max-forwarded-for lowered reaches the files a symbol table is made of.
. "$top_srcdir/tests/integration/lib.sh"

command -v nginx >/dev/null || bail "nginx is not installed"
command -v gpgv >/dev/null || bail "gpgv is not installed"
command -v dpkg-scanpackages >/dev/null || bail "dpkg-dev is not installed"
command -v python3 >/dev/null || bail "python3 is not installed"
# nginx's workers run as another user when started as root.
chmod 755 "$T"
build_fixtures
dbg=$FX/usr/lib/debug

# Two upstreams: up2 alone has id_b and id_b2.
id_a=a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1
id_b=b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2
id_b2=b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3b3
start_fake up1 "$id_a=ok:$(mkbin $id_a)"
start_fake up2 "$id_b=ok:$(mkbin $id_b)" "$id_b2=ok:$(mkbin $id_b2)"

# An apt repository on nginx: prog_a's and prog_b's debug files in one
# package, prog_c's in another.
export GNUPGHOME=$T/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg --batch --passphrase '' --quick-gen-key 'dbgmirror test <t@example.org>' \
    ed25519 sign never >/dev/null 2>&1 &&
    gpg --batch --export >"$T/keyring.gpg"
ok $? "a throwaway signing key"
W=$T/www
for p in prog_a prog_b; do
	eval "id=\$ID_$p"
	mkdir -p "$T/progs/usr/lib/debug/.build-id/${id:0:2}"
	cp "$dbg/$p.debug" "$T/progs/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
done
apt_deb progs-dbgsym "$T/progs" "$ID_prog_a $ID_prog_b"
mkdir -p "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}"
objcopy --only-keep-debug "$FX/usr/bin/prog_c" \
    "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug"
apt_deb progc-dbgsym "$T/progc" "$ID_prog_c"
apt_repo ids progs-dbgsym progc-dbgsym
start_nginx "$W"
REPO="repo = deb $N/ids stable main signed-by=$T/keyring.gpg"

# A 100 MiB debug file, served from the scan directory.
ID_big=a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9
mkdir -p "$T/big"
"$MKELF" --type rel --build-id "$ID_big" --debug .debug_info:100M \
    "$T/big/big.debug" || bail "mkelf failed"

# conf LINES...: the configuration file, the lines after the fixed ones.
CONF=$T/dbgmirror.conf
conf() {
	{
		printf 'listen = 127.0.0.1:0\nthreads = 2\nworkers = 2\n'
		printf 'cache-dir = %s\nupload-dir = %s\n' "$T/d-cache" \
		    "$T/d-uploads"
		printf 'scan-dir = %s\nerror-ttl = 30\n' "$T/big"
		printf '%s\n' "$@"
	} >"$CONF"
}

# hup: SIGHUP, then wait for the reload's last line, set in LINE.  That
# line is logged once every event-loop thread has taken the new
# configuration (daemon/reload.c): the checks send their requests right
# after it and expect the new settings, whichever thread answers.
nreloads=0
hup() {
	nreloads=$((nreloads + 1))
	kill -HUP "$d_PID"
	wait_until 60 sh -c "[ \$(grep -c 'reloaded \\|reload failed' '$d_LOG') -ge $nreloads ]" ||
	    bail "reload $nreloads did not end"
	LINE=$(grep 'reloaded \|reload failed' "$d_LOG" | tail -n 1)
}

# maxage ID: the Cache-Control of the 404 of ID.
maxage() {
	curl -s -D "$T/h" -o /dev/null "$d_URL/buildid/$1/debuginfo"
	header Cache-Control "$T/h"
}

touch -d @1700000000 "$T/clock"
conf "negative-ttl = 600" "upstream = $up1_URL" \
    "access = status addr=127.0.0.1" "access = status addr=10.0.0.0/8"
d_LOG=$T/d.log
DBGMIRROR_TEST_CLOCK=$T/clock env -u DEBUGINFOD_URLS "$DBGMIRRORD" \
    --config "$CONF" --error-ttl 7 2>"$d_LOG" &
d_PID=$!
DAEMON_PIDS="$DAEMON_PIDS $d_PID"
wait_until 60 grep -q 'scan finished' "$d_LOG" || {
	cat "$d_LOG"
	bail "the daemon did not start"
}
d_PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d_LOG")
d_URL=http://127.0.0.1:$d_PORT

# -------------------------------------------------------- the same file

hup
like "$LINE" "reloaded $CONF: nothing changed" \
    "SIGHUP with the file as it was: nothing changed"
conf "negative-ttl = 600" "upstream = $up1_URL" \
    "access = status addr=127.0.0.1" "access = status addr=10.0.0.0/8" \
    "error-ttl = 1"
sed -i '/^error-ttl = 30$/d' "$CONF"
hup
like "$LINE" "reloaded $CONF: nothing changed" \
    "error-ttl changed in the file: the command line's still wins"

# ------------------------------------------------------------- upstreams

is "$(code "$d_URL/buildid/$id_b/debuginfo")" 404 "an id only up2 has: 404"
conf "negative-ttl = 600" "upstream = $up1_URL" "upstream = $up2_URL" \
    "access = status addr=127.0.0.1" "access = status addr=10.0.0.0/8"
hup
like "$LINE" "reloaded $CONF: 1 upstream added" "an upstream added"
# The 404 of before is remembered: another id only up2 has.
curl -s -o "$T/b.out" "$d_URL/buildid/$id_b2/debuginfo"
cmp -s "$T/b.out" "$T/bins/$id_b2"
ok $? "... an id only it has is served"
conf "negative-ttl = 600" "upstream = $up1_URL" \
    "access = status addr=127.0.0.1" "access = status addr=10.0.0.0/8"
hup
like "$LINE" "reloaded $CONF: 1 upstream removed" "the upstream removed"
n=$(wc -l <"$up2_LOG")
# id_b was asked of up1 alone, and remembered: a fresh id of up2's.
is "$(code "$d_URL/buildid/$id_b/executable")" 404 \
    "... an id only it has is a 404"
is "$(wc -l <"$up2_LOG")" "$n" "... and the removed upstream got no request"
is "$(requests_to up1 "$id_b/executable")" 1 "... the one left was asked"

# ---------------------------------------------------------- negative-ttl

id_x=c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1
id_y=c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2c2
is "$(maxage $id_x)" "max-age=600" "a miss: max-age of negative-ttl 600"
conf "negative-ttl = 5" "upstream = $up1_URL" \
    "access = status addr=127.0.0.1" "access = status addr=10.0.0.0/8"
hup
like "$LINE" "reloaded $CONF: negative-ttl changed" "negative-ttl changed"
is "$(maxage $id_y)" "max-age=5" "... a new miss: max-age=5"
touch -d @1700000006 "$T/clock"
code "$d_URL/buildid/$id_x/debuginfo" >/dev/null
code "$d_URL/buildid/$id_y/debuginfo" >/dev/null
is "$(requests_to up1 "$id_y")/$(requests_to up1 "$id_x")" 2/1 \
    "... which is asked again 6 s later, the older one not"

# ---------------------------------------------------------- repositories

base=("negative-ttl = 5" "upstream = $up1_URL"
	"access = status addr=127.0.0.1" "access = status addr=10.0.0.0/8")
conf "${base[@]}" "$REPO"
hup
like "$LINE" "reloaded $CONF: 1 repository added" "a repository added"
wait_until 60 grep -q "repo $N/ids stable: refreshed" "$d_LOG"
ok $? "... refreshed"
curl -s -o "$T/a.out" "$d_URL/buildid/$ID_prog_a/debuginfo"
cmp -s "$T/a.out" "$dbg/prog_a.debug"
ok $? "... and served (prog_a's debug file)"
# nginx logs a request once it has sent the answer: wait for the line.
wait_until 10 grep -q 'GET /ids/pool/' "$T/nginx/access.log"
ok $? "... from its package, which the repository gave"
pool=$(grep -c 'GET /ids/pool/' "$T/nginx/access.log")
conf "${base[@]}"
hup
like "$LINE" "reloaded $CONF: 1 repository removed" "the repository removed"
releases=$(grep -c 'GET /ids/dists/stable/InRelease' "$T/nginx/access.log")
is "$(code "$d_URL/buildid/$ID_prog_c/debuginfo")" 404 \
    "... an id it has is a 404"
is "$(grep -c 'GET /ids/pool/' "$T/nginx/access.log")" "$pool" \
    "... no package of it is fetched"
scans=$(grep -c 'scan finished' "$d_LOG")
kill -USR1 "$d_PID"
wait_until 60 sh -c "[ \$(grep -c 'scan finished' '$d_LOG') -gt $scans ]"
is "$(grep -c 'GET /ids/dists/stable/InRelease' "$T/nginx/access.log")" \
    "$releases" "... and SIGUSR1 refreshes it no more"
metric_text=$(curl -s "$d_URL/metrics")
case $metric_text in
*'repo="'*) ok 1 "... nor does /metrics show it" ;;
*) ok 0 "... nor does /metrics show it" ;;
esac

# ---------------------------------------------------------------- listen

sed -i 's/^listen = 127\.0\.0\.1:0$/listen = 127.0.0.2:0/' "$CONF"
hup
like "$LINE" "reloaded $CONF: listen needs a restart" \
    "listen changed: it needs a restart"
grep -q "reload: listen: 127.0.0.2:0 in the file, 127.0.0.1:0 running: it needs a restart" "$d_LOG"
ok $? "... logged with the file's value and the running one"
is "$(code "$d_URL/metrics")" 200 "... and served on the old address"
sed -i 's/^listen = 127\.0\.0\.2:0$/listen = 127.0.0.1:0/' "$CONF"

# --------------------------------- a download and a kept-alive connection

# The client is stopped (SIGSTOP) for the reload, so that the download is
# under way across it however slow the machine, and continued after; the
# exit's cleanup ends it if the script stops half-way.
size=$(stat -c %s "$T/big/big.debug")
curl -s --max-time 300 --limit-rate 10M -o "$T/big.out" \
    "$d_URL/buildid/$ID_big/debuginfo" &
curl_pid=$!
DAEMON_PIDS="$DAEMON_PIDS $curl_pid"
python3 - "$d_PORT" "$T/ka" <<'EOF' &
import http.client, os, sys, time
port, base = int(sys.argv[1]), sys.argv[2]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
c.auto_open = 0
c.connect()
c.request("GET", "/")
r = c.getresponse()
r.read()
first = c.sock.getsockname()
open(base + ".ready", "w").close()
for _ in range(1200):
    if os.path.exists(base + ".go"):
        break
    time.sleep(0.05)
c.request("GET", "/metrics")
r = c.getresponse()
body = r.read()
with open(base + ".out", "w") as f:
    f.write("%d %s\n" % (r.status, "same" if c.sock.getsockname() == first else "other"))
EOF
ka_pid=$!
wait_until 60 test -e "$T/ka.ready"
wait_until 60 sh -c "[ \$(stat -c %s '$T/big.out' 2>/dev/null || echo 0) -gt 1048576 ]"
kill -STOP "$curl_pid"
got=$(stat -c %s "$T/big.out")
conf "${base[@]/negative-ttl = 5/negative-ttl = 6}"
hup
like "$LINE" "negative-ttl changed" "a reload during a download"
[ "$got" -lt "$size" ] && kill -0 "$curl_pid" 2>/dev/null
ok $? "... which was under way then ($got of $size bytes)"
kill -CONT "$curl_pid"
touch "$T/ka.go"
wait "$curl_pid"
ok $? "... and completes"
cmp -s "$T/big.out" "$T/big/big.debug"
ok $? "... byte-identical"
wait "$ka_pid"
is "$(cat "$T/ka.out" 2>/dev/null)" "200 same" \
    "a kept-alive connection opened before serves a request after"

# ---------------------------------------------------- a file that fails

loaded=$(metric dbgmirror_config_last_reload_success_timestamp_seconds "$d_URL")
conf "${base[@]/negative-ttl = 5/negative-ttl = 6}" "this is not a setting" \
    "upstream = $up2_URL"
hup
like "$LINE" "reload failed: $CONF did not load" "a syntax error: the reload failed"
grep -q "reload: $CONF:12: expected name = value" "$d_LOG"
ok $? "... logged with its file and line"
is "$(metric 'dbgmirror_config_reloads_total{result="failed"}' "$d_URL")" 1 \
    "... counted: dbgmirror_config_reloads_total{result=\"failed\"} 1"
is "$(metric dbgmirror_config_last_reload_success_timestamp_seconds "$d_URL")" \
    "$loaded" "... the last success's time unchanged"
page=$(curl -s "$d_URL/status")
like "$page" 'id="config-reload">the last reload failed .*:12: expected name = value' \
    "... /status says so, and why"
n=$(wc -l <"$up2_LOG")
id_c=c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3
code "$d_URL/buildid/$id_c/debuginfo" >/dev/null
is "$(wc -l <"$up2_LOG")" "$n" "... nothing changed: the upstream added is not"

# ---------------------------------------------------------- access rules

conf "negative-ttl = 5" "upstream = $up1_URL" \
    "access = status addr=127.0.0.2" "access = status addr=10.0.0.0/8"
hup
like "$LINE" "reloaded $CONF: access rules changed" "an access rule changed"
# Eight connections right after the line, spread over both threads.
codes=$(for i in 1 2 3 4 5 6 7 8; do code "$d_URL/status"; echo; done |
    sort -u | paste -sd' ')
is "$codes" 403 "... /status is closed to 127.0.0.1 now, on every thread"
conf "${base[@]}"
hup
is "$(code "$d_URL/status")" 200 "... and open again"
# One edit: the rule of 127.0.0.1 removed, a typo at line 11, and another
# setting changed, which must not apply.
conf "negative-ttl = 77" "upstream = $up1_URL" \
    "access = status addr=10.0.0.0/8" "negative-tll = 1"
hup
like "$LINE" "reload failed: $CONF did not load" \
    "a rule removed while a typo sits elsewhere: the reload failed"
is "$(code "$d_URL/status")" 403 "... the removed rule lets no one in (403)"
grep -q "reload: $CONF:11: negative-tll: unknown option (did you mean negative-ttl?)" "$d_LOG"
ok $? "... the typo is logged with its line"
is "$(maxage c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4)" "max-age=5" \
    "... and the other settings are unchanged (negative-ttl 5, not 77)"
# An access line that does not parse closes its class, none other.
conf "${base[@]}" "access = metrics addr=300.1.2.3"
hup
like "$LINE" "reload failed" "an access line that does not parse"
is "$(code "$d_URL/metrics")/$(code "$d_URL/status")" 403/200 \
    "... closes its class (403), not the others"
grep -q "access metrics is denied to every client until a reload fixes it" "$d_LOG"
ok $? "... which is said"
conf "${base[@]}"
hup
like "$LINE" "reloaded $CONF" "the file fixed: reloaded"
is "$(code "$d_URL/metrics")" 200 "... and /metrics open again"
is "$(metric 'dbgmirror_config_reloads_total{result="ok"}' "$d_URL")" 12 \
    "dbgmirror_config_reloads_total{result=\"ok\"} counts the others"

# ----------------------------------------------------------- symbolicate

sym="$d_URL/buildid/$id_c/symbolicate?addr=0x1,0x2"
is "$(code "$sym")" 200 "two addresses to symbolicate: 200"
conf "${base[@]}" "symbolicate-max-frames = 1"
hup
like "$LINE" "symbolicate-max-frames changed" \
    "symbolicate-max-frames lowered to 1: reloaded"
is "$(code "$sym")" 400 "... the next request of two addresses is refused (400)"

# A symbol table's files are asked for under the reloaded settings, as
# every request is: max-forwarded-for lowered to 1, a table wanted
# through one proxy does not have its debuginfo asked of the upstream.
id_t=c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6c6
conf "${base[@]}" "max-forwarded-for = 1"
hup
like "$LINE" "max-forwarded-for.* changed" "max-forwarded-for lowered to 1"
xsym() {
	curl -s -H 'X-Forwarded-For: 10.9.9.9' \
	    "$d_URL/buildid/$id_t/symbolicate?addr=0x1"
}
table_decided() {
	xsym | grep -q '"modules":\[{[^]]*"status":"error"'
}
wait_until 60 table_decided
ok $? "... a table wanted through one proxy: an error (a loop)"
is "$(requests_to up1 "/buildid/$id_t/")" 0 \
    "... and the upstream was not asked for its files"
is "$(code "$d_URL/buildid/$id_t/debuginfo" -H 'X-Forwarded-For: 10.9.9.9')" \
    404 "... as it is not for a request of its debuginfo"

stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit status 0"
done_testing
