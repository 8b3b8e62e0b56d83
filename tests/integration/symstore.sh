#!/bin/bash
# tests/integration/symstore.sh: a fleet shares its symbol tables through
# the object store (Ceph radosgw, tests/integration/s3lib.sh).  Node A
# answers /symbolicate for a cold id: it fetches the debuginfo from the
# upstream, builds the table and uploads it as ID/symtab-v1; node B, with
# a cache of its own, answers the same request with A's table: no request
# upstream, no build, a store hit.  A table object that does not verify
# is refused: deleted from the store, counted, and the node builds its
# own, which replaces it (the same bytes: builds are deterministic).
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/s3lib.sh"

s3_have || bail "the Ceph packages are not installed (./quickstart installs them)"

a=3333333333333333333333333333333333330001
c=3333333333333333333333333333333333330002
bin_a=$(mkbin $a)
bin_c=$(mkbin $c)
main_of() { nm "$1" | awk '$3 == "main" { print $1 }'; }

s3_start
start_fake up "$a=ok:$bin_a" "$c=ok:$bin_c"
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
common="--scan-dir none --upstream $up_URL"
# shellcheck disable=SC2086
start_daemon A $common --store "$(s3_store_opt)"
# shellcheck disable=SC2086
start_daemon B $common --store "$(s3_store_opt)"

# body ID ADDR: a one-frame request that waits for its table.
body() {
	printf '{"modules":[{"build_id":"%s"}],"frames":[{"module":0,"addr":"0x%s"}],"options":{"timeout_ms":30000}}' \
	    "$1" "$2"
}
# ask NODE ID ADDR: the answer of NODE.
ask() {
	local url
	eval "url=\$${1}_URL"
	curl -s --max-time 60 --data-binary "$(body "$2" "$3")" "$url/symbolicate"
}
uploads_done() {
	local url
	eval "url=\$${1}_URL"
	metric "dbgmirror_store_uploads_total{store=\"$S3_ENDPOINT/$S3_BUCKET/\",result=\"done\"}" "$url"
}
above() { [ "$($1 "$2")" -ge "$3" ] 2>/dev/null; }
store_hits() {
	local url
	eval "url=\$${1}_URL"
	metric "dbgmirror_store_lookups_total{store=\"$S3_ENDPOINT/$S3_BUCKET/\",result=\"hit\"}" "$url"
}

fa=$(main_of "$bin_a")
like "$(ask A $a "$fa")" '"frames":\[\{"status":"ok".*"function":"main"' \
    "A: a cold id answered: main"
is "$(requests_to up "/buildid/$a/debuginfo")" 1 "... its debuginfo fetched upstream"
is "$(metric 'dbgmirror_symtab_build_seconds_count{result="ok"}' "$A_URL")" 1 \
    "... one build"
wait_until 30 above uploads_done A 2
ok $? "... the debuginfo and the table uploaded"
is "$(s3_curl GET "$a/symtab-v1")" 200 "... the table is in the bucket as ID/symtab-v1"
cp "$T/s3.body" "$T/a.table"

like "$(ask B $a "$fa")" '"frames":\[\{"status":"ok".*"function":"main"' \
    "B: the same request answered"
is "$(requests_to up "/buildid/$a/")" 1 "... with no request upstream"
is "$(metric 'dbgmirror_symtab_build_seconds_count{result="ok"}' "$B_URL")" 0 \
    "... no build on B"
is "$(metric 'dbgmirror_symtab_hits_total{where="store"}' "$B_URL")" 1 \
    "... A's table, from the store"
is "$(store_hits B)" 1 "... a store hit"
is "$(uploads_done B)" 0 "... not uploaded back"

# A damaged table object: refused, deleted, built again and replaced.
fc=$(main_of "$bin_c")
like "$(ask A $c "$fc")" '"status":"ok"' "A: another id answered"
wait_until 30 above uploads_done A 4
ok $? "... its table uploaded"
is "$(s3_curl GET "$c/symtab-v1")" 200 "... and in the bucket"
cp "$T/s3.body" "$T/c.table"
cp "$T/c.table" "$T/c.damaged"
printf 'X' | dd of="$T/c.damaged" bs=1 seek=200 conv=notrunc 2>/dev/null
cmp -s "$T/c.table" "$T/c.damaged"
ok $((! $?)) "a damaged copy of it (one byte changed)"
is "$(s3_curl PUT "$c/symtab-v1" -T "$T/c.damaged")" 200 "... put in its place"
# shellcheck disable=SC2086
start_daemon C $common --store "$(s3_store_opt)"
like "$(ask C $c "$fc")" '"frames":\[\{"status":"ok".*"function":"main"' \
    "C: the id answered all the same"
is "$(metric dbgmirror_store_corrupt_objects_total "$C_URL")" 1 \
    "... the damaged table refused, counted corrupt"
is "$(metric 'dbgmirror_symtab_build_seconds_count{result="ok"}' "$C_URL")" 1 \
    "... C built its own"
is "$(metric 'dbgmirror_symtab_hits_total{where="store"}' "$C_URL")" 0 \
    "... no table taken from the store"
replaced() {
	[ "$(s3_curl GET "$c/symtab-v1")" = 200 ] && cmp -s "$T/s3.body" "$T/c.table"
}
wait_until 30 replaced
ok $? "... and its upload replaced the damaged object: the same bytes as A's"
done_testing
