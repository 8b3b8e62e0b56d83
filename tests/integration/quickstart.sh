#!/bin/bash
# ./quickstart's package selection and its wait for apt's locks, with
# apt-get, dpkg-query and sudo played by stubs on PATH (nothing is
# installed) and the lock a file of the test's own, held with flock: never
# the system's.
. "$top_srcdir/tests/integration/lib.sh"

qs=$top_srcdir/quickstart

# ------------------------------------------------------------ the groups
"$qs" --print-packages run >"$T/run" 2>"$T/err"
ok $? "--print-packages run"
"$qs" --print-packages check >"$T/check"
"$qs" --print-packages bench >"$T/bench"
for p in gcc libevent-dev liblmdb-dev libcurl4-openssl-dev libelf-dev \
    libarchive-dev libssl-dev libseccomp-dev libsystemd-dev ca-certificates; do
	grep -qx "$p" "$T/run"
	ok $? "run installs $p"
done
# The test and benchmark tools (those the issue found in a run install
# among them) stay out of run's.
bad=$(grep -xE 'chromium|ceph-mon|ceph-osd|ceph-common|radosgw|haproxy|nginx|lintian|debhelper|rpm|createrepo-c|wrk|gdb|debuginfod|elfutils|dwz|clang-format|groff-base|libarchive-tools|python3|fakeroot|dpkg-dev|uuid-runtime|gnupg|systemd|curl|zstd' \
    "$T/run" | tr '\n' ' ')
is "$bad" "" "run installs no test or benchmark package"
for p in chromium ceph-osd haproxy nginx lintian debhelper rpm createrepo-c \
    gdb debuginfod; do
	grep -qx "$p" "$T/check"
	ok $? "check installs $p"
done
for p in wrk nginx debuginfod; do
	grep -qx "$p" "$T/bench"
	ok $? "bench installs $p"
done
is "$(grep -cx wrk "$T/check")" 0 "check does not install wrk"
is "$(sort "$T/check" | uniq -d)" "" "each package once"
"$qs" --print-packages nonsense >/dev/null 2>&1
is "$?" 2 "an unknown command: usage, exit 2"

# ---------------------------------------------------- the wait for locks
# Stubs: every package is missing; apt-get records its arguments and
# answers --print-uris with two packages of 3 MiB.
mkdir -p "$T/bin"
cat >"$T/bin/dpkg-query" <<'SH'
#!/bin/sh
exit 1
SH
cat >"$T/bin/apt-get" <<SH
#!/bin/sh
echo "\$*" >>"$T/apt.calls"
case " \$* " in
*" --print-uris "*)
	echo "'http://deb.debian.org/debian/pool/a.deb' a.deb 2097152 SHA256:00"
	echo "'http://deb.debian.org/debian/pool/b.deb' b.deb 1048576 SHA256:00" ;;
esac
exit 0
SH
printf '#!/bin/sh\nexec "$@"\n' >"$T/bin/sudo"
chmod 755 "$T/bin/"*
qenv() {
	env PATH="$T/bin:$PATH" QUICKSTART_LOCKS="$T/lock $T/other-lock" "$@"
}

# Nothing holds the lock: straight on, saying what and how long.
rm -f "$T/apt.calls"
qenv QUICKSTART_LOCK_WAIT=5 "$qs" install run >"$T/out" 2>&1
ok $? "install run with free locks: exit 0" || sed 's/^/#   /' "$T/out"
like "$(cat "$T/out")" "'run' needs these Debian packages, not installed yet: gcc" \
    "... says what it installs"
like "$(cat "$T/out")" "2 packages with their dependencies, 3 MiB to download; roughly 1 minute" \
    "... and roughly how long it takes"
like "$(sed -n 1p "$T/apt.calls")" "^-o DPkg::Lock::Timeout=[0-9]+ update$" \
    "apt-get update first, itself told to wait for dpkg's lock"
like "$(grep ' install -y ' "$T/apt.calls")" \
    "^-o DPkg::Lock::Timeout=[0-9]+ install -y --no-install-recommends .*libevent-dev" \
    "then apt-get install"
is "$(grep ' install -y ' "$T/apt.calls" | grep -cE ' (chromium|nginx|wrk|gdb)( |$)')" 0 \
    "... of no test or benchmark package"

# The lock held past the bound: a clear message, no apt-get, exit 1.
# -o: the lock is flock's alone, so killing it lets go at once (sleep would
# keep an inherited lock to its end); its sleep is stopped with it.
flock -o "$T/lock" sleep 120 &
holder=$!
DAEMON_PIDS="$DAEMON_PIDS $holder"
wait_until 10 sh -c "grep -q ' $holder ' /proc/locks" || bail "flock did not lock"
sleeper=$(pgrep -P "$holder")
DAEMON_PIDS="$DAEMON_PIDS $sleeper"
rm -f "$T/apt.calls"
qenv QUICKSTART_LOCK_WAIT=2 "$qs" install run >"$T/out" 2>&1
is "$?" 1 "the lock held past QUICKSTART_LOCK_WAIT: exit 1"
like "$(cat "$T/out")" "waiting for another apt or dpkg to finish: $T/lock is held by pid $holder \((flock|sleep)\)" \
    "... having said what it waits for"
like "$(cat "$T/out")" "gave up waiting after 2s: $T/lock is held by pid $holder" \
    "... and why it gave up"
ok "$([ ! -e "$T/apt.calls" ]; echo $?)" "... without running apt-get"

# Held, then let go: it waits, then goes on.
rm -f "$T/apt.calls"
qenv QUICKSTART_LOCK_WAIT=120 "$qs" install check >"$T/out" 2>&1 &
qpid=$!
wait_until 60 grep -q "waiting for another apt" "$T/out"
ok $? "a held lock: it says it waits"
ok "$([ ! -e "$T/apt.calls" ] && kill -0 $qpid; echo $?)" \
    "... and runs no apt-get meanwhile"
kill "$holder" $sleeper
wait "$holder" 2>/dev/null
wait_until 60 sh -c "! kill -0 $qpid"
wait "$qpid"
is "$?" 0 "the lock let go: it goes on and ends well"
like "$(grep ' install -y ' "$T/apt.calls")" " chromium( |$)" \
    "... installing what check needs"

done_testing
