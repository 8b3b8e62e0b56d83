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

T=$(mktemp -d "${TMPDIR:-/tmp}/dbgmirror-test.XXXXXX")
TAP_N=0
TAP_FAILED=0
DAEMON_PIDS=""

cleanup() {
	local pid
	for pid in $DAEMON_PIDS; do
		kill -KILL "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

# ok STATUS DESCRIPTION: STATUS is a command's exit status (0 = pass).
ok() {
	TAP_N=$((TAP_N + 1))
	if [ "$1" -eq 0 ]; then
		echo "ok $TAP_N - $2"
	else
		TAP_FAILED=$((TAP_FAILED + 1))
		echo "not ok $TAP_N - $2"
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

# The plan; failures are already "not ok" lines, so the exit status stays 0
# and the harness counts each failure once.
done_testing() {
	echo "1..$TAP_N"
	[ "$TAP_FAILED" -eq 0 ] || diag "$TAP_FAILED of $TAP_N failed"
	exit 0
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
	local name=$1 log=$T/$1.log port pid
	shift
	"$DBGMIRRORD" --no-config --listen 127.0.0.1:0 --threads 2 \
	    --workers 2 --cache-dir "$T/$name-cache" "$@" 2>"$log" &
	pid=$!
	DAEMON_PIDS="$DAEMON_PIDS $pid"
	if ! wait_until 20 grep -q 'listening on 127.0.0.1:' "$log"; then
		cat "$log"
		bail "$name did not start"
	fi
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
	wait_until 30 scans_done "$log" "$2" ||
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
# until the server closes the connection, 5 s at most (so send
# "Connection: close" unless the test is about keep-alive).
raw() {
	local port=$1
	{
		exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
		cat >&3
		timeout 5 cat <&3
		exec 3>&-
	} 2>/dev/null
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
