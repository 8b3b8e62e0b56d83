#!/bin/bash
# Logging: under systemd (JOURNAL_STREAM names the daemon's stderr) every
# line carries its syslog priority as "<N>" and no time of its own, so
# that journalctl -p filters it; and access-log = FILE, in the combined
# log format with the cache result, source and duration, reopened on
# SIGUSR2 and SIGHUP after logrotate moved the file.
. "$top_srcdir/tests/integration/lib.sh"

id_ok=a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1
id_fail=e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0
bin_ok=$(mkbin $id_ok)
start_fake up "$id_ok=ok:$bin_ok" "$id_fail=status:503"

# ------------------------------------------------------------ the journal

# The stream systemd would hand over is the file the test's 2> opens:
# JOURNAL_STREAM is its device and inode, as systemd spells them.
: >"$T/j.log"
js=$(stat -c '%d:%i' "$T/j.log")
JOURNAL_STREAM=$js start_daemon j --scan-dir none --upstream "$up_URL" \
    --breaker-failures 1 --breaker-backoff 3600
is "$(code "$j_URL/buildid/$id_ok/debuginfo")" 200 "a fill"
is "$(code "$j_URL/buildid/$id_fail/debuginfo")" 502 \
    "an upstream error, which opens its breaker (a warning)"
wait_until 20 grep -q 'breaker open' "$j_LOG" ||
    diag "the breaker's warning never came"
access_log_has j "\"GET /buildid/$id_fail/debuginfo\" 502 " ||
    diag "no access line for the failed request"
stop_daemon j

# Every line: <N> first, N a syslog priority, and no time stamp.
is "$(grep -cv '^<[0-7]>' "$j_LOG")" 0 "every line starts with a <N> priority"
is "$(grep -cE '^<[0-7]>[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$j_LOG")" 0 \
    "... and carries no time of its own"
is "$(grep -c '^<[0-7]>dbgmirrord\[' "$j_LOG")" 0 \
    "... nor the program's name (the journal adds both)"
like "$(grep '^<6>' "$j_LOG")" '^<6>dbgmirrord [^ ]+: cache ' \
    "the start-up banner is info (6)"
like "$(grep '^<6>' "$j_LOG")" "^<6>127\\.0\\.0\\.1:[0-9]+ \"GET /buildid/$id_ok/debuginfo\" 200 [0-9]+ [0-9.]+ms MISS " \
    "access lines are info (6), without a time"
like "$(grep '^<4>' "$j_LOG")" '^<4>warning: upstream http://[^ ]+: breaker open' \
    "the breaker's warning is warning (4)"

# journalctl -p warning keeps priorities 0 to 4; the same filter on the
# captured stream.
warn_only=$(sed -n 's/^<\([0-4]\)>/\1 /p' "$j_LOG")
like "$warn_only" 'breaker open' "-p warning keeps the warning"
is "$(printf '%s\n' "$warn_only" | grep -c 'GET /buildid')" 0 \
    "... and drops the access lines"
is "$(printf '%s\n' "$warn_only" | grep -c ': cache ')" 0 \
    "... and the info lines"

# A stream that is not stderr (a child that redirected it): plain lines.
: >"$T/p.log"
JOURNAL_STREAM=1:1 start_daemon p --scan-dir none
is "$(code "$p_URL/")" 200 "another daemon, JOURNAL_STREAM not its stderr"
access_log_has p '"GET /" 200 ' || diag "no access line"
stop_daemon p
is "$(grep -c '^<[0-7]>' "$p_LOG")" 0 "... writes no priorities"
like "$(cat "$p_LOG")" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z dbgmirrord\[[0-9]+\]: ' \
    "... and its own time and name"

# ------------------------------------------------------- access-log FILE

start_daemon a --scan-dir none --upstream "$up_URL" \
    --access-log "$T/access.log"
is "$(code "$a_URL/buildid/$id_ok/debuginfo" -A 'probe "agent"' \
    -e 'http://example.org/from')" 200 "a request"
is "$(code "$a_URL/buildid/$id_ok/debuginfo")" 200 "... and again"
wait_until 30 sh -c "[ \$(wc -l <'$T/access.log') -ge 2 ]" ||
    diag "the access-log file did not get its lines"
clf='^127\.0\.0\.1 - - \[[0-9]{2}/[A-Z][a-z]{2}/[0-9]{4}:[0-9]{2}:[0-9]{2}:[0-9]{2} \+0000\] '
# Each event-loop thread writes its own lines: found by what they hold.
like "$(grep MISS "$T/access.log")" \
    "$clf\"GET /buildid/$id_ok/debuginfo HTTP/1\\.1\" 200 [0-9]+ \"http://example\\.org/from\" \"probe _agent_\" MISS http://127\\.0\\.0\\.1:$up_PORT [0-9]+\\.[0-9]{6}\$" \
    "the combined log format, then result, source and seconds"
like "$(grep HIT "$T/access.log")" \
    "$clf\"GET /buildid/$id_ok/debuginfo HTTP/1\\.1\" 200 [0-9]+ \"-\" \"curl/[^\"]*\" HIT cache [0-9.]+\$" \
    "... a hit, without a referer"
is "$(grep -c 'GET /buildid' "$a_LOG")" 0 "the access lines are not on stderr"

# logrotate: move the file, then SIGUSR2; the next lines go to a new file.
mv "$T/access.log" "$T/access.log.1"
kill -USR2 "$a_PID"
wait_until 20 grep -q 'SIGUSR2: access log reopened' "$a_LOG"
ok $? "SIGUSR2 reopens the access log"
is "$(code "$a_URL/buildid/$id_ok/debuginfo" -A after-usr2)" 200 \
    "a request after the rotation"
wait_until 5 grep -q after-usr2 "$T/access.log"
ok $? "... logged in the new access.log"
is "$(grep -c after-usr2 "$T/access.log.1")" 0 "... not in the moved one"
is "$(wc -l <"$T/access.log.1")" 2 "the moved file kept its two lines"

# SIGHUP too.
mv "$T/access.log" "$T/access.log.2"
kill -HUP "$a_PID"
wait_until 20 grep -q 'SIGHUP: access log reopened' "$a_LOG"
ok $? "SIGHUP reopens the access log"
is "$(code "$a_URL/buildid/$id_ok/debuginfo" -A after-hup)" 200 \
    "a request after the second rotation"
wait_until 5 grep -q after-hup "$T/access.log"
ok $? "... logged in the newest access.log"
is "$(grep -c after-hup "$T/access.log.2")" 0 "... not in the moved one"
stop_daemon a

# A file that cannot be opened stops the start, saying so.
"$DBGMIRRORD" --no-config --listen 127.0.0.1:0 --cache-dir "$T/bad-cache" \
    --scan-dir none --access-log "$T/no/such/dir/access.log" \
    >/dev/null 2>"$T/bad.log"
is $? 1 "an access-log file that cannot be opened: exit 1"
like "$(cat "$T/bad.log")" "access-log $T/no/such/dir/access\\.log: No such file or directory" \
    "... naming the file and why"
"$DBGMIRRORD" --no-config --check-config --access-log=maybe \
    >/dev/null 2>"$T/word.log"
is $? 1 "access-log = maybe (no '/'): refused"
like "$(cat "$T/word.log")" 'access-log: "maybe": expected on/off.* or a file' \
    "... saying what is expected"

done_testing
