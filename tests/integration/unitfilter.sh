#!/bin/bash
# The daemon as the systemd unit runs it, without systemd: not root, no
# capability, under the unit's own SystemCallFilter= (tests/unitfilter.py
# builds it from the installed unit).  It must start, fence its workers
# (the filter allows seccomp and Landlock), serve a scanned file and a
# fill, reload and stop, and log no refused call of its own.
. "$top_srcdir/tests/integration/lib.sh"

as_nobody_or_skip systemd-analyze

unit=$top_builddir/packaging/systemd/dbgmirrord.service
ok "$([ -f "$unit" ] && echo 0 || echo 1)" "the unit is built"
# systemctl reload runs ExecReload= lines in order, and stops at the first
# that fails: the file is checked, with ExecStart's options, before the
# signal is sent.
start=$(sed -n 's/^ExecStart=//p' "$unit")
is "$(sed -n 's/^ExecReload=//p' "$unit" | tr '\n' '|')" \
    "$start --check-config|/bin/kill -HUP \$MAINPID|" \
    "reload: the unit checks the file (ExecStart's options), then signals"
real=$DBGMIRRORD
DBGMIRRORD=$T/under-unit
# LeakSanitizer stops the world with ptrace, which the unit's filter
# refuses (as it should): no leak check in a sanitizer build here.
cat >"$DBGMIRRORD" <<SH
#!/bin/sh
export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0"
exec setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \\
    --bounding-set=-all /usr/bin/python3 "$top_srcdir/tests/unitfilter.py" "$unit" \\
    "$real" "\$@"
SH
chmod 755 "$DBGMIRRORD"

id_up=8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d8d
id_scan=9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e9e
bin_up=$(mkbin $id_up)
mkdir -p "$T/scan"
cp "$(mkbin $id_scan)" "$T/scan/prog"
chmod -R a+rX "$T/scan" "$T/bins"
start_fake up "$id_up=ok:$bin_up"
install -d -o nobody -g nogroup "$T/u-cache"

start_daemon u --scan-dir "$T/scan" --upstream "$up_URL"
is "$(awk '/^Seccomp_filters:/ { print $2 }' "/proc/$u_PID/status")" 1 \
    "the main thread runs under the unit's filter"
is "$(grep -l '^Seccomp_filters:[[:space:]]*2' /proc/"$u_PID"/task/*/status | wc -l)" 5 \
    "... and the 4 workers and the background one under theirs too"
is "$(code "$u_URL/buildid/$id_scan/executable")" 200 "a scanned file"
is "$(code "$u_URL/buildid/$id_up/executable")" 200 "a fill"
kill -HUP "$u_PID"
wait_scan u 2
is "$(code "$u_URL/metrics")" 200 "a reload (SIGHUP)"
stop_daemon u
is "$STOP_RC" 0 "a clean stop"
is "$(grep -cE 'sandbox|capset|Operation not permitted|fatal|background worker' "$u_LOG")" 0 \
    "no refusal in the log"
grep -E 'sandbox|capset|Operation not permitted|fatal|background worker' "$u_LOG" | sed 's/^/#   /'

done_testing
