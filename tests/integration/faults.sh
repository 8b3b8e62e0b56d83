#!/bin/bash
# Misbehaving upstreams (tests/fakeupstream): for each way an upstream can
# go wrong, the client gets the right bytes or a prompt error within the
# deadline, nothing wrong is cached, and /metrics counts it.
. "$top_srcdir/tests/integration/lib.sh"

# Ids and the programs that carry them.
id_ok=1111111111111111111111111111111111111111
id_wrong=2222222222222222222222222222222222222222
id_html=3333333333333333333333333333333333333333
id_hang=4444444444444444444444444444444444444444
id_stall=5555555555555555555555555555555555555555
id_trickle=6666666666666666666666666666666666666666
id_trunc=7777777777777777777777777777777777777777
id_reset=8888888888888888888888888888888888888888
id_500=9999999999999999999999999999999999999999
id_503=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
id_redir=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
id_redir2=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2
id_loop=cccccccccccccccccccccccccccccccccccccccc
id_huge=dddddddddddddddddddddddddddddddddddddddd
id_short=eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee
id_resume=ffffffffffffffffffffffffffffffffffffffff
id_late=1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a
bin_ok=$(mkbin $id_ok)
bin_late=$(mkbin $id_late)
bin_trickle=$(mkbin $id_trickle 60000)
bin_trunc=$(mkbin $id_trunc 60000)
bin_reset=$(mkbin $id_reset 60000)
bin_resume=$(mkbin $id_resume 60000)
bin_redir=$(mkbin $id_redir)
bin_stall=$(mkbin $id_stall)
truncate -s 3G "$T/huge"
dd if="$(mkbin $id_huge)" of="$T/huge" conv=notrunc status=none
printf '\177ELF' >"$T/short"

# late: 5 s without a byte (2.5 first-byte timeouts), while "/" answers.
start_fake up --rate 40000 --late 5000 \
    "$id_ok=ok:$bin_ok" \
    "$id_late=late:$bin_late" \
    "$id_wrong=ok:$bin_ok" \
    "$id_html=html" \
    "$id_stall=stall:$bin_stall" \
    "$id_trickle=trickle:$bin_trickle" \
    "$id_trunc=truncate:$bin_trunc" \
    "$id_reset=reset:$bin_reset" \
    "$id_resume=resumable:$bin_resume" \
    "$id_500=status:500" \
    "$id_503=status:503" \
    "$id_redir=redirect:/buildid/$id_redir2/debuginfo" \
    "$id_redir2=ok:$bin_redir" \
    "$id_loop=redirectloop" \
    "$id_huge=ok:$T/huge" \
    "$id_short=ok:$T/short"

# Short deadlines; errors not remembered, so each case asks again.
start_daemon d --scan-dir none --upstream "$up_URL" \
    --upstream-connect-timeout 1 --upstream-first-byte-timeout 2 \
    --upstream-stall-timeout 2 --upstream-retries 1 --error-ttl 0 \
    --breaker-failures 1000 --max-object-size 1G
M=$d_URL

# fetch NAME ID [KIND]: GET through the daemon into $T/NAME; sets CODE,
# CURL_RC (curl's exit status) and SECS (wall time).
fetch() {
	local t0 out
	t0=$(date +%s.%N)
	out=$(curl -s -o "$T/$1" -w '%{http_code}' -m 20 \
	    "$M/buildid/$2/${3:-debuginfo}")
	CURL_RC=$?
	CODE=$out
	SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
}

# cached ID: true when the daemon's cache holds an entry for ID.
cached() {
	curl -s "$M/buildid/$1/debuginfo" -o /dev/null -D "$T/c.h"
	grep -qi '^X-Cache: HIT' "$T/c.h"
}

blobs() {
	find "$T/d-cache/blobs" -type f | wc -l
}

fetch ok $id_ok
is "$CODE" 200 "a good upstream: 200"
cmp -s "$T/ok" "$bin_ok"
ok $? "... the bytes of the program"
cached $id_ok
ok $? "... and it is cached"

errs0=$(metric "dbgmirror_upstream_verify_failures_total{upstream=\"$up_URL\"}" "$M")
fetch wrong $id_wrong
is "$CODE" 502 "valid ELF with another build-id: 502"
errs1=$(metric "dbgmirror_upstream_verify_failures_total{upstream=\"$up_URL\"}" "$M")
[ "${errs1:-0}" -gt "${errs0:-0}" ]
ok $? "... counted as a verification failure ($errs0 -> $errs1)"
! cached $id_wrong
ok $? "... not cached"

fetch html $id_html
is "$CODE" 502 "200 with an HTML page: 502"
! cached $id_html
ok $? "... not cached"

# An upstream at work: silent past the first-byte timeout, but it answers
# "GET /", so it is waited for.
fetch late $id_late
is "$CODE" 200 "an upstream silent for 2.5 first-byte timeouts that answers GET /: 200"
cmp -s "$T/late" "$bin_late"
ok $? "... the bytes of the program"
grep -q "upstream $up_URL: no answer for /buildid/$id_late/debuginfo after [0-9]*s, but it answers: waited for" "$T/d.log"
ok $? "... and the log says it was waited for"

# An upstream that answers nothing at all, not even "GET /": every request
# of its is held by a thread that sleeps.
start_fake dead --delay 600000 "*=hang"
start_daemon d2 --scan-dir none --upstream "$dead_URL" \
    --upstream-connect-timeout 1 --upstream-first-byte-timeout 2 \
    --error-ttl 0 --breaker-failures 1000
M=$d2_URL
fetch hang $id_hang
is "$CODE" 502 "an upstream that accepts and never answers: 502"
lt "$SECS" 16
ok $? "... within a first-byte timeout and one for GET / ($SECS s)"
like "$(metric "dbgmirror_upstream_errors_total{upstream=\"$dead_URL\",kind=\"timeout\"}" "$M")" \
    '^[1-9]' "... counted as a timeout"
# Many requests for it at once: all answered.
for i in $(seq 1 10); do
	curl -s -o /dev/null -m 20 -w '%{http_code}\n' \
	    "$M/buildid/$id_hang/debuginfo" &
done >"$T/par" 2>&1
wait_until 25 sh -c "[ \$(wc -l <'$T/par') -eq 10 ]"
ok $? "10 requests for a hanging upstream all end"
is "$(sort -u "$T/par")" 502 "... each with 502"
stop_daemon d2
M=$d_URL

fetch stall $id_stall
[ "$CODE" = 502 ] || [ "$CURL_RC" -ne 0 ]
ok $? "headers, then silence: an error (status $CODE, curl $CURL_RC)"
lt "$SECS" 16
ok $? "... within the stall deadline ($SECS s)"
! cached $id_stall
ok $? "... not cached"

curl -s -o "$T/trickle" -m 20 -w '%{time_starttransfer} %{time_total}' \
    "$M/buildid/$id_trickle/debuginfo" >"$T/trickle.out" &
trickle_pid=$!
# tmp_bytes: the bytes of fills not yet in the cache, counted against
# cache-size with it.
tmp_bytes() {
	[ "$(metric dbgmirror_cache_tmp_bytes "$M")" "$1" 0 ]
}
wait_until 20 tmp_bytes -gt
ok $? "while it arrives, its bytes in tmp/ are counted (dbgmirror_cache_tmp_bytes)"
wait "$trickle_pid"
wait_until 20 tmp_bytes -eq
ok $? "... and are no more once it is cached"
out=$(cat "$T/trickle.out")
cmp -s "$T/trickle" "$bin_trickle"
ok $? "a slow upstream: the right bytes in the end"
first=${out% *}
total=${out#* }
lt "$(awk -v a="$first" 'BEGIN { print a + 0.5 }')" "$total"
ok $? "... streamed: the first byte came long before the last ($first s, $total s)"

fetch trunc $id_trunc
[ "$CURL_RC" -ne 0 ] || [ "$CODE" != 200 ]
ok $? "a body cut short (FIN): the client sees an error (curl $CURL_RC, $CODE)"
! cmp -s "$T/trunc" "$bin_trunc"
ok $? "... never a complete-looking file"
is "$(requests_to up "$id_trunc")" 2 "... retried once, as configured"
grep -q "$id_trunc.*range=\"bytes=[1-9]" "$up_LOG"
ok $? "... resuming with Range where the first answer broke"
! cached $id_trunc
ok $? "... not cached"

fetch resume $id_resume
is "$CODE" 200 "a body cut once, then resumable: 200"
cmp -s "$T/resume" "$bin_resume"
ok $? "... the right bytes, joined from two transfers"
is "$(requests_to up "$id_resume")" 2 "... the second one a resume"
grep -q "$id_resume.*range=\"bytes=[1-9][0-9]*-\"" "$up_LOG"
ok $? "... with Range from where the first broke"
cached $id_resume
ok $? "... and the file is cached"

fetch reset $id_reset
[ "$CURL_RC" -ne 0 ] || [ "$CODE" != 200 ]
ok $? "a connection reset mid-body: the client sees an error"
! cached $id_reset
ok $? "... not cached"

fetch e500 $id_500
is "$CODE" 502 "HTTP 500 upstream: 502"
fetch e503 $id_503
is "$CODE" 502 "HTTP 503 upstream: 502"
like "$(metric "dbgmirror_upstream_errors_total{upstream=\"$up_URL\",kind=\"http\"}" "$M")" \
    '^[2-9]' "... both counted as HTTP errors"

fetch redir $id_redir
is "$CODE" 200 "a redirect is followed"
cmp -s "$T/redir" "$bin_redir"
ok $? "... to the right bytes"
fetch loop $id_loop
is "$CODE" 502 "a redirect loop: 502"
lt "$SECS" 10
ok $? "... promptly ($SECS s)"

fetch huge $id_huge
is "$CODE" 502 "a 3 GB answer over max-object-size: 502"
lt "$SECS" 5
ok $? "... promptly, without reading it ($SECS s)"

fetch short $id_short
is "$CODE" 502 "4 bytes of ELF magic: 502"

is "$(find "$T/d-cache/tmp" -type f | wc -l)" 0 \
    "no temp files are left behind"
is "$(blobs)" 5 "the cache holds the five good files only"


stop_daemon d
is "$STOP_RC" 0 "SIGTERM: exit 0"
done_testing
