# tests/integration/lib.sh: shared helpers for the integration tests.
#
# Source it from a bash test script.  It gives TAP output (ok, is, like,
# done_testing), a private temporary directory removed at exit, the fixture
# build, and daemons started on free loopback ports and always stopped.
# Every wait is bounded; nothing here talks to anything but 127.0.0.1.

set -u

: "${top_builddir:=$(pwd)}"
: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
DBGMIRRORD=$top_builddir/dbgmirrord
DBGMIRROR=$top_builddir/dbgmirror
MKELF=$top_builddir/tests/mkelf
# The suite runs as root on CI machines, where dbgmirrord refuses to run
# without a user to become (daemon/main.c); privs.sh tests that refusal.
export DBGMIRROR_TEST_ALLOW_ROOT=1

T=$(mktemp -d "${TMPDIR:-/tmp}/dbgmirror-test.XXXXXX")
TAP_N=0
TAP_FAILED=0
DAEMON_PIDS=""

cleanup() {
	local pid i alive
	# TERM first, so that servers with workers (nginx) take them along.
	for pid in $DAEMON_PIDS; do
		kill -TERM "$pid" 2>/dev/null
	done
	for i in $(seq 1 50); do
		alive=0
		for pid in $DAEMON_PIDS; do
			kill -0 "$pid" 2>/dev/null && { alive=1; break; }
		done
		[ "$alive" -eq 1 ] || break
		sleep 0.1
	done
	for pid in $DAEMON_PIDS; do
		kill -KILL "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	# KEEP=1 keeps the test directory, its logs included, for debugging.
	if [ -n "${KEEP:-}" ]; then
		echo "# kept $T" >&2
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT

# ok STATUS DESCRIPTION: STATUS is a command's exit status (0 = pass).
# Returns 1 on a failure, so that "ok ... || diag ..." can explain it.
ok() {
	TAP_N=$((TAP_N + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $TAP_N - $2"
	else
		TAP_FAILED=$((TAP_FAILED + 1))
		echo "not ok $TAP_N - $2"
		return 1
	fi
}

# is GOT EXPECTED DESCRIPTION
is() {
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		echo "#   got:      '$1'"
		echo "#   expected: '$2'"
		return 1
	fi
}

# like GOT REGEX DESCRIPTION (extended regular expression)
like() {
	if printf '%s' "$1" | grep -Eq -- "$2"; then
		ok 0 "$3"
	else
		ok 1 "$3"
		echo "#   got:      '$(printf '%s' "$1" | head -c 300)'"
		echo "#   expected to match: '$2'"
		return 1
	fi
}

# skip REASON: one skipped check (TAP "# SKIP"), for what this machine lacks.
skip() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N # SKIP $1"
}

diag() {
	echo "# $*"
}

# as_nobody_or_skip [TOOL]: end the script with one skipped check unless it
# runs as root (to start daemons as nobody), TOOL (if named) is installed,
# and nobody can reach $T (which it opens to others).
as_nobody_or_skip() {
	local why=
	if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
		why="needs root and the user nobody"
	elif [ -n "${1:-}" ] && ! command -v "$1" >/dev/null; then
		why="needs $1"
	else
		chmod 755 "$T"
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
		    test -x "$T" ||
		    why="nobody cannot reach $T (TMPDIR must be open to others)"
	fi
	[ -z "$why" ] && return 0
	skip "$why"
	done_testing
}

# The plan; failures are already "not ok" lines, so the exit status stays 0
# and the harness counts each failure once.
done_testing() {
	sanitizer_clean
	echo "1..$TAP_N"
	# How long the script ran, for ordering the suite (longest first).
	diag "took ${SECONDS}s"
	[ "$TAP_FAILED" -eq 0 ] || diag "$TAP_FAILED of $TAP_N failed"
	exit 0
}

# sanitizer_clean: one check that no program whose log is in $T (every
# daemon's) reported a sanitizer error: a ThreadSanitizer race (the
# --enable-tsan build) or an ASan/UBSan error; the first report is shown.
sanitizer_clean() {
	local re='WARNING: ThreadSanitizer|ERROR: (Address|Leak|Thread)Sanitizer|runtime error:'
	local f found=
	for f in "$T"/*.log; do
		[ -f "$f" ] && grep -Eq "$re" "$f" && found="$found $f"
	done
	ok "$([ -z "$found" ]; echo $?)" "no sanitizer report in the daemons' logs" && return
	for f in $found; do
		diag "$f:"
		sed -En "/$re/,/^SUMMARY/p" "$f" | head -n 60 | sed 's/^/#   /'
	done
}

# bail REASON: stop the script; the harness counts it as an error.
bail() {
	echo "Bail out! $*"
	exit 99
}

# wait_until SECONDS COMMAND...: poll COMMAND every 50 ms until it
# succeeds; fails after SECONDS.
wait_until() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" 2>/dev/null; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}

# build_fixtures: compile the fixture programs into $T/fx once per script.
# Sets FX (the tree) and ID_<name> for prog_a, prog_b, prog_c, shapes.
build_fixtures() {
	"$top_srcdir/tests/fixtures/build.sh" "$T/fx" >"$T/fixtures.log" 2>&1 ||
	    { cat "$T/fixtures.log"; bail "fixtures did not build"; }
	FX=$T/fx/root
	local name id
	while read -r name id; do
		eval "ID_$name=$id"
	done <"$T/fx/ids"
}

# start_daemon NAME [ARGS...]: start dbgmirrord with its own cache and log
# on a free port.  Sets NAME_PID, NAME_PORT, NAME_LOG and NAME_URL.
# Waits until it listens; with --scan-dir, until the first scan finished.
start_daemon() {
	local name=$1 log=$T/$1.log port pid try rc
	# Under the journal (JOURNAL_STREAM) lines start with a priority.
	local banner='\(]: \|^<6>\)dbgmirrord .*: cache '
	shift
	# A second try, saying why the first one failed: on a loaded CI machine
	# a daemon has twice (in ~20,000 starts) written nothing at all within
	# the bound, and its state is what tells the cause.
	for try in 1 2; do
		# No upstreams but those a test names: never the caller's.
		env -u DEBUGINFOD_URLS "$DBGMIRRORD" --no-config \
		    --listen 127.0.0.1:0 --threads 2 --workers 2 \
		    --cache-dir "$T/$name-cache" --upload-dir "$T/$name-uploads" \
		    "$@" 2>"$log" &
		pid=$!
		DAEMON_PIDS="$DAEMON_PIDS $pid"
		# The banner follows the last listener bound; a bind that
		# fails ends the daemon instead.
		wait_until 60 sh -c "grep -q '$banner' '$log' || ! kill -0 $pid"
		kill -0 "$pid" 2>/dev/null && grep -q "$banner" "$log" && break
		diag "$name did not start (try $try); its log:"
		sed 's/^/#   /' "$log"
		if [ -d "/proc/$pid" ]; then
			diag "$name: state $(awk '/^State/ { print $2 }' "/proc/$pid/status"), in $(cat "/proc/$pid/wchan"), $(ls "/proc/$pid/task" | wc -l) threads"
			kill -KILL "$pid" 2>/dev/null
		fi
		wait "$pid" 2>/dev/null
		rc=$?
		diag "$name: exit status $rc"
		# A crash is a failure of the daemon, never retried.
		[ "$try" -eq 2 ] || [ "$rc" -gt 128 ] && [ "$rc" -ne 137 ] &&
		    bail "$name did not start (exit status $rc)"
		[ "$try" -eq 2 ] && bail "$name did not start"
	done
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" |
	    head -n 1)
	eval "${name}_PID=$pid ${name}_PORT=$port ${name}_LOG=$log"
	eval "${name}_URL=http://127.0.0.1:$port"
	wait_scan "$name" 1
}

# scans_done LOG N: true when LOG shows at least N finished scans.
scans_done() {
	[ "$(grep -c 'scan finished' "$1")" -ge "$2" ]
}

# wait_scan NAME N: wait until NAME's log shows N finished scans.
wait_scan() {
	local log
	eval "log=\$${1}_LOG"
	wait_until 300 scans_done "$log" "$2" ||
	    bail "$1: scan $2 did not finish"
}

# stop_daemon NAME: SIGTERM, wait (bounded); its exit status in STOP_RC.
# (Not in a $(...) subshell: only this shell can wait for the daemon.)
stop_daemon() {
	local pid
	eval "pid=\$${1}_PID"
	kill -TERM "$pid" 2>/dev/null
	if ! wait_until 20 sh -c "! kill -0 $pid"; then
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid" 2>/dev/null
	STOP_RC=$?
}

# code URL [CURL ARGS...]: the HTTP status of a GET.
code() {
	local url=$1
	shift
	curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" "$url"
}

# raw PORT: send stdin as-is to 127.0.0.1:PORT and print what comes back
# until the server closes the connection, RAW_WAIT (20) seconds at most (so
# send "Connection: close" unless the test is about keep-alive).  Returns 0
# when the server closed the connection, 1 when the wait ran out first:
# that the server closes is asserted on this, never on how long it took.
raw() {
	local port=$1 rc
	{
		exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
		cat >&3
		timeout "${RAW_WAIT:-20}" cat <&3
		rc=$?
		exec 3>&-
	} 2>/dev/null
	[ "$rc" -eq 0 ]
}

# status_of TEXT: the status code in the first line of a raw answer.
status_of() {
	printf '%s' "$1" | head -n 1 | awk '{ print $2 }'
}

# access_log_has NAME REGEX: wait (bounded) for an access-log line.
access_log_has() {
	local log
	eval "log=\$${1}_LOG"
	wait_until 5 grep -Eq -- "$2" "$log"
}

# listening PORT: something accepts connections on 127.0.0.1:PORT.
listening() {
	bash -c ">/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# pick_port: a random port for a server that cannot take port 0, below the
# kernel's ephemeral range, so that no client socket of a test running
# beside this one can be holding it, and (unless all 8 tries found one
# taken) that nothing listens on yet.  Callers still retry a failed start.
pick_port() {
	local low p i
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null
	[ "${low:-0}" -gt 12000 ] || low=32768
	for i in 1 2 3 4 5 6 7 8; do
		p=$((10000 + RANDOM % (low - 10000)))
		listening "$p" || break
	done
	echo "$p"
}

# start_nginx ROOT [SERVER_LINES]: nginx on a free loopback port serving
# ROOT (its files, directories in $T/nginx, its access log
# $T/nginx/access.log), with SERVER_LINES added to its server block; sets
# N to its base URL, or bails out.
start_nginx() {
	local root=$1 extra=${2:-} try port
	mkdir -p "$T/nginx"
	for try in 1 2 3 4 5; do
		port=$(pick_port)
		cat >"$T/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $T/nginx/nginx.pid;
error_log $T/nginx/error.log;
events { worker_connections 512; }
http {
	access_log $T/nginx/access.log;
	default_type application/octet-stream;
	server {
		listen 127.0.0.1:$port;
		root $root;
$extra
	}
}
CONF
		nginx -e "$T/nginx/error.log" -c "$T/nginx/nginx.conf" \
		    -p "$T/nginx/" >"$T/nginx/out.log" 2>&1 &
		DAEMON_PIDS="$DAEMON_PIDS $!"
		wait_until 10 listening "$port" && break
	done
	listening "$port" ||
	    { cat "$T/nginx/error.log"; bail "nginx did not start"; }
	N=http://127.0.0.1:$port
}

# refreshed NAME N: daemon NAME's log shows N repository refreshes done.
refreshed() {
	local log
	eval "log=\$${1}_LOG"
	[ "$(grep -c ': refreshed' "$log")" -ge "$2" ]
}

# apt_release ROOT: write ROOT/dists/stable/Release for what its
# dists/stable holds (each component's binary-amd64/Packages* and
# Contents-amd64*) and clear-sign it into InRelease with gpg's default key
# ($GNUPGHOME); its mtime one second later than the last one's, so that
# nginx's ETag changes.
apt_release() {
	local d=$1/dists/stable f
	{
		printf 'Origin: test\nSuite: stable\nCodename: stable\n'
		printf 'Date: %s\n' "$(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
		printf 'Architectures: amd64\nComponents: %s\nSHA256:\n' \
		    "$(cd "$d" && echo */ | tr -d /)"
		(cd "$d" && for f in */binary-amd64/Packages* */Contents-amd64*; do
			[ -e "$f" ] || continue
			printf ' %s %s %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" \
			    "$(stat -c %s "$f")" "$f"
		done)
	} >"$d/Release"
	rm -f "$d/InRelease"
	gpg --batch --yes --clearsign -o "$d/InRelease" "$d/Release" 2>/dev/null
	NREL=$((${NREL:-0} + 1))
	touch -d "@$((EPOCHSECONDS + NREL))" "$d/InRelease"
}

# apt_deb NAME DIR IDS: a package NAME_1.0_amd64.deb of tree DIR into $T/pkg,
# with a Build-Ids field when IDS is not empty.
apt_deb() {
	local name=$1 dir=$2 ids=$3
	mkdir -p "$dir/DEBIAN" "$T/pkg"
	{
		printf 'Package: %s\nVersion: 1.0\nArchitecture: amd64\n' "$name"
		printf 'Maintainer: Test <t@example.org>\nDescription: fixture\n'
		[ -z "$ids" ] || printf 'Build-Ids: %s\n' "$ids"
	} >"$dir/DEBIAN/control"
	dpkg-deb --root-owner-group -Zxz --build "$dir" \
	    "$T/pkg/${name}_1.0_amd64.deb" >/dev/null
}

# apt_repo DIR PKG...: an apt repository at $W/DIR, suite stable,
# component main, with the packages of $T/pkg named in its pool, Packages
# (.xz and .gz), Contents-amd64.gz, Release and a clear-signed InRelease
# (apt_release: gpg's default key).
apt_repo() {
	local r=$W/$1 p
	shift
	rm -rf "$r"
	mkdir -p "$r/pool/main" "$r/dists/stable/main/binary-amd64"
	for p in "$@"; do
		cp "$T/pkg/${p}_1.0_amd64.deb" "$r/pool/main/"
	done
	(cd "$r" && dpkg-scanpackages -m pool/main /dev/null 2>/dev/null) \
	    >"$r/dists/stable/main/binary-amd64/Packages"
	for p in "$@"; do
		dpkg-deb -c "$T/pkg/${p}_1.0_amd64.deb" |
		    awk -v p="devel/$p" '$6 ~ /^\.\/usr\/lib\/debug\/\.build-id\// { sub(/^\.\//, "", $6); print $6 "\t" p }'
	done | gzip -9n >"$r/dists/stable/main/Contents-amd64.gz"
	xz -k "$r/dists/stable/main/binary-amd64/Packages"
	gzip -k9n "$r/dists/stable/main/binary-amd64/Packages"
	apt_release "$r"
}

# notify_listen SOCKET FILE: a unix datagram socket standing for systemd's
# (NOTIFY_SOCKET), each datagram written to FILE as one line, its newlines
# shown as " | ".  Stopped at exit.
notify_listen() {
	python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as f:
    while True:
        f.write(s.recv(4096).decode().replace("\n", " | ") + "\n")
        f.flush()
' "$1" "$2" &
	DAEMON_PIDS="$DAEMON_PIDS $!"
	wait_until 10 test -S "$1" || bail "the notify socket did not appear"
	touch "$2"
}

# start_debuginfod NAME ARGS...: elfutils debuginfod (e.g. -F DIR) on a free
# port, with no upstreams of its own and its database under $T.  Sets
# NAME_PID, NAME_PORT, NAME_LOG and NAME_URL.  debuginfod has no "port 0":
# a few random free ports are tried.
start_debuginfod() {
	local name=$1 log=$T/$1.log p pid try
	shift
	command -v debuginfod >/dev/null ||
	    bail "elfutils debuginfod is not installed"
	for try in 1 2 3 4 5; do
		# DEBUGINFOD_PORT: start again where a stopped one was.
		p=${DEBUGINFOD_PORT:-$(pick_port)}
		env -u DEBUGINFOD_URLS HOME="$T" debuginfod -p "$p" \
		    -d "$T/$name-$try.sqlite" -v "$@" >"$log" 2>&1 &
		pid=$!
		DAEMON_PIDS="$DAEMON_PIDS $pid"
		# Up (listening) or gone (bind failed): 20 s at most.
		wait_until 20 sh -c "! kill -0 $pid || bash -c '>/dev/tcp/127.0.0.1/$p'"
		if kill -0 "$pid" 2>/dev/null && listening "$p"; then
			eval "${name}_PID=$pid ${name}_PORT=$p ${name}_LOG=$log"
			eval "${name}_URL=http://127.0.0.1:$p"
			return 0
		fi
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	cat "$log"
	bail "debuginfod did not start"
}

# start_fake NAME ARGS...: tests/fakeupstream on a free port, logging the
# requests it gets to NAME_LOG.  Sets NAME_PID, NAME_PORT, NAME_LOG and
# NAME_URL.
start_fake() {
	local name=$1 pid port
	shift
	rm -f "$T/$name.port"
	"$top_builddir/tests/fakeupstream" --port-file "$T/$name.port" \
	    --log "$T/$name.requests" "$@" >/dev/null 2>"$T/$name.err" &
	pid=$!
	DAEMON_PIDS="$DAEMON_PIDS $pid"
	wait_until 10 test -s "$T/$name.port" ||
	    { cat "$T/$name.err"; bail "fakeupstream $name did not start"; }
	port=$(cat "$T/$name.port")
	touch "$T/$name.requests"
	eval "${name}_PID=$pid ${name}_PORT=$port"
	eval "${name}_LOG=$T/$name.requests"
	eval "${name}_URL=http://127.0.0.1:$port"
}

# requests_to NAME REGEX: how many requests fake NAME logged matching REGEX.
requests_to() {
	local log
	eval "log=\$${1}_LOG"
	grep -Ec -- "$2" "$log"
}

# dfind NAME ARGS...: debuginfod-find against server NAME with a fresh
# client cache; the path it prints in $FOUND, its exit status returned.
nfind=0
dfind() {
	local name=$1 url rc
	shift
	eval "url=\$${name}_URL"
	nfind=$((nfind + 1))
	# Two minutes to the first byte: a fill that needs a decompression
	# pass over gigabytes took more than client_env's 10 s under
	# ThreadSanitizer on a loaded machine.
	FOUND=$(DEBUGINFOD_URLS=$url DEBUGINFOD_TIMEOUT=120 \
	    DEBUGINFOD_CACHE_PATH=$T/client-cache-$nfind \
	    timeout 150 debuginfod-find "$@" 2>"$T/find.err")
	rc=$?
	[ "$rc" -eq 0 ] || sed 's/^/#   debuginfod-find: /' "$T/find.err"
	return "$rc"
}

# check_find NAME WHAT REFERENCE ARGS...: debuginfod-find ARGS against
# server NAME must succeed and give a copy of REFERENCE.
check_find() {
	local name=$1 what=$2 ref=$3
	shift 3
	dfind "$name" "$@"
	ok $? "$name: debuginfod-find $*: exit 0"
	[ -n "$FOUND" ] && cmp -s "$FOUND" "$ref"
	ok $? "... $what, byte-identical"
}

# gdb_run NAME BINARY COMMANDS...: gdb in batch mode with debuginfod on,
# against server NAME, a fresh cache; output in $OUT.
ngdb=0
gdb_run() {
	local name=$1 bin=$2 url c
	local -a ex=()
	shift 2
	eval "url=\$${name}_URL"
	ngdb=$((ngdb + 1))
	for c in "$@"; do
		ex+=(-ex "$c")
	done
	OUT=$(DEBUGINFOD_URLS=$url DEBUGINFOD_CACHE_PATH=$T/gdb-cache-$ngdb \
	    timeout 60 gdb -nx -batch -iex 'set debuginfod enabled on' \
	    "${ex[@]}" "$bin" 2>&1 </dev/null)
}

# client_env: what the client tools read, set for the tests.
client_env() {
	export HOME=$T DEBUGINFOD_TIMEOUT=10
	unset DEBUGINFOD_PROGRESS DEBUGINFOD_VERBOSE DEBUGINFOD_MAXSIZE \
	    DEBUGINFOD_MAXTIME DEBUGINFOD_HEADERS_FILE
}

# header NAME FILE: the value of header NAME in a dump of headers.
header() {
	tr -d '\r' <"$2" | sed -n "s/^$1: //Ip" | head -n 1
}

# dump_section FILE SECTION OUT: the bytes of SECTION of FILE into OUT.
# objcopy writes its input back when given no output file, changing the
# file the servers index; a scratch output keeps FILE as it is.
dump_section() {
	objcopy --dump-section "$2=$3" "$1" "$T/objcopy.scratch"
}

# mkbin HEXID [PADDING_BYTES]: print the path of an unstripped program
# (debuginfo and executable at once) whose GNU build-id is HEXID, made in
# $T/bins; PADDING_BYTES of initialised data make it larger.
mkbin() {
	local id=$1 pad=${2:-0} dir=$T/bins
	mkdir -p "$dir"
	if [ ! -f "$dir/pad$pad.o" ]; then
		printf 'static char pad[%d + 1] = { 1 };\nint main(void) { return pad[0] - 1; }\n' \
		    "$pad" >"$dir/pad$pad.c"
		cc -g -c -o "$dir/pad$pad.o" "$dir/pad$pad.c" || bail "cc failed"
	fi
	cc -g -o "$dir/$id" "$dir/pad$pad.o" "-Wl,--build-id=0x$id" ||
	    bail "cannot link a program with build-id $id"
	echo "$dir/$id"
}

# herd URL N: N parallel GETs of URL into $T/herd/N.body, statuses in
# $T/herd/codes.
herd() {
	local url=$1 n=$2 i
	rm -rf "$T/herd"
	mkdir -p "$T/herd"
	for i in $(seq 1 "$n"); do
		printf 'url = "%s"\noutput = "%s"\nwrite-out = "%%{http_code}\\n"\n' \
		    "$url" "$T/herd/$i.body"
	done >"$T/herd/config"
	curl -s --no-progress-meter -Z --parallel-immediate --parallel-max "$n" -m 60 -K "$T/herd/config" \
	    >"$T/herd/codes"
}

# metric NAME_AND_LABELS URL: the value of one sample of URL/metrics.
metric() {
	curl -s "$2/metrics" | awk -v k="$1" '$1 == k { print $2; exit }'
}

# lt A B: true when the number A is less than B (decimals allowed).
lt() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'
}

# make_certs DIR: a test CA (DIR/ca.pem), a server certificate for
# 127.0.0.1 and localhost (DIR/server.pem, DIR/server.key), client
# certificates CN=ci and CN=dev (DIR/ci.pem .key, DIR/dev.pem .key), and a
# client certificate CN=ci signed by another CA (DIR/rogue.pem .key).
make_certs() {
	local d=$1 n
	mkdir -p "$d"
	(
		cd "$d" || exit 1
		for n in ca other; do
			openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
			    -nodes -keyout "$n.key" -out "$n.pem" -days 2 \
			    -subj "/CN=dbgmirror test $n" || exit 1
		done
		printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >server.ext
		# leaf NAME SUBJECT CA EXTFILE
		leaf() {
			openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
			    -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" &&
			openssl x509 -req -in "$1.csr" -CA "$3.pem" \
			    -CAkey "$3.key" -CAcreateserial -days 2 \
			    ${4:+-extfile "$4"} -out "$1.pem"
		}
		leaf server "/CN=localhost" ca server.ext &&
		leaf renewed "/CN=renewed" ca server.ext &&
		leaf ci "/O=Example/CN=ci" ca &&
		leaf dev "/O=Example/CN=dev" ca &&
		leaf rogue "/O=Example/CN=ci" other
	) >"$d/openssl.log" 2>&1 || { cat "$d/openssl.log"; bail "openssl could not make the test certificates"; }
}

# tls_port NAME: the port of NAME's first TLS listener, from its log.
tls_port() {
	local log
	eval "log=\$${1}_LOG"
	sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\) (TLS).*/\1/p' "$log" |
	    head -n 1
}
