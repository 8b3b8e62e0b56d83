#!/bin/bash
# Remote repositories while they start, as the service manager, an
# operator and a client see them: READY=1 (NOTIFY_SOCKET, systemd's
# Type=notify) only once every first refresh has ended, or after
# repo-ready-timeout, with STATUS= lines saying how far the refreshes got
# meanwhile and a summary at READY; `dbgmirror stats` during a first
# refresh; a refresh that fails is tried again after repo-retry, doubling,
# not one repo-refresh later.  A request during the first refresh waits
# for it and gets its file, not a 404; a 404 while a refresh runs says to
# ask again in 5 s (max-age); a 404's reason says why the repository lacks
# the id.
# nginx sends the repositories' index files slowly (limit_rate): 78 KB at
# 20 KB/s (3 s at least) and at 1 KB/s (a minute at least).
. "$top_srcdir/tests/integration/lib.sh"

command -v nginx >/dev/null || bail "nginx is not installed"
command -v gpgv >/dev/null || bail "gpgv is not installed"
command -v dpkg-deb >/dev/null || bail "dpkg-deb is not installed"
# nginx's workers run as another user when started as root.
chmod 755 "$T"
W=$T/www
export GNUPGHOME=$T/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg --batch --passphrase '' --quick-gen-key 'dbgmirror test <t@example.org>' \
    ed25519 sign never >/dev/null 2>&1 &&
    gpg --batch --export >"$T/keyring.gpg"
ok $? "a throwaway signing key"
kr=signed-by=$T/keyring.gpg
ID1=1111111111111111111111111111111111111111
ID2=2222222222222222222222222222222222222222

# slow_repo NAME: an apt repository at $W/NAME (suite stable, component
# main): a Packages naming x-dbgsym with Build-Ids $ID1, a plain
# Contents-amd64 of 78 KB naming $ID2 in it, then other files.
slow_repo() {
	local d=$W/$1/dists/stable/main
	mkdir -p "$d/binary-amd64"
	printf 'Package: x-dbgsym\nArchitecture: amd64\nFilename: pool/x.deb\nSize: 1\nSHA256: %064d\nBuild-Ids: %s\n' \
	    0 "$ID1" >"$d/binary-amd64/Packages"
	{
		printf 'usr/lib/debug/.build-id/%s/%s.debug devel/x-dbgsym\n' \
		    "${ID2:0:2}" "${ID2:2}"
		seq -f 'usr/share/doc/x-dbgsym/file%06g devel/x-dbgsym' 1 1600
	} >"$d/Contents-amd64"
	apt_release "$W/$1"
}
slow_repo slow
slow_repo stuck
# "slowpkg": the same, with a real package of a debug file of id $ID3.
ID3=3333333333333333333333333333333333333333
mkdir -p "$T/x3/usr/lib/debug/.build-id/${ID3:0:2}" "$T/x3/DEBIAN"
bin3=$(mkbin "$ID3")
cp "$bin3" "$T/x3/usr/lib/debug/.build-id/${ID3:0:2}/${ID3:2}.debug"
printf 'Package: x3-dbgsym\nVersion: 1.0\nArchitecture: amd64\nMaintainer: T <t@example.org>\nDescription: f\n' \
    >"$T/x3/DEBIAN/control"
mkdir -p "$W/slowpkg/pool"
dpkg-deb --root-owner-group --build "$T/x3" "$W/slowpkg/pool/x3.deb" >/dev/null
slow_repo slowpkg
printf 'Package: x3-dbgsym\nArchitecture: amd64\nFilename: pool/x3.deb\nSize: %s\nSHA256: %s\nBuild-Ids: %s\n' \
    "$(stat -c %s "$W/slowpkg/pool/x3.deb")" \
    "$(sha256sum <"$W/slowpkg/pool/x3.deb" | cut -d' ' -f1)" "$ID3" \
    >"$W/slowpkg/dists/stable/main/binary-amd64/Packages"
apt_release "$W/slowpkg"
chmod -R a+rX "$W"
start_nginx "$W" "		location /slow/ { limit_rate 20k; }
		location /slowpkg/dists/ { limit_rate 20k; }
		location /stuck/ { limit_rate 1k; }"
lt 60000 "$(stat -c %s "$W/slow/dists/stable/main/Contents-amd64")"
ok $? "a Contents of more than 60 KB (3 s at 20 KB/s, a minute at 1 KB/s)"

# READY=1 once the first refresh has ended; STATUS= before says how far.
notify_listen "$T/a.sock" "$T/a.got"
NOTIFY_SOCKET=$T/a.sock start_daemon a --scan-dir none \
    --repo "deb $N/slow stable main $kr"
# seen FILE REGEX: a datagram matching REGEX has come (bounded wait).
seen() {
	wait_until 60 grep -Eq -- "$2" "$1"
}
seen "$T/a.got" '^READY=1'
ok $? "READY=1 comes"
refreshed a 1
ok $? "... after the first refresh ended (it takes 3 s at least)"
grep -Eq '^STATUS=starting: refreshing repositories, 0 of 1 done: ' "$T/a.got"
ok $? "STATUS= while the first refresh ran: how many were done"
grep -Eq '^STATUS=starting: .*: fetching main/Contents-amd64' "$T/a.got"
ok $? "... and which file it fetched"
like "$(grep '^READY=1' "$T/a.got")" \
    '^READY=1 \| STATUS=serving on 1 address; repositories: 1 of 1 refreshed \(2 ids\)$' \
    "... with a summary of the refreshes"
first_status=$(grep -n '^STATUS=starting' "$T/a.got" | head -n 1 | cut -d: -f1)
ready=$(grep -n '^READY=1' "$T/a.got" | head -n 1 | cut -d: -f1)
lt "$first_status" "$ready"
ok $? "... after the STATUS= lines of the refresh"
is "$(grep -c '^READY=1' "$T/a.got")" 1 "... once"
is "$(code "$a_URL/buildid/$ID1/debuginfo")" 502 \
    "once ready, its ids are known (a download, here of no package: 502)"

# A request during the first refresh (3 s at least) waits for it: the
# file, not a 404 that clients would keep for ten minutes.  An id no
# repository maps waits too, then is a 404 that says why.
start_daemon p --scan-dir none --repo "deb $N/slowpkg stable main $kr"
refreshed p 1
ok $((!$?)) "a request made during the first refresh"
unknown=0123456789abcdef0123456789abcdef01234567
curl -s -o "$T/p.unknown" -D "$T/p.uh" --max-time 60 \
    "$p_URL/buildid/$unknown/debuginfo" &
unknown_pid=$!
is "$(curl -s -o "$T/p.out" -w '%{http_code}' --max-time 60 "$p_URL/buildid/$ID3/debuginfo")" 200 \
    "... gets its file once the refresh brought its id"
cmp -s "$T/p.out" "$bin3"
ok $? "... the right bytes"
wait "$unknown_pid"
like "$(head -n 1 "$T/p.uh")" ' 404 ' "an id the refresh did not bring: 404"
wait_until 10 grep -q "GET /buildid/$unknown" "$p_LOG"
is "$(grep -e 'every first refresh has ended' -e "GET /buildid/$unknown" "$p_LOG" |
    sed 's/.*every first refresh.*/ended/; s/.*GET .*/answered/' | tr '\n' ' ')" \
    "ended answered " "... answered after the first refresh ended"
like "$(cat "$T/p.unknown")" \
    "^not found; repo $N/slowpkg stable: not in its index \([0-9]+ ids\): an archive keeps the debug packages of its current builds only" \
    "... its reason says why the repository lacks it"
is "$(header Cache-Control "$T/p.uh")" "" "... no max-age once no refresh runs"
# A later refresh that fetches Contents again (3 s at least): a 404 meanwhile
# tells clients to ask again in 5 s.
printf 'usr/share/doc/x3-dbgsym/more devel/x3-dbgsym\n' \
    >>"$W/slowpkg/dists/stable/main/Contents-amd64"
apt_release "$W/slowpkg"
chmod -R a+rX "$W"
kill -USR1 "$p_PID"
wait_until 30 sh -c "[ \$(grep -c 'GET /slowpkg/dists/stable/InRelease HTTP/1.1\" 200' '$T/nginx/access.log') -ge 2 ]"
curl -s -o "$T/p.again" -D "$T/p.ah" "$p_URL/buildid/$unknown/debuginfo"
refreshed p 2
ok $((!$?)) "a 404 while a refresh runs"
is "$(header Cache-Control "$T/p.ah")" "max-age=5" "... carries max-age=5"
like "$(cat "$T/p.again")" "^not found; repo $N/slowpkg stable: not in its index" \
    "... and its reason"

# repo-ready-timeout: READY=1 without the refresh that takes a minute.
notify_listen "$T/b.sock" "$T/b.got"
NOTIFY_SOCKET=$T/b.sock start_daemon b --scan-dir none \
    --repo-ready-timeout 2 --repo "deb $N/stuck stable main $kr"
seen "$T/b.got" '^READY=1'
ok $? "repo-ready-timeout 2: READY=1 comes"
refreshed b 1
ok $((!$?)) "... before the refresh ended"
like "$(grep '^READY=1' "$T/b.got")" \
    'STATUS=serving on 1 address; repositories: 0 of 1 refreshed \(0 ids\); 1 still in a first refresh$' \
    "... saying so"
like "$(cat "$b_LOG")" \
    'repositories: 1 of 1 have not ended their first refresh after 2s \(repo-ready-timeout\)' \
    "... and so does the log"
bcli=(--no-config --cache-dir "$T/b-cache" --repo "deb $N/stuck stable main $kr")
like "$("$DBGMIRROR" "${bcli[@]}" stats)" \
    "repo: +$N/stuck stable: first refresh running since [0-9T:Z-]+$" \
    "dbgmirror stats during a first refresh: running since when"
stop_daemon b
is "$STOP_RC" 0 "a daemon stopped during a first refresh exits 0"
like "$("$DBGMIRROR" "${bcli[@]}" stats)" \
    "repo: +$N/stuck stable: first refresh began [0-9T:Z-]+ and did not end \(no daemon runs\)" \
    "... and stats says it did not end"

# A refresh that fails is tried again after repo-retry (1 s), then 2 s,
# 4 s...: the repository that appears meanwhile is refreshed without a
# signal (repo-refresh is an hour).
start_daemon c --scan-dir none --repo-retry 1 --repo-ready-timeout 0 \
    --repo "deb $N/late stable main $kr"
failures() {
	[ "$(grep -c 'late stable: refresh failed' "$c_LOG")" -ge "$1" ]
}
wait_until 60 failures 2
ok $? "a failed refresh is tried again"
like "$(grep 'late stable: refresh failed' "$c_LOG" | head -n 1)" \
    "refresh failed, repository refused: GET $N/late/dists/stable/Release: HTTP status 404 \(and no InRelease: 404\); next try in 1s, at [0-9T:Z-]+$" \
    "... its log line names the URL, the wait and the time of the next try"
is "$(sed -n 's/.*late stable: refresh failed.*next try in \([0-9]*\)s.*/\1/p' "$c_LOG" | head -n 2 | tr '\n' ' ')" \
    "1 2 " "... the wait doubles"
slow_repo late
chmod -R a+rX "$W"
wait_until 60 refreshed c 1
ok $? "the repository once there is refreshed by a retry"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/late\",suite=\"stable\"}" "$c_URL")" 2 \
    "... its ids indexed"

done_testing
