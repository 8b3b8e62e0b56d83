#!/bin/bash
# The shared object-store tier on a real store (Ceph radosgw, started
# here): nodes with separate caches share one bucket.  A fills from the
# upstream and uploads; B answers the same id from the store with no
# upstream request, the same bytes and headers; B serves with A gone; with
# the store down both serve from their caches and the upstream without
# waiting for it, and uploads resume when it is back; an object that does
# not verify is deleted and never served; refused credentials are said at
# start-up and in /metrics; a client's PUT reaches the store like a fill,
# and is not judged (503) while the store does not answer;
# purge deletes an id's objects from the store, over pages of the listing;
# a section is cut from a whole file found in the store;
# --check-config checks the store option.
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/s3lib.sh"

s3_have || bail "the Ceph packages are not installed (./quickstart installs them)"

a=1111111111111111111111111111111111110001
b=1111111111111111111111111111111111110002
c=1111111111111111111111111111111111110003
e=1111111111111111111111111111111111110004
f=1111111111111111111111111111111111110005
big=1111111111111111111111111111111111110006
h=1111111111111111111111111111111111110007
# Uploaded by a client (PUT), known to no upstream.
pu=1111111111111111111111111111111111110008
bin_pu=$(mkbin $pu)
bin_big=$(mkbin $big $((6 << 20)))
for id in $a $b $c $e $f $h; do
	eval "bin_$id=\$(mkbin $id)"
done
wrong=$(mkbin 2222222222222222222222222222222222220001)

# --check-config: the store line, and its credentials.
out=$(env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$DBGMIRRORD" \
    --no-config --check-config --store "s3 http://127.0.0.1:1 some-bucket" 2>&1)
like "$out" "store: no credentials" "--check-config: a store without credentials is refused"
out=$("$DBGMIRRORD" --no-config --check-config --store "s3 ftp://x some-bucket" 2>&1)
like "$out" "ENDPOINT must be an http" "--check-config: a bad endpoint is refused"
printf 'AKEY\nnot-shown-secret\n' >"$T/keys"
out=$(env -u AWS_ACCESS_KEY_ID "$DBGMIRRORD" --no-config --check-config \
    --store "s3 http://127.0.0.1:1 some-bucket access-key-file=$T/keys prefix=x/y region=eu-west-1" 2>&1)
is "$?" 0 "--check-config: a store with an access-key-file passes"
case $out in *not-shown-secret*) leaked=1 ;; *) leaked=0 ;; esac
is "$leaked" 0 "... and the secret is never printed"

s3_start

start_fake up "$a=ok:$(eval echo \$bin_$a)" "$b=ok:$(eval echo \$bin_$b)" \
    "$c=ok:$(eval echo \$bin_$c)" "$e=ok:$(eval echo \$bin_$e)" \
    "$f=ok:$(eval echo \$bin_$f)" "$big=ok:$bin_big" \
    "$h=ok:$(eval echo \$bin_$h)"
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
printf '%s\n%s\n' "$S3_ACCESS_KEY" "$S3_SECRET_KEY" >"$T/s3keys"
common="--scan-dir none --upstream $up_URL --breaker-failures 1 --breaker-backoff 1 --breaker-backoff-max 1"
# shellcheck disable=SC2086
start_daemon A $common --store "$(s3_store_opt)"
# shellcheck disable=SC2086
start_daemon B $common --store "$(s3_store_opt) access-key-file=$T/s3keys"

uploads() { # NODE RESULT: dbgmirror_store_uploads_total of NODE
	local url
	eval "url=\$${1}_URL"
	metric "dbgmirror_store_uploads_total{store=\"$S3_ENDPOINT/$S3_BUCKET/\",result=\"$2\"}" "$url"
}
lookups() { # NODE RESULT
	local url
	eval "url=\$${1}_URL"
	metric "dbgmirror_store_lookups_total{store=\"$S3_ENDPOINT/$S3_BUCKET/\",result=\"$2\"}" "$url"
}
above() { [ "$($1 "$2" "$3")" -ge "$4" ] 2>/dev/null; }
num() { local v; v=$("$@"); echo "${v:-0}"; }

wait_until 20 sh -c "curl -s '$A_URL/metrics' | grep -q '^dbgmirror_store_credentials_ok 1'"
ok $? "A: the bucket takes its credentials (/metrics)"

# A fills from the upstream and uploads.
curl -s -D "$T/a.head" -o "$T/a.body" "$A_URL/buildid/$a/debuginfo"
cmp -s "$T/a.body" "$(eval echo \$bin_$a)"
ok $? "A: filled from the upstream, correct bytes"
is "$(requests_to up "$a")" 1 "... one upstream request"
wait_until 20 above uploads A done 1
ok $? "... uploaded to the store (uploads done)"
like "$(curl -s "$A_URL/status")" "id=\"source-object-store\"><td>object store <code>$S3_ENDPOINT/$S3_BUCKET/</code></td><td class=\"ok breaker\">breaker closed</td><td>credentials accepted; uploads: <span id=\"store-waiting\">0</span> waiting, <span id=\"store-running\">0</span> running, 1 done, 0 failed" \
    "... /status: the store, its breaker, credentials and uploads"
is "$(s3_curl GET "$a/debuginfo")" 200 "... the object is in the bucket as ID/debuginfo"
cmp -s "$T/s3.body" "$(eval echo \$bin_$a)"
ok $? "... with the same bytes"

# B: the same id from the store, no upstream request.
curl -s -D "$T/b.head" -o "$T/b.body" "$B_URL/buildid/$a/debuginfo"
cmp -s "$T/b.body" "$T/a.body"
ok $? "B: same id, byte-identical body"
is "$(requests_to up "$a")" 1 "... and 0 upstream requests"
is "$(lookups B hit)" 1 "... a store hit (metrics)"
is "$(grep -i '^x-debuginfod-\|^last-modified\|^etag' "$T/b.head" | tr -d '\r' | sort)" \
    "$(grep -i '^x-debuginfod-\|^last-modified\|^etag' "$T/a.head" | tr -d '\r' | sort)" \
    "... identical X-DEBUGINFOD-*, Last-Modified and ETag headers"
like "$(header X-DEBUGINFOD-FILE "$T/b.head")" "$a" "... X-DEBUGINFOD-FILE replayed from the object's metadata"
is "$(uploads B done)" 0 "... and B does not upload it back"

# A source: keyed by a hash of its path, from the store on B too.
src=/usr/src/dbg/a%20file.c
is "$(code "$A_URL/buildid/$a/source$src")" 200 "A: a source filled"
wait_until 20 above uploads A done 2
ok $? "... and uploaded"
n0=$(requests_to up "$a/source")
curl -s -o "$T/bs.body" "$B_URL/buildid/$a/source$src"
cmp -s "$T/bs.body" "$(eval echo \$bin_$a)"
ok $? "B: the same source, the same bytes"
is "$(requests_to up "$a/source")" "$n0" "... from the store: 0 upstream requests"

# A killed: B keeps serving (its cache, the store, the upstream).
kill -KILL "$A_PID"
wait "$A_PID" 2>/dev/null
is "$(code "$B_URL/buildid/$a/debuginfo")" 200 "A killed: B serves the id"
curl -s -o "$T/bb.body" "$B_URL/buildid/$b/debuginfo"
cmp -s "$T/bb.body" "$(eval echo \$bin_$b)"
ok $? "... and fills a new one, correct bytes"
wait_until 20 above uploads B done 1
ok $? "... which B uploads"

# The store down: no client waits for it.  C's breakers wait an hour of
# the test clock (daemon/clock.h) before a probe: the test moves it.
touch -d @1700000000 "$T/cclock"
# shellcheck disable=SC2086
DBGMIRROR_TEST_CLOCK=$T/cclock start_daemon C $common \
    --breaker-backoff 3600 --breaker-backoff-max 3600 --store "$(s3_store_opt)"
s3_stop_rgw
t0=$(date +%s%N)
curl -s -o "$T/cb.body" --max-time 10 "$C_URL/buildid/$b/debuginfo"
t1=$(date +%s%N)
cmp -s "$T/cb.body" "$(eval echo \$bin_$b)"
ok $? "store down: C fills from the upstream, correct bytes"
grep -q "the store failed (.*Couldn't connect to server): asking the upstreams" "$C_LOG"
ok $? "... at once: a refused connection is no wait (took $(((t1 - t0) / 1000000)) ms)"
is "$(code "$B_URL/buildid/$a/debuginfo" --max-time 10)" 200 "... B serves its cached id"
is "$(code "$B_URL/buildid/$c/debuginfo" --max-time 10)" 200 "... and fills a new one"
wait_until 20 sh -c "curl -s '$C_URL/metrics' | grep -q '^dbgmirror_store_breaker_state{.*state=\"open\"} 1'"
ok $? "... C's store breaker opens (metrics)"
failed=$(( $(num uploads B failed) + $(num uploads B dropped) + $(num uploads C failed) + $(num uploads C dropped) ))
[ "$failed" -ge 2 ]
ok $? "... uploads fail or are dropped, counted ($failed)"
is "$(code "$C_URL/buildid/$e/debuginfo" --max-time 10)" 200 "... an open breaker: straight to the upstream"

# The store back, and its backoff over: the probe closes the breaker,
# and uploads resume.
s3_start_rgw
touch -d @1700003600 "$T/cclock"
wait_until 30 sh -c "curl -s '$C_URL/metrics' | grep -q '^dbgmirror_store_breaker_state{.*state=\"closed\"} 1'"
ok $? "store back: C's breaker closes"
done0=$(uploads C done)
is "$(code "$C_URL/buildid/$f/debuginfo")" 200 "... C fills another id"
wait_until 20 above uploads C done $((done0 + 1))
ok $? "... and uploads it"
is "$(s3_curl HEAD "$f/debuginfo")" 200 "... the object is in the bucket"

# A corrupt object (another build-id) is not served, but deleted.
is "$(s3_curl PUT "$e/debuginfo" -T "$wrong")" 200 "an object with the wrong bytes for $e"
# shellcheck disable=SC2086
start_daemon D $common --store "$(s3_store_opt)"
n0=$(requests_to up "$e")
curl -s -o "$T/de.body" "$D_URL/buildid/$e/debuginfo"
cmp -s "$T/de.body" "$(eval echo \$bin_$e)"
ok $? "D: the corrupt object is not served: the right bytes, from the upstream"
is "$(requests_to up "$e")" $((n0 + 1)) "... which was asked"
is "$(metric dbgmirror_store_corrupt_objects_total "$D_URL")" 1 "... the object counted corrupt"
wait_until 20 sh -c "[ \"\$(curl -s --aws-sigv4 'aws:amz:$S3_REGION:s3' --user '$S3_ACCESS_KEY:$S3_SECRET_KEY' -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' '$S3_ENDPOINT/$S3_BUCKET/$e/debuginfo' | cmp - '$(eval echo \$bin_$e)' && echo same)\" = same ]"
ok $? "... and replaced in the store by the verified upload"

# A multipart upload: parts of 5 MiB for a 6 MiB file.
# shellcheck disable=SC2086
start_daemon M $common --store "$(s3_store_opt)" --store-multipart-size 5M
is "$(code "$M_URL/buildid/$big/debuginfo")" 200 "M: a 6 MiB file filled"
wait_until 30 above uploads M done 1
ok $? "... uploaded in two parts (multipart)"
is "$(s3_curl GET "$big/debuginfo")" 200 "... the object is there"
cmp -s "$T/s3.body" "$bin_big"
ok $? "... with the same bytes"
s3_curl HEAD "$big/debuginfo" >/dev/null
like "$(tr -d '\r' <"$T/s3.body" | grep -i '^etag')" '-2"$' \
    "... made of two parts (its ETag ends in -2)"

# dbgmirror purge ID: also from the store; --keep-store keeps it there.
out=$("$DBGMIRROR" --no-config --cache-dir "$T/B-cache" \
    --store "$(s3_store_opt)" purge "$b" --keep-store)
like "$out" "^purged 1 entries, 0 negative, 0 missing ids$" "purge --keep-store: the cache only"
is "$(s3_curl HEAD "$b/debuginfo")" 200 "... the object stays in the store"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/B-cache" \
    --store "$(s3_store_opt)" purge "$a")
like "$out" "^purged 2 entries, 0 negative, 0 missing ids, 2 store objects$" \
    "purge ID: the cache and the store (debuginfo and source)"
is "$(s3_curl HEAD "$a/debuginfo")" 404 "... the objects are gone from the store"

# An id with more objects than a page of the listing (1000): purge goes
# through every page, in DeleteObjects batches of at most 1000 keys.
many=1111111111111111111111111111111111110009
for i in $(seq 1001); do
	printf 'url = "%s/%s/%s/source/%04d"\nupload-file = "%s"\noutput = "/dev/null"\n' \
	    "$S3_ENDPOINT" "$S3_BUCKET" "$many" "$i" "$T/keys"
done >"$T/many.conf"
is "$(curl -s -Z --parallel-max 8 --max-time 300 -w '%{http_code}\n' \
    --aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -K "$T/many.conf" | sort | uniq -c |
    tr -s ' ')" " 1001 200" "1001 objects put under one id"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/B-cache" \
    --store "$(s3_store_opt)" purge "$many")
like "$out" "^purged 0 entries, 0 negative, 0 missing ids, 1001 store objects$" \
    "purge: every one of them, over two pages of the listing"
is "$(s3_curl HEAD "$many/source/0001")$(s3_curl HEAD "$many/source/1001")" 404404 \
    "... the first and the last are gone"

# Wrong credentials: said at start-up and in /metrics; requests go on.
AWS_SECRET_ACCESS_KEY=wrong-secret start_daemon W $common --store "$(s3_store_opt)"
wait_until 20 grep -q "credentials are refused" "$W_LOG"
ok $? "wrong credentials: said at start-up ($(grep -o 'credentials are refused.*' "$W_LOG" | head -c 80))"
grep -q "wrong-secret" "$W_LOG"
is "$?" 1 "... the secret is not in the log"
is "$(metric dbgmirror_store_credentials_ok "$W_URL")" 0 "... dbgmirror_store_credentials_ok 0"
curl -s "$W_URL/metrics" | grep -q wrong-secret
is "$?" 1 "... nor in /metrics"
is "$(code "$W_URL/buildid/$a/debuginfo" --max-time 10)" 200 "... requests are still answered"

# Virtual-host addressing: the bucket in the host name.
n0=$(requests_to up "$f")
start_daemon V $common --store "s3 http://localhost:$S3_PORT $S3_BUCKET addressing=virtual"
curl -s -o "$T/vf.body" "$V_URL/buildid/$f/debuginfo"
cmp -s "$T/vf.body" "$(eval echo \$bin_$f)"
ok $? "addressing=virtual ($S3_BUCKET.localhost): a store hit, the right bytes"
is "$(requests_to up "$f")" "$n0" "... and no upstream request"

# Sections: a node with a cold cache finds no section object in the
# store but the id's whole debuginfo, and cuts the section from it; its
# upstream is not asked.  An id with no whole file in the store: the
# section's own lookup, then the upstream's /section, as before.
sid=1111111111111111111111111111111111110010
sid2=1111111111111111111111111111111111110011
bin_sid=$(mkbin $sid)
bin_sid2=$(mkbin $sid2)
start_fake up2 "$sid=ok:$bin_sid" "$sid2=ok:$bin_sid2"
is "$(s3_curl PUT "$sid/debuginfo" -T "$bin_sid")" 200 "a whole debuginfo in the store"
start_daemon S --scan-dir none --upstream "$up2_URL" --store "$(s3_store_opt)"
dump_section "$bin_sid" .debug_info "$T/sid.want"
curl -s -o "$T/sid.body" "$S_URL/buildid/$sid/section/.debug_info"
cmp -s "$T/sid.body" "$T/sid.want"
ok $? "S: a section of it, cut from the store's whole file"
is "$(requests_to up2 "$sid")" 0 "... and the upstream not asked"
is "$(lookups S hit)" 1 "... one store hit (the whole file)"
curl -s -o "$T/sid2.body" "$S_URL/buildid/$sid2/section/.debug_info"
is "$(requests_to up2 "$sid2/section/")" 1 "no whole file in the store: the upstream's /section is asked"
is "$(requests_to up2 "$sid2/(debuginfo|executable)")" 0 "... and not its whole file"
is "$(lookups S miss)" 3 "... after the store was asked for the debuginfo, the executable and the section"

# A client's upload (PUT, an upload-scoped token) goes to the store too,
# and another node serves it from there: no upstream has it.
"$DBGMIRROR" --no-config token ci --scopes upload >"$T/ci.out" ||
    bail "dbgmirror token failed"
sed -n 's/^line: //p' "$T/ci.out" >"$T/tokens"
start_daemon U $common --store "$(s3_store_opt)" --token-file "$T/tokens"
is "$(curl -s -o /dev/null -w '%{http_code}' -T "$bin_pu" \
    -H "Authorization: Bearer $(sed -n 's/^token: //p' "$T/ci.out")" \
    "$U_URL/buildid/$pu/debuginfo")" 201 "U: a client uploads a file (PUT)"
wait_until 20 above uploads U done 1
ok $? "... which U uploads to the store"
curl -s -o "$T/vpu.body" "$V_URL/buildid/$pu/debuginfo"
cmp -s "$T/vpu.body" "$bin_pu"
ok $? "... and V serves from there, though no upstream has it"

# A store that hangs (stopped, its socket open): a lookup waits
# store-timeout (2 s) for the head, then the upstream answers.
kill -STOP "$S3_PID_rgw"
t0=$(date +%s%N)
# The client's own deadline (curl's --max-time) is well above the store's.
curl -s -o "$T/dh.body" --max-time 20 "$D_URL/buildid/$h/debuginfo"
t1=$(date +%s%N)
kill -CONT "$S3_PID_rgw"
cmp -s "$T/dh.body" "$(eval echo \$bin_$h)"
ok $? "a hung store: D answers from the upstream"
grep -q "the store failed (.*no answer within 2s): asking the upstreams" "$D_LOG"
ok $? "... once the store's 2 s deadline passed (took $(((t1 - t0) / 1000000)) ms)"

# The upload queue full: a store that hangs (stopped) holds its uploads
# (4 at once) with a queue of 1 behind them, and the rest of six fills is
# dropped and counted; nothing times out meanwhile (a long
# upstream-timeout, a breaker that does not open).  Then the store wakes
# and exactly what was queued is uploaded.  A client's upload meanwhile
# cannot be judged: the store, which may hold the id, does not answer.
rules=()
for i in 1 2 3 4 5 6; do
	eval "bin_q$i=\$(mkbin 11111111111111111111111111111111111100a$i)"
	rules+=("11111111111111111111111111111111111100a$i=ok:$(eval echo \$bin_q$i)")
done
start_fake upq "${rules[@]}"
start_daemon Q --scan-dir none --store "$(s3_store_opt)" --token-file "$T/tokens" \
    --upstream "$upq_URL" --store-upload-queue 1 --upstream-timeout 600 \
    --breaker-failures 1000
wait_until 20 sh -c "curl -s '$Q_URL/metrics' | grep -q '^dbgmirror_store_credentials_ok 1'"
ok $? "Q: the store answers before it is stopped"
kill -STOP "$S3_PID_rgw"
for i in 1 2 3 4 5 6; do
	code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 \
	    "$Q_URL/buildid/11111111111111111111111111111111111100a$i/debuginfo")
	[ "$code" = 200 ] || break
done
is "$code" 200 "a hung store: six fills from the upstream are answered"
bin_qu=$(mkbin 11111111111111111111111111111111111100b1)
is "$(curl -s -o "$T/qu.body" -w '%{http_code}' --max-time 20 -T "$bin_qu" \
    -H "Authorization: Bearer $(sed -n 's/^token: //p' "$T/ci.out")" \
    "$Q_URL/buildid/11111111111111111111111111111111111100b1/debuginfo")" 503 \
    "... a client's upload cannot be judged: 503"
like "$(cat "$T/qu.body")" "cannot be judged now: the object store: " \
    "... naming the store"
queued=$(num uploads Q queued)
dropped=$(num uploads Q dropped)
is "$((queued + dropped))" 6 "... each one queued or dropped ($queued, $dropped)"
[ "$dropped" -ge 1 ] && [ "$queued" -le 5 ]
ok $? "... at most 4 uploading and 1 waiting: the rest dropped, counted in /metrics"
is "$(num uploads Q failed)" 0 "... and none failed: dropped because the queue was full"
kill -CONT "$S3_PID_rgw"
wait_until 60 above uploads Q done "$queued"
ok $? "the store back: the $queued queued uploads are done"
is "$(num uploads Q done)" "$queued" "... and no more"

done_testing
