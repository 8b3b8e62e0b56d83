#!/bin/bash
# tests/soak/soak.sh: the real daemon under SOAK_SECONDS (1800) of mixed
# traffic; "make soak" runs it.  Never part of make check.
#
# One dbgmirrord with a small cache cap (SOAK_CACHE_SIZE, 8M) serves, all on
# 127.0.0.1:
#   local    ids in a scanned directory (files added and rescanned, SIGUSR1);
#   package  members of a .deb in a scanned package directory;
#   steady   ids of fakeupstream "steady", which never fails;
#   flap     ids of elfutils debuginfod "flap", stopped and restarted;
#   bad      ids that fakeupstream "bad" truncates, resets, answers with
#            HTML, a 500 or another id's file; "bad" is restarted too;
#   miss     random ids nobody has;
#   herd     a cold steady id asked by SOAK_HERD (30) clients at once.
# Beside them: Range requests, slow readers (curl --limit-rate), clients that
# vanish mid-body, mid-head or before sending anything, purges of single ids
# and of every miss through the CLI, and evictions (the cap is far below
# what the traffic asks for).  Every loop is bounded by the deadline.
#
# Every request's status is classified for its kind (expected_for below);
# flap and miss answers other than 200/404 are expected only while an
# upstream is down or recovering (a window that ends WINDOW_SLACK seconds
# after it is back).  Bodies are compared with the file served.  RSS
# (anonymous memory, RssAnon) and open descriptors are sampled every
# SOAK_SAMPLE seconds; "flat" means, on the samples of the first and last
# quarters of the run:
#   RssAnon: last-quarter max <= first-quarter max * 1.10 + 8 MiB
#   fds:     last-quarter median <= first-quarter median + 8, and
#            last-quarter max <= first-quarter max + SOAK_HERD
# (a herd opens SOAK_HERD connections at once, whenever a sample falls).
# At the end the daemon must stop cleanly on SIGTERM, and every cached blob
# must be an ELF file whose build-id note (readelf -n) names one of the ids
# served and whose bytes equal that id's file.
#
# Output: progress on stderr, the Markdown summary on stdout (also in
# $SOAK_REPORT when set).  Exit status 0 when everything held, 1 if not.
# KEEP=1 keeps the working directory (logs, samples, per-request records).

set -u
. "$top_srcdir/tests/integration/lib.sh"

SOAK_SECONDS=${SOAK_SECONDS:-1800}
SOAK_SAMPLE=${SOAK_SAMPLE:-5}
SOAK_HERD=${SOAK_HERD:-30}
SOAK_CACHE_SIZE=${SOAK_CACHE_SIZE:-8M}
NEG_TTL=10
ERR_TTL=3
BACKOFF=2
FLAP_EVERY=120 # s between restarts of debuginfod
FLAP_DOWN=15   # s it stays down
BAD_EVERY=90   # s between restarts of the bad fakeupstream
BAD_DOWN=8
# After an outage of D s the breaker's probe (backoff doubling from
# BACKOFF) comes at most about D s after the upstream is back, and a 404
# remembered meanwhile lasts NEG_TTL more.
WINDOW_SLACK=$((2 * FLAP_DOWN + NEG_TTL + 15))

say() { echo "soak: $*" >&2; }
now() { echo "$EPOCHREALTIME"; }

START=$(date +%s)
DEADLINE=$((START + SOAK_SECONDS))
running() { [ "$(date +%s)" -lt "$DEADLINE" ]; }

R=$T/records # one file per worker: "time kind id status verdict note"
mkdir -p "$R"
client_env

# ---------------------------------------------------------------- fixtures
# mkbin gives unstripped programs: debuginfo and executable at once.
declare -A FILE # id -> file
newid() { printf '%08x%08x%08x%08x%08x' $((RANDOM * 32768 + RANDOM)) \
    $((RANDOM * 32768 + RANDOM)) $((RANDOM * 32768 + RANDOM)) \
    $((RANDOM * 32768 + RANDOM)) $((RANDOM * 32768 + RANDOM)); }
make_ids() { # N PAD... : N ids cycling through the paddings; ids on stdout
	local n=$1 i id
	shift
	local -a pads=("$@")
	for ((i = 0; i < n; i++)); do
		id=$(newid)
		mkbin "$id" "${pads[i % ${#pads[@]}]}" >/dev/null
		echo "$id"
	done
}
say "building fixtures"
mapfile -t LOCAL < <(make_ids 10 0 20000)
mapfile -t LOCAL_NEW < <(make_ids 40 0) # added one by one by rescans
mapfile -t PKG < <(make_ids 8 0 50000)
mapfile -t STEADY < <(make_ids 40 20000 200000 1000000)
mapfile -t HERD < <(make_ids 100 20000 200000)
mapfile -t FLAP < <(make_ids 20 0 100000)
mapfile -t BAD < <(make_ids 10 0)
for id in "${LOCAL[@]}" "${LOCAL_NEW[@]}" "${PKG[@]}" "${STEADY[@]}" \
    "${HERD[@]}" "${FLAP[@]}" "${BAD[@]}"; do
	FILE[$id]=$T/bins/$id
done

mkdir -p "$T/local" "$T/flapdir" "$T/pkgs" "$T/deb/DEBIAN"
for id in "${LOCAL[@]}"; do cp "${FILE[$id]}" "$T/local/$id"; done
for id in "${FLAP[@]}"; do cp "${FILE[$id]}" "$T/flapdir/$id"; done
for id in "${PKG[@]}"; do
	d=$T/deb/usr/lib/debug/.build-id/${id:0:2}
	mkdir -p "$d"
	cp "${FILE[$id]}" "$d/${id:2}.debug"
done
printf 'Package: soak-dbgsym\nVersion: 1.0\nArchitecture: amd64\nMaintainer: soak <soak@localhost>\nDescription: soak members\n' \
    >"$T/deb/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$T/deb" "$T/pkgs/soak-dbgsym_1.0_amd64.deb" \
    >/dev/null || bail "dpkg-deb failed"

# The bad upstream: one misbehaviour per id.
bad_rules=()
bad_modes=(truncate reset html status:500 wrongid)
for i in "${!BAD[@]}"; do
	id=${BAD[i]}
	case ${bad_modes[i % 5]} in
	wrongid) bad_rules+=("$id=ok:${FILE[${STEADY[0]}]}") ;;
	html | status:*) bad_rules+=("$id=${bad_modes[i % 5]}") ;;
	*) bad_rules+=("$id=${bad_modes[i % 5]}:${FILE[$id]}") ;;
	esac
done
steady_rules=()
for id in "${STEADY[@]}" "${HERD[@]}"; do
	steady_rules+=("$id=ok:${FILE[$id]}")
done

# ---------------------------------------------------------------- servers
say "starting the upstreams and the daemon"
start_fake steady "${steady_rules[@]}"
start_fake bad "${bad_rules[@]}"
BAD_PORT=$bad_PORT
start_debuginfod flap -F "$T/flapdir"
FLAP_PORT=$flap_PORT
flap_ready() { [ "$(code "$flap_URL/buildid/${FLAP[0]}/debuginfo")" = 200 ]; }
wait_until 120 flap_ready || bail "debuginfod did not index its files"

start_daemon d --scan-dir "$T/local" --scan-packages "$T/pkgs" \
    --rescan-interval 0 --cache-size "$SOAK_CACHE_SIZE" \
    --negative-ttl "$NEG_TTL" --error-ttl "$ERR_TTL" \
    --breaker-backoff "$BACKOFF" --upstream-stall-timeout 5 \
    --upstream "$steady_URL" --upstream "$flap_URL" --upstream "$bad_URL"
DPID=$d_PID
URL=$d_URL
CLI=("$DBGMIRROR" --no-config --cache-dir "$T/d-cache")

# ---------------------------------------------------------------- checks
# record FILE KIND ID STATUS VERDICT [NOTE]
# An empty field is written as "-", so that the columns never shift.
record() {
	printf '%s %s %s %s %s %s\n' "$(now)" "${2:--}" "${3:--}" "${4:--}" \
	    "${5:--}" "${6:--}" >>"$1"
}

# fetch OUT URL [CURL ARGS]: the status in $ST: 000 when no answer came,
# with "cut" after it when the answer's body broke off (the daemon cuts a
# connection whose fill failed after the head was sent).
fetch() {
	local out=$1 url=$2 rc
	shift 2
	ST=$(curl -s -o "$out" -w '%{http_code}' --max-time 60 "$@" "$url")
	rc=$?
	[ -n "$ST" ] || ST=000
	[ "$rc" -eq 0 ] || [ "$ST" = 000 ] || ST=${ST}cut
}

# expected_for KIND STATUS: ok (right answer), maybe (an error that only an
# upstream being down explains), expected, or BAD.
expected_for() {
	case $1:$2 in
	local:200 | package:200 | steady:200 | herd:200 | flap:200) echo ok ;;
	miss:404) echo ok ;;
	flap:404 | flap:502 | flap:503 | flap:504 | flap:200cut) echo maybe ;;
	miss:502 | miss:503 | miss:504) echo maybe ;;
	# A bad id is never served whole: a 502 from its upstream, a 404 when
	# that upstream's breaker is open or it is down and the rest say 404,
	# or a 200 cut off where the upstream broke off.  (A complete 200 is
	# judged by its bytes: a resumed transfer may have completed it.)
	bad:502 | bad:404 | bad:200cut) echo expected ;;
	bad:200) echo ok ;;
	*) echo BAD ;;
	esac
}

# get_whole REC KIND ID: GET the debuginfo of ID; status and bytes checked.
get_whole() {
	local rec=$1 kind=$2 id=$3 out=$T/body.$BASHPID v
	fetch "$out" "$URL/buildid/$id/debuginfo"
	v=$(expected_for "$kind" "$ST")
	if [ "$ST" = 200 ] && ! cmp -s "$out" "${FILE[$id]}"; then
		v=BAD
		record "$rec" "$kind" "$id" "$ST" "$v" wrong-bytes
	else
		record "$rec" "$kind" "$id" "$ST" "$v"
	fi
	rm -f "$out"
}

# gone PID: PID has exited (a zombie that its parent, another worker, has
# not reaped counts as gone).
gone() {
	[ ! -e "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

pick() { # ARRAY-NAME: a random element
	local -n a=$1
	echo "${a[RANDOM % ${#a[@]}]}"
}

# ---------------------------------------------------------------- workers
HERD_DONE=$T/herd.done # herd ids already used: part of the steady pool
: >"$HERD_DONE"
LOCAL_ADDED=$T/local.added
: >"$LOCAL_ADDED"
WINDOWS=$T/windows # "down START" / "up END" of an upstream
: >"$WINDOWS"

w_hits() {
	local rec=$R/hits.$1 r id kind
	while running; do
		r=$((RANDOM % 10))
		if [ "$r" -lt 2 ]; then
			kind=local id=$(pick LOCAL)
		elif [ "$r" -lt 3 ]; then
			kind=package id=$(pick PKG)
		elif [ "$r" -lt 7 ]; then
			kind=steady id=$(pick STEADY)
		elif [ "$r" -lt 8 ] && [ -s "$HERD_DONE" ]; then
			kind=steady id=$(shuf -n 1 "$HERD_DONE")
		else
			kind=flap id=$(pick FLAP)
		fi
		# No id (shuf gave none, once, at load 20): nothing to ask, and
		# nothing to judge an answer against.
		[ -n "$id" ] || continue
		get_whole "$rec" "$kind" "$id"
	done
}

w_miss() {
	local rec=$R/miss
	while running; do
		get_whole "$rec" miss "$(newid)"
		sleep 0.2
	done
}

w_bad() {
	local rec=$R/bad
	while running; do
		get_whole "$rec" bad "$(pick BAD)"
		sleep 1
	done
}

# Range requests on every kind that is served; 206 must be the slice, 200
# (a Range not honoured) the whole file.
w_range() {
	local rec=$R/range out=$T/range.body id kind size a b v r
	while running; do
		r=$((RANDOM % 3))
		case $r in
		0) kind=local id=$(pick LOCAL) ;;
		1) kind=steady id=$(pick STEADY) ;;
		2) kind=flap id=$(pick FLAP) ;;
		esac
		size=$(stat -c %s "${FILE[$id]}")
		a=$(((RANDOM * 32768 + RANDOM) % size))
		b=$((a + RANDOM % 5000))
		fetch "$out" "$URL/buildid/$id/debuginfo" -H "Range: bytes=$a-$b"
		[ "$b" -lt "$size" ] || b=$((size - 1))
		case $ST in
		206)
			if tail -c +$((a + 1)) "${FILE[$id]}" | head -c $((b - a + 1)) |
			    cmp -s - "$out"; then
				v=ok
			else
				v=BAD
			fi
			;;
		200) cmp -s "$out" "${FILE[$id]}" && v=ok || v=BAD ;;
		*) v=$(expected_for "$kind" "$ST") ;;
		esac
		record "$rec" "range-$kind" "$id" "$ST" "$v" "$a-$b"
		sleep 0.1
	done
}

# Slow readers of the largest steady files, and clients that vanish: in the
# middle of a body, in the middle of a request head, or before a word.
w_slow() {
	local rec=$R/slow out=$T/slow.body id r
	while running; do
		id=${STEADY[2 + 3 * (RANDOM % 13)]} # padding 1000000
		r=$((RANDOM % 4))
		case $r in
		0)
			fetch "$out" "$URL/buildid/$id/debuginfo" --limit-rate 300k
			if [ "$ST" = 200 ] && ! cmp -s "$out" "${FILE[$id]}"; then
				record "$rec" slow "$id" "$ST" BAD wrong-bytes
			else
				record "$rec" slow "$id" "$ST" "$(expected_for steady "$ST")"
			fi
			;;
		1)
			# Reads a little, then goes away mid-body.
			curl -s --max-time 10 "$URL/buildid/$id/debuginfo" |
			    head -c 1000 >/dev/null
			record "$rec" vanish-body "$id" - expected
			;;
		2)
			{
				exec 3<>"/dev/tcp/127.0.0.1/$d_PORT" &&
				    printf 'GET /buildid/%s/debuginfo HTTP/1.1\r\nHost: x\r\n' "$id" >&3
				sleep 0.5
				exec 3>&-
			} 2>/dev/null
			record "$rec" vanish-head "$id" - expected
			;;
		3)
			{
				exec 3<>"/dev/tcp/127.0.0.1/$d_PORT"
				sleep 1
				exec 3>&-
			} 2>/dev/null
			record "$rec" vanish-idle - - expected
			;;
		esac
		sleep 0.5
	done
}

# A herd: SOAK_HERD clients at once for a cold steady id; each must get the
# file, and the steady upstream must have been asked once.  One curl makes
# all the requests at once: as many curl processes, forked on a loaded
# machine, can start seconds apart, after the fill is over and its file
# evicted from the small cache, and then rightly cost another request.
w_herd() {
	local rec=$R/herd id i n=0 asked code out v
	local -a args
	while running && [ "$n" -lt "${#HERD[@]}" ]; do
		id=${HERD[n]}
		n=$((n + 1))
		args=()
		for ((i = 0; i < SOAK_HERD; i++)); do
			args+=(-o "$T/herd.$i" "$URL/buildid/$id/debuginfo")
		done
		rm -f "$T"/herd.*
		curl -s -Z --parallel-immediate --parallel-max "$SOAK_HERD" \
		    --max-time 60 -w '%{http_code} %{filename_effective}\n' \
		    "${args[@]}" >"$T/herd.codes" 2>/dev/null
		while read -r code out; do
			v=$(expected_for herd "$code")
			if [ "$code" = 200 ] && ! cmp -s "$out" "${FILE[$id]}"; then
				record "$rec" herd "$id" "$code" BAD wrong-bytes
			else
				record "$rec" herd "$id" "$code" "$v"
			fi
		done <"$T/herd.codes"
		for ((i = $(wc -l <"$T/herd.codes"); i < SOAK_HERD; i++)); do
			record "$rec" herd "$id" 000 BAD no-answer
		done
		asked=$(grep -c "/buildid/$id/" "$steady_LOG")
		if [ "$asked" -eq 1 ]; then
			record "$rec" herd-upstream "$id" 1 ok
		else
			record "$rec" herd-upstream "$id" "$asked" BAD upstream-asked-$asked
		fi
		echo "$id" >>"$HERD_DONE"
		sleep 10
	done
}

# The upstreams that flap: restart_NAME starts NAME again on its port and
# sets NAME_PID; NAME_ready says when it serves again.
restart_flap() {
	env -u DEBUGINFOD_URLS HOME="$T" debuginfod -p "$FLAP_PORT" \
	    -d "$T/flap-db.sqlite" -v -F "$T/flapdir" >>"$T/flap.log" 2>&1 &
	flap_PID=$!
	echo "$flap_PID" >"$T/flap.pid"
}
restart_bad() {
	"$top_builddir/tests/fakeupstream" --port "$BAD_PORT" \
	    --log "$T/bad.requests" "${bad_rules[@]}" >/dev/null 2>>"$T/bad.err" &
	bad_PID=$!
	echo "$bad_PID" >"$T/bad.pid"
}
bad_ready() { listening "$BAD_PORT"; }

# flapper NAME EVERY DOWN BOUND: every EVERY s, NAME goes away for DOWN s
# and is started again; "down NAME T" and "up NAME T" (once it serves
# again, within BOUND s) go to $WINDOWS.  debuginfod rescans at start.
flapper() {
	local name=$1 every=$2 down=$3 bound=$4 t pidvar=${1}_PID
	while running; do
		t=$((SECONDS + every))
		while running && [ "$SECONDS" -lt "$t" ]; do sleep 1; done
		running || break
		echo "down $name $(now)" >>"$WINDOWS"
		kill -TERM "${!pidvar}"
		wait_until 20 gone "${!pidvar}" || kill -KILL "${!pidvar}"
		sleep "$down"
		"restart_$name"
		if ! wait_until "$bound" "${name}_ready"; then
			say "$name did not come back"
			echo "failed $name $(now)" >>"$WINDOWS"
			return
		fi
		echo "up $name $(now)" >>"$WINDOWS"
	done
}
w_flap() { flapper flap "$FLAP_EVERY" "$FLAP_DOWN" 120; }
w_badflap() { flapper bad "$BAD_EVERY" "$BAD_DOWN" 20; }

# Every 30 s a new file in the scanned directory, SIGUSR1, and once the
# scan is done the file must be served.
w_rescan() {
	local rec=$R/rescan n=0 id scans
	while running && [ "$n" -lt "${#LOCAL_NEW[@]}" ]; do
		sleep 30
		running || break
		id=${LOCAL_NEW[n]}
		n=$((n + 1))
		cp "${FILE[$id]}" "$T/local/$id"
		scans=$(grep -c 'scan finished' "$d_LOG")
		kill -USR1 "$DPID"
		if wait_until 60 scans_done "$d_LOG" $((scans + 1)); then
			record "$rec" rescan - done ok
			get_whole "$rec" local "$id"
			echo "$id" >>"$LOCAL_ADDED"
		else
			record "$rec" rescan - timeout BAD scan-did-not-finish
		fi
	done
}

# Purges through the CLI, beside the running daemon: one steady id every
# 20 s (its next request refetches it), every miss every 200 s.
w_purge() {
	local rec=$R/purge i=0 id rc
	while running; do
		sleep 20
		running || break
		i=$((i + 1))
		if [ $((i % 10)) -eq 0 ]; then
			"${CLI[@]}" purge --negative >>"$T/purge.out" 2>&1
			rc=$?
			record "$rec" purge-negative - "rc$rc" "$([ "$rc" -eq 0 ] && echo ok || echo BAD)"
		fi
		id=$(pick STEADY)
		"${CLI[@]}" purge "$id" >>"$T/purge.out" 2>&1
		rc=$?
		record "$rec" purge "$id" "rc$rc" "$([ "$rc" -eq 0 ] && echo ok || echo BAD)"
		get_whole "$rec" steady "$id"
	done
}

# RSS and descriptors of the daemon.
w_sample() {
	local f=$T/samples anon rss fds
	: >"$f"
	while running; do
		anon=$(awk '/^RssAnon:/ { print $2 }' "/proc/$DPID/status" 2>/dev/null)
		rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status" 2>/dev/null)
		fds=$(ls "/proc/$DPID/fd" 2>/dev/null | wc -l)
		[ -n "$anon" ] && echo "$(date +%s) $anon $rss $fds" >>"$f"
		sleep "$SOAK_SAMPLE"
	done
}

say "traffic for $SOAK_SECONDS s"
WORKERS=""
for w in "w_hits 1" "w_hits 2" "w_hits 3" w_miss w_bad w_range w_slow w_herd \
    w_flap w_badflap w_rescan w_purge w_sample; do
	$w &
	WORKERS="$WORKERS $!"
done
while running; do
	sleep 10
	kill -0 "$DPID" 2>/dev/null || { say "the daemon died"; break; }
	say "$(( $(date +%s) - START )) s, $(cat "$R"/* 2>/dev/null | wc -l) requests"
done
for pid in $WORKERS; do
	wait "$pid"
done
# The restarted servers are the workers' children; lib.sh stops those it
# started, these are stopped here.
for f in "$T/flap.pid" "$T/bad.pid"; do
	[ -f "$f" ] && DAEMON_PIDS="$DAEMON_PIDS $(cat "$f")"
done

# ---------------------------------------------------------------- verdicts
FAILED=0
fail() {
	FAILED=1
	NOTES+=("FAIL: $*")
}
NOTES=()

alive=yes
kill -0 "$DPID" 2>/dev/null || { alive=no; fail "the daemon died"; }
metrics=$(curl -s --max-time 10 "$URL/metrics")
evictions=$(printf '%s\n' "$metrics" | awk '$1 == "dbgmirror_cache_evictions_total" { print $2 }')
[ "${evictions:-0}" != 0 ] || fail "no eviction happened: the cache cap was never reached"

# Per-request records, with the "maybe" answers judged against the windows
# during which an upstream was down or recovering.
cat "$R"/* >"$T/all.records"
awk -v slack="$WINDOW_SLACK" -v windows="$WINDOWS" '
FILENAME == windows {
	# "down NAME T" opens a window of NAME, "up NAME T" closes it; the
	# two upstreams outages may overlap.  "failed" never closes.
	if ($1 == "down" || $1 == "failed") { n++; lo[n] = $3 - 2; hi[n] = 1e18; open[$2] = n }
	else if ($1 == "up" && $2 in open) { hi[open[$2]] = $3 + slack; delete open[$2] }
	next
}
{
	v = $5
	if (v == "maybe") {
		v = "BAD"
		for (i = 1; i <= n; i++)
			if ($1 >= lo[i] && $1 <= hi[i]) { v = "expected"; break }
	}
	key = $2 " " $4
	count[key]++
	verdict[key] = (verdict[key] == "" || verdict[key] == v) ? v : verdict[key] "+" v
	if (v == "BAD") { bad[key]++; if (shown++ < 20) print "BAD " $0 > "/dev/stderr" }
}
END {
	for (k in count) printf "%s %d %s %d\n", k, count[k], verdict[k], bad[k] + 0
}' "$WINDOWS" "$T/all.records" 2>"$T/bad.lines" | sort >"$T/classes"
nbad=$(awk '{ s += $5 } END { print s + 0 }' "$T/classes")
ntotal=$(wc -l <"$T/all.records")
[ "$nbad" -eq 0 ] || fail "$nbad unexpected answers (first ones below)"
grep -q '^failed' "$WINDOWS" && fail "an upstream did not come back after a restart"

# Flatness of RSS and descriptors.
flat=$(awk -v herd="$SOAK_HERD" '
{ t[NR] = $1; anon[NR] = $2; rss[NR] = $3; fd[NR] = $4 }
function med(a, lo, hi,    i, j, n, v, x) {
	n = 0
	for (i = lo; i <= hi; i++) v[++n] = a[i]
	for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
	return v[int((n + 1) / 2)]
}
function mx(a, lo, hi,    i, m) { m = a[lo]; for (i = lo; i <= hi; i++) if (a[i] > m) m = a[i]; return m }
function mn(a, lo, hi,    i, m) { m = a[lo]; for (i = lo; i <= hi; i++) if (a[i] < m) m = a[i]; return m }
END {
	if (NR < 8) { print "few"; exit }
	q = int(NR / 4); f1 = 1; f2 = q; l1 = NR - q + 1; l2 = NR
	a1 = mx(anon, f1, f2); a4 = mx(anon, l1, l2)
	d1m = med(fd, f1, f2); d4m = med(fd, l1, l2); d1 = mx(fd, f1, f2); d4 = mx(fd, l1, l2)
	okr = a4 <= a1 * 1.10 + 8192
	okd = d4m <= d1m + 8 && d4 <= d1 + herd
	printf "%d %d %d %d %d %d %d %d %d %d %d %d %d\n", NR, mn(anon, 1, NR), a1, a4, \
	    mx(rss, f1, f2), mx(rss, l1, l2), d1m, d4m, d1, d4, okr, okd, mx(anon, 1, NR)
}' "$T/samples")
read -r nsamples anon_min anon_q1 anon_q4 rss_q1 rss_q4 fd_med1 fd_med4 fd_q1 fd_q4 ok_rss ok_fd anon_max <<<"$flat"
if [ "$nsamples" = few ]; then
	fail "fewer than 8 samples of RSS and descriptors"
else
	[ "$ok_rss" = 1 ] || fail "RssAnon grew: first-quarter max ${anon_q1} KiB, last-quarter max ${anon_q4} KiB"
	[ "$ok_fd" = 1 ] || fail "descriptors grew: median $fd_med1 -> $fd_med4, max $fd_q1 -> $fd_q4"
fi

# A clean stop, then every blob checked.
stop_daemon d
[ "$STOP_RC" -eq 0 ] || fail "dbgmirrord exited $STOP_RC on SIGTERM"
nblobs=0 badblobs=0
declare -A KNOWN
for id in "${!FILE[@]}"; do KNOWN[$id]=1; done
while IFS= read -r -d '' b; do
	nblobs=$((nblobs + 1))
	id=$(readelf -n "$b" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' | head -n 1)
	if [ -z "$id" ] || [ -z "${KNOWN[$id]:-}" ] || ! cmp -s "$b" "${FILE[$id]}"; then
		badblobs=$((badblobs + 1))
		NOTES+=("blob $b: build-id '${id:-none}' unknown or bytes differ")
	fi
done < <(find "$T/d-cache/blobs" -type f -print0 2>/dev/null)
[ "$badblobs" -eq 0 ] || fail "$badblobs of $nblobs cached blobs failed verification"
sanitized=$(grep -Ec 'Sanitizer|runtime error:' "$d_LOG")
[ "$sanitized" -eq 0 ] || fail "sanitizer reports in the daemon log"

# ---------------------------------------------------------------- report
# The daemon's messages other than access lines, ids and ports blanked.
grep -v '" [0-9][0-9][0-9] [0-9]' "$d_LOG" | sed -n 's/^[^]]*\]: //p' |
    sed -E "s|$T|\$T|g; s/[0-9a-f]{40}/ID/g; s/127\.0\.0\.1:[0-9]+/LOOPBACK:PORT/g;
	s/\b[0-9]+(\.[0-9]+)*/N/g" | sort | uniq -c | sort -rn >"$T/messages"
ndown=$(grep -c '^down' "$WINDOWS")
report() {
	echo "# Soak: $SOAK_SECONDS s of mixed traffic"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) cores, $(uname -r); dbgmirrord" \
	    "\`--threads 2 --workers 2 --cache-size $SOAK_CACHE_SIZE\`," \
	    "negative-ttl $NEG_TTL s, error-ttl $ERR_TTL s, breaker-backoff $BACKOFF s;" \
	    "upstreams: fakeupstream (steady), elfutils debuginfod (stopped" \
	    "for ${FLAP_DOWN} s every ${FLAP_EVERY} s), fakeupstream (bad ids," \
	    "restarted every ${BAD_EVERY} s); $ndown upstream outages in all."
	echo
	echo "Result: **$([ "$FAILED" -eq 0 ] && echo PASS || echo FAIL)**"
	echo
	echo "| traffic | status | answers | judged | unexpected |"
	echo "|---|---|---|---|---|"
	awk '{ printf "| %s | %s | %d | %s | %d |\n", $1, $2, $3, $4, $5 }' "$T/classes"
	echo
	echo "| check | value | criterion | |"
	echo "|---|---|---|---|"
	echo "| answers in all | $ntotal | | |"
	echo "| unexpected answers | $nbad | 0 | $([ "$nbad" -eq 0 ] && echo met || echo NOT met) |"
	echo "| RssAnon, KiB: first-quarter max → last-quarter max (min, max of run) | $anon_q1 → $anon_q4 ($anon_min, $anon_max) | last ≤ first × 1.10 + 8192 | $([ "$ok_rss" = 1 ] && echo met || echo NOT met) |"
	echo "| VmRSS (with LMDB's mapped pages), KiB | $rss_q1 → $rss_q4 | (shown only) | |"
	echo "| open descriptors: median; max | $fd_med1 → $fd_med4; $fd_q1 → $fd_q4 | median +8, max +$SOAK_HERD | $([ "$ok_fd" = 1 ] && echo met || echo NOT met) |"
	echo "| samples (every $SOAK_SAMPLE s) | $nsamples | ≥ 8 | |"
	echo "| evictions | ${evictions:-none} | > 0 | $([ "${evictions:-0}" != 0 ] && echo met || echo NOT met) |"
	echo "| cached blobs verified (build-id note, bytes) | $((nblobs - badblobs)) of $nblobs | all | $([ "$badblobs" -eq 0 ] && echo met || echo NOT met) |"
	echo "| exit on SIGTERM | $STOP_RC | 0 | $([ "$STOP_RC" -eq 0 ] && echo met || echo NOT met) |"
	echo
	echo "The daemon's log, access lines aside (ids, ports and numbers blanked):"
	echo
	echo "| count | message |"
	echo "|---|---|"
	head -n 30 "$T/messages" | sed 's/|/\\|/g' |
	    awk '{ n = $1; sub(/^ *[0-9]+ /, ""); printf "| %d | %s |\n", n, $0 }'
	echo
	for n in "${NOTES[@]}"; do echo "- $n"; done
	if [ -s "$T/bad.lines" ]; then
		echo
		echo "First unexpected answers (time kind id status verdict note):"
		echo
		sed 's/^/    /' "$T/bad.lines"
	fi
}
report | tee ${SOAK_REPORT:+"$SOAK_REPORT"}
exit "$FAILED"
