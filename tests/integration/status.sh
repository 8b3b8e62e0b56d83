#!/bin/bash
# The status page, /status (and / for a browser), loaded by a real browser:
# headless Chromium renders it from a running daemon, and the test reads
# the rendered DOM (--dump-dom) and checks that a screenshot is made.  The
# daemon is put in a known state first: requests of each result in the
# current minute of the test clock, a fill in flight with a waiting
# request, an upstream whose breaker opened on an error, a missing id, and
# a warning in the log.  The page says where the server listens, its
# configuration file and the disk against min-free-disk, charts the last
# hour in inline SVG, and shows a remote repository and an object store
# as they are when they are configured (here a repository whose refresh
# fails and a store that cannot be reached; repo_apt.sh and store.sh look
# at working ones).
. "$top_srcdir/tests/integration/lib.sh"

command -v chromium >/dev/null ||
    bail "chromium is not installed (./quickstart installs it)"

id_ok=a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1
id_gone=c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0
id_slow=d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5d5
id_fail=e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0
bin_ok=$(mkbin $id_ok)
start_fake up "$id_ok=ok:$bin_ok" "$id_slow=hang" "$id_fail=status:503"

touch -d @1700000000 "$T/clock"
# The hanging fill stays in flight for as long as the test needs it.
DBGMIRROR_TEST_CLOCK=$T/clock start_daemon d --scan-dir none \
    --upstream "$up_URL" --breaker-failures 1 --breaker-backoff 3600 \
    --upstream-first-byte-timeout 600 --cache-size 1G

# browser WHAT ARGS...: headless Chromium on its own profile under $T,
# bounded in time; its own noise goes to $T/chromium.err.
browser() {
	timeout 60 chromium --headless --no-sandbox --disable-gpu \
	    --no-first-run --user-data-dir="$T/chromium" "$@" \
	    2>>"$T/chromium.err"
}

# -------------------------------------------------------- a known state

is "$(code "$d_URL/buildid/$id_ok/debuginfo")" 200 "a fill"
is "$(code "$d_URL/buildid/$id_ok/debuginfo")" 200 "... then a hit"
is "$(code "$d_URL/buildid/$id_gone/debuginfo")" 404 "a missing id"
curl -s -o /dev/null --max-time 60 "$d_URL/buildid/$id_slow/debuginfo" &
wait_until 20 sh -c "curl -s '$d_URL/metrics' | grep -q '^dbgmirror_fill_waiters 1'" ||
    diag "the hanging fill never had its waiter"
is "$(code "$d_URL/buildid/$id_fail/debuginfo")" 502 \
    "an upstream error, which opens its breaker"
wait_until 20 sh -c "curl -s '$d_URL/metrics' | grep -q '^dbgmirror_missing_ids 1'" ||
    diag "the missing id was never recorded"

# ---------------------------------------------------------- the browser

browser --dump-dom "$d_URL/status" >"$T/dom.html"
ok $? "chromium loads /status and dumps its DOM"
dom=$(cat "$T/dom.html")
like "$dom" '<title>dbgmirror status</title>' "the page's title"
like "$dom" 'id="uptime">[0-9]+[smhd]' "the uptime"
like "$dom" 'id="requests-1m">4<' \
    "4 requests answered in the last minute (the waiting one is not yet)"
like "$dom" 'id="hits-1m">1<.*' "... 1 hit"
like "$dom" 'id="filled-1m">1<' "... 1 filled"
like "$dom" 'id="notfound-1m">1<' "... 1 not found"
like "$dom" 'id="errors-1m">1<' "... 1 error"
like "$dom" 'id="ratio-1m">25%<' "... a hit ratio of 25%"
like "$dom" 'id="requests-15m">4<' "the same over 15 minutes"
like "$dom" 'id="cache-cap">1\.0 GiB<' "the cache against its cap"
like "$dom" 'id="fills-count">1<.*id="fills-waiters">1<' \
    "one fill in flight, one waiting request"
like "$dom" "<tr class=\"fill\"><td><code>debuginfo $id_slow</code></td><td>-</td><td>waiting for a source</td>" \
    "... what it fetches and its state"
like "$dom" "upstream <code>http://127\\.0\\.0\\.1:$up_PORT</code></td><td class=\"bad breaker\">breaker open</td>" \
    "the upstream's breaker, open"
like "$dom" 'last error: <span class="bad">http</span> [0-9]+s ago' \
    "... its last error"
like "$dom" 'mean latency [0-9.]+ s over [0-9]+ answers' "... its latency"
like "$dom" 'id="source-repositories"><td>remote repositories</td><td class="none">none configured' \
    "remote repositories: none configured"
like "$dom" 'id="source-object-store"><td>object store</td><td class="none">none configured' \
    "... nor an object store"
is "$(printf '%s' "$dom" | grep -c 'not in this version')" 0 \
    "no source is said to be missing from this version"
like "$dom" 'id="config-file">none: embedded defaults' \
    "the configuration file (none: --no-config)"
like "$dom" "<code class=\"listen\">127\\.0\\.0\\.1:$d_PORT</code>" \
    "the address listened on, with the port port 0 got"
like "$dom" 'id="disk-free" class="(ok|bad)">[0-9.]+ [KMGTP]?i?B free of [0-9.]+ [KMGTP]?i?B \([0-9]+%\); min-free-disk keeps 5% free' \
    "the cache's disk against min-free-disk"
for c in requests hits latency; do
	like "$dom" "<svg class=\"chart\" id=\"chart-$c\" role=\"img\"" \
	    "an inline SVG chart: $c"
done
like "$dom" '<rect class="col " [^>]*><title>this minute: [0-9.]+ req/s</title>' \
    "... requests per second this minute, a bar with its value"
like "$dom" '<rect class="col hits" [^>]*><title>this minute: 25 %</title>' \
    "... the hit ratio this minute, 25%"
like "$dom" '<rect class="col lat" [^>]*><title>this minute: [0-9.]+ ms</title>' \
    "... the mean latency this minute"
like "$dom" 'The slowest answer of the hour took <span id="slowest">[0-9.]+</span> s' \
    "... and the slowest answer of the hour"
like "$dom" "<tr class=\"missing\"><td class=\"n\">1</td><td>2023-11-14 22:13:20Z</td><td>debuginfo</td><td><code>$id_gone</code>" \
    "the missing id, with its count, time and kind"
like "$dom" '<li>[0-9T:.-]+Z upstream http://[^ ]+: breaker open \(' \
    "the breaker's warning in the recent errors"

browser --screenshot="$T/status.png" --window-size=1200,1500 "$d_URL/status" \
    >/dev/null
ok $? "chromium takes a screenshot of /status"
is "$(head -c 4 "$T/status.png" 2>/dev/null | tail -c 3)" PNG "... a PNG file"
size=$(stat -c %s "$T/status.png" 2>/dev/null || echo 0)
lt 20000 "$size"
ok $? "... of a page with something on it ($size bytes)"

# ------------------------------------------------------- without browser

page=$(curl -s "$d_URL/status")
is "$(printf '%s' "$page" | sed 's|<link rel="icon" href="data:,">||' |
    grep -Ec '<(script|link|img|iframe)|src=|href=|url\(')" 0 \
    "the page loads nothing from elsewhere (its icon is empty, inline)"
is "$(metric 'dbgmirror_requests_total{endpoint="other",result="bad"}' "$d_URL")" 0 \
    "the browser asked for nothing else (no /favicon.ico)"
like "$(curl -s -H 'Accept: text/html,application/xhtml+xml' "$d_URL/")" \
    '^<!DOCTYPE html>' "/ for a browser: the status page"
like "$(curl -s "$d_URL/")" '^dbgmirror [^ ]+: a debuginfod-compatible server' \
    "/ for other clients: the banner"
like "$(curl -s -D - -o /dev/null "$d_URL/status" | tr -d '\r')" \
    'Content-Type: text/html; charset=utf-8' "served as HTML"

stop_daemon d

# ------------------------------------- a repository and a store, configured

# A repository on the fake upstream, which answers 404 for its files: the
# refresh fails.  A store on a port nothing listens on.
: >"$T/keyring.gpg"
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s \
    DBGMIRROR_TEST_CLOCK=$T/clock start_daemon rs --scan-dir none \
    --repo "deb $up_URL/debian stable main signed-by=$T/keyring.gpg" \
    --store "s3 http://127.0.0.1:1 the-bucket" --repo-refresh 1h
wait_until 30 grep -q 'refresh failed' "$rs_LOG" ||
    diag "the repository's refresh never failed"
browser --dump-dom "$rs_URL/status" >"$T/rs.html"
ok $? "chromium loads the page of a daemon with a repository and a store"
dom=$(cat "$T/rs.html")
like "$dom" "<tr class=\"repo\" id=\"repo-0\"><td>repository <code>http://127\\.0\\.0\\.1:$up_PORT/debian stable</code></td><td class=\"bad state\">refresh failed</td>" \
    "the repository, its URL and suite, and its refresh failed"
like "$dom" 'last refresh ended [0-9]+s ago: <span class="bad why">[^<]*404' \
    "... when, and why"
like "$dom" 'next refresh in (59m|1h)' "... and when the next one is due"
like "$dom" 'id="source-object-store"><td>object store <code>http://127\.0\.0\.1:1/the-bucket/</code></td><td class="(ok|bad|warn) breaker">breaker (closed|open|probing)</td>' \
    "the object store, its endpoint and bucket, its breaker"
like "$dom" 'uploads: <span id="store-waiting">0</span> waiting, <span id="store-running">0</span> running' \
    "... its upload queue"
is "$(printf '%s' "$dom" | grep -Ec 'not in this version|none configured</td><td></td></tr>.*(repositor|object store)')" 0 \
    "nothing said missing or unconfigured of what is configured"
is "$(printf '%s' "$dom" | grep -c 'AWS\|the-secret\|>s<')" 0 \
    "no secret on the page"
stop_daemon rs

start_daemon shut --scan-dir none --metrics-access none
is "$(code "$shut_URL/status")" 403 "metrics-access none: /status is 403"
like "$(curl -s -H 'Accept: text/html' "$shut_URL/")" '^dbgmirror ' \
    "... and / the banner, even for a browser"

done_testing
