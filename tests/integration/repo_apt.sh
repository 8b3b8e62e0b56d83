#!/bin/bash
# Remote apt repositories (repo = deb ...): signed repositories built here
# from the fixture programs (dpkg-deb, dpkg-scanpackages, a throwaway key
# from gpg --batch, InRelease by gpg --clearsign) and served by nginx on
# loopback.  One repository maps ids by Build-Ids, one only by Contents.
# debuginfod-find and gdb (dwz included) get byte-identical files from a
# cold cache; a package is downloaded once for 100 concurrent requests; a
# tampered Packages, a bad or expired signature and a package whose
# checksum differs are refused, and nothing of them is served; a package
# download that hangs fails within the stall timeout; a refresh that
# removes a package forgets its ids; a refresh fetches again only the index
# files whose checksum changed, conditionally.  Also: repo-downloads (a second
# download waits for the first; with one long worker both still end), the
# repository breaker on the test clock, a repository with neither
# Build-Ids nor Contents (0 ids), and an ASCII-armored signed-by= key.
# Empty Packages and Contents in every compression (bookworm-security's
# 20-byte Contents-amd64.gz); an InRelease found again from a server with
# no validators parses nothing and makes no new generation; messages: the
# key that signed and the keyring, the URL of an HTTP error, the counts of
# the refreshed line, dbgmirror stats and lookup (why a repository lacks an
# id); check-valid-until=no for snapshots.  Packages served slowly (by a
# fake behind nginx): one decompression pass as a package downloads serves
# the debug file, the dwz alt file it names and a sibling asked for
# meanwhile; a member's last byte goes out before its package has come
# whole, and a package that then breaks or fails its checksum keeps
# nothing (counted, logged).
. "$top_srcdir/tests/integration/lib.sh"

command -v nginx >/dev/null || bail "nginx is not installed"
command -v gpgv >/dev/null || bail "gpgv is not installed"
command -v dpkg-scanpackages >/dev/null || bail "dpkg-dev is not installed"
# nginx's workers run as another user when started as root.
chmod 755 "$T"
build_fixtures
dbg=$FX/usr/lib/debug
client_env
export GNUPGHOME=$T/gnupg
mkdir -m 700 "$GNUPGHOME"
W=$T/www
mkdir -p "$W" "$T/nginx" "$T/pkg"

# Made "in 2020", so that a signature of then can have expired.
gpg --batch --faked-system-time '20200101T000000!' --passphrase '' \
    --quick-gen-key 'dbgmirror test <t@example.org>' \
    ed25519 sign never >/dev/null 2>&1 &&
    gpg --batch --export >"$T/keyring.gpg"
ok $? "a throwaway signing key"

# The debug package of prog_a and prog_b, Debian's way: the debug files
# under .build-id/, the dwz alt file under .dwz/.
mkdir -p "$T/progs/usr/lib/debug/.build-id" "$T/progs/usr/lib/debug/.dwz"
for p in prog_a prog_b; do
	eval "id=\$ID_$p"
	mkdir -p "$T/progs/usr/lib/debug/.build-id/${id:0:2}"
	cp "$dbg/$p.debug" "$T/progs/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
done
cp -a "$dbg/.dwz/." "$T/progs/usr/lib/debug/.dwz/"
apt_deb progs-dbgsym "$T/progs" "$ID_prog_a $ID_prog_b"
# prog_c's, in a package of its own (to be removed later).
mkdir -p "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}"
objcopy --only-keep-debug "$FX/usr/bin/prog_c" \
    "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug"
apt_deb progc-dbgsym "$T/progc" "$ID_prog_c"
# A -dbg package without Build-Ids: only Contents knows its id.
ID_d=d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0
bin_d=$(mkbin $ID_d)
mkdir -p "$T/thing/usr/lib/debug/.build-id/${ID_d:0:2}"
cp "$bin_d" "$T/thing/usr/lib/debug/.build-id/${ID_d:0:2}/${ID_d:2}.debug"
apt_deb thing-dbg "$T/thing" ""

# release DIR: write and sign DIR's Release for what its dists/ now hold.
release() {
	apt_release "$W/$1"
}

apt_repo ids progs-dbgsym progc-dbgsym
# The Contents-only repository: no Build-Ids in its Packages at all.
apt_repo contents thing-dbg
grep -q '^Build-Ids' "$W/contents/dists/stable/main/binary-amd64/Packages"
ok $((!$?)) "the Contents repository's Packages has no Build-Ids"

# A repository whose ids nothing names: no Build-Ids, no Contents.
apt_repo bare thing-dbg
rm "$W/bare/dists/stable/main/Contents-amd64.gz"
release bare

# Empty index files, as archives publish them: bookworm-security's
# main/Contents-amd64.gz is a valid gzip of nothing (20 bytes).  "security"
# has progc-dbgsym with its Build-Ids in main and such a Contents; each
# other component has only an empty Packages and Contents, one per
# compression.  "empty" has nothing indexable at all.
# empty_index DIR COMPONENT EXT: an empty Packages.EXT and Contents-amd64.EXT
# (EXT "" for plain files) in DIR's component.
empty_index() {
	local d=$W/$1/dists/stable/$2 z
	case $3 in
	gz) z="gzip -9n" ;; xz) z=xz ;; bz2) z=bzip2 ;; zst) z="zstd -q" ;;
	*) z=cat ;;
	esac
	mkdir -p "$d/binary-amd64"
	$z </dev/null >"$d/binary-amd64/Packages${3:+.$3}"
	$z </dev/null >"$d/Contents-amd64${3:+.$3}"
}
apt_repo security progc-dbgsym thing-dbg
rm "$W/security/dists/stable/main/binary-amd64/Packages" \
    "$W/security/dists/stable/main/binary-amd64/Packages.gz"
gzip -9n </dev/null >"$W/security/dists/stable/main/Contents-amd64.gz"
is "$(stat -c %s "$W/security/dists/stable/main/Contents-amd64.gz")" 20 \
    "an empty Contents-amd64.gz of 20 bytes, as bookworm-security's"
for c in gz xz bz2 zst plain; do
	empty_index security "$c" "${c#plain}"
done
release security
mkdir -p "$W/empty"
empty_index empty main gz
release empty

# A tampered Packages: changed after Release was signed.
apt_repo tampered progc-dbgsym
xz -dc "$W/tampered/dists/stable/main/binary-amd64/Packages.xz" |
    sed 's/^Size: /Size: 1/' | xz >"$W/tampered/dists/stable/main/binary-amd64/Packages.xz.new"
mv "$W/tampered/dists/stable/main/binary-amd64/Packages.xz.new" \
    "$W/tampered/dists/stable/main/binary-amd64/Packages.xz"
# A Release past its Valid-Until, as a snapshot of a security archive is.
apt_repo stale progc-dbgsym
sed -i 's/^Date: .*/&\nValid-Until: Sat, 01 Jan 2022 00:00:00 UTC/' \
    "$W/stale/dists/stable/Release"
gpg --batch --yes --clearsign -o "$W/stale/dists/stable/InRelease" \
    "$W/stale/dists/stable/Release" 2>/dev/null
# Signed by another key than the keyring's.
mkdir -m 700 "$T/gnupg2"
GNUPGHOME=$T/gnupg2 gpg --batch --passphrase '' --quick-gen-key \
    'other key <o@example.org>' ed25519 sign never >/dev/null 2>&1
other_fpr=$(GNUPGHOME=$T/gnupg2 gpg --with-colons --list-keys 2>/dev/null |
    awk -F: '$1 == "fpr" { print $10; exit }')
apt_repo otherkey progc-dbgsym
GNUPGHOME=$T/gnupg2 gpg --batch --yes --clearsign \
    -o "$W/otherkey/dists/stable/InRelease" \
    "$W/otherkey/dists/stable/Release" 2>/dev/null
ok $? "a repository signed by another key ($other_fpr)"
# A bad signature: InRelease's text changed after signing.
apt_repo badsig progc-dbgsym
sed -i 's/^Suite: stable/Suite: stab1e/' "$W/badsig/dists/stable/InRelease"
# An expired signature: made a year ago, valid for a day.
apt_repo expired progc-dbgsym
gpg --batch --yes --faked-system-time 20200101T000000 --default-sig-expire 1d \
    --clearsign -o "$W/expired/dists/stable/InRelease" \
    "$W/expired/dists/stable/Release" 2>/dev/null
ok $? "an expired signature"
# A package whose bytes are not the ones Packages lists.
apt_repo badsum progc-dbgsym
# (one byte changed in place: the size is still right)
f=$W/badsum/pool/main/progc-dbgsym_1.0_amd64.deb
printf '\377' | dd of="$f" bs=1 seek=$(($(stat -c %s "$f") - 2)) \
    conv=notrunc 2>/dev/null
# A package whose server stops mid-body (nginx hands it to fakeupstream).
apt_repo hang progc-dbgsym
sed -i 's|^Filename: .*|Filename: hang/'"$ID_prog_c"'/debuginfo|' \
    "$W/hang/dists/stable/main/binary-amd64/Packages"
rm "$W/hang/dists/stable/main/binary-amd64/Packages".*
release hang
# A package with prog_a's debug file first and 400 KB after it, sent at
# 10 KB/s (40 s): its member must reach the client long before the end.
mkdir -p "$T/stream/usr/lib/debug/.build-id/${ID_prog_a:0:2}" \
    "$T/stream/usr/share/zz"
cp "$dbg/prog_a.debug" "$T/stream/usr/lib/debug/.build-id/${ID_prog_a:0:2}/${ID_prog_a:2}.debug"
head -c 400000 /dev/urandom >"$T/stream/usr/share/zz/blob"
mkdir -p "$T/stream/DEBIAN"
printf 'Package: stream-dbgsym\nVersion: 1.0\nArchitecture: amd64\nMaintainer: T <t@example.org>\nDescription: f\nBuild-Ids: %s\n' \
    "$ID_prog_a" >"$T/stream/DEBIAN/control"
dpkg-deb --root-owner-group -Zgzip -z1 --build "$T/stream" \
    "$T/pkg/stream-dbgsym_1.0_amd64.deb" >/dev/null
apt_repo stream stream-dbgsym
sed -i 's|^Filename: .*|Filename: trickle/'"$ID_prog_a"'/debuginfo|' \
    "$W/stream/dists/stable/main/binary-amd64/Packages"
rm "$W/stream/dists/stable/main/binary-amd64/Packages".*
release stream
# One pass as a package downloads: prog_a's and prog_b's debug files 150 KB
# apart, the dwz alt file where their .gnu_debugaltlink says, 150 KB after;
# sent at 10 KB/s (30 s).
mkdir -p "$T/one/usr/lib/debug/.dwz/dbgmirror-test" "$T/one/usr/share/zz"
for p in prog_a prog_b; do
	eval "id=\$ID_$p"
	mkdir -p "$T/one/usr/lib/debug/.build-id/${id:0:2}"
	cp "$dbg/$p.debug" "$T/one/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug"
done
cp "$dbg/.dwz/shapes.debug" "$T/one/usr/lib/debug/.dwz/dbgmirror-test/"
# dpkg-deb sorts its members: the blob comes right after the first id's
# (as the ids of the day's build sort).
first=prog_a second=prog_b
[ "$ID_prog_b" \< "$ID_prog_a" ] && first=prog_b second=prog_a
first_debug=$dbg/$first.debug second_debug=$dbg/$second.debug
eval "ID_first=\$ID_$first ID_second=\$ID_$second"
head -c 150000 /dev/urandom >"$T/one/usr/lib/debug/.build-id/${ID_first:0:2}/${ID_first:2}.zz"
head -c 150000 /dev/urandom >"$T/one/usr/share/zz/blob"
mkdir -p "$T/one/DEBIAN"
printf 'Package: one-dbgsym\nVersion: 1.0\nArchitecture: amd64\nMaintainer: T <t@example.org>\nDescription: f\nBuild-Ids: %s %s\n' \
    "$ID_prog_a" "$ID_prog_b" >"$T/one/DEBIAN/control"
dpkg-deb --root-owner-group -Zgzip -z1 --build "$T/one" \
    "$T/pkg/one-dbgsym_1.0_amd64.deb" >/dev/null
apt_repo one one-dbgsym
sed -i 's|^Filename: .*|Filename: trickle/'"$ID_prog_a"'/debuginfo|' \
    "$W/one/dists/stable/main/binary-amd64/Packages"
rm "$W/one/dists/stable/main/binary-amd64/Packages".*
release one
# The same at 100 KB/s (3 s).
apt_repo onefast one-dbgsym
sed -i 's|^Filename: .*|Filename: trickle/'"$ID_prog_a"'/debuginfo|' \
    "$W/onefast/dists/stable/main/binary-amd64/Packages"
rm "$W/onefast/dists/stable/main/binary-amd64/Packages".*
release onefast
# The same package sent at 100 KB/s (4 s), from a repository of its own,
# and a copy of it with one byte of the blob changed, at the same rate,
# from one whose index lists the package's right checksum.
apt_repo fast stream-dbgsym
cp "$T/pkg/stream-dbgsym_1.0_amd64.deb" "$T/pkg/streambad.deb"
printf '\377' | dd of="$T/pkg/streambad.deb" conv=notrunc bs=1 \
    seek=$(($(stat -c %s "$T/pkg/streambad.deb") - 100)) 2>/dev/null
apt_repo streambad stream-dbgsym
sed -i 's|^Filename: .*|Filename: trickle/'"$ID_prog_a"'/debuginfo|' \
    "$W/streambad/dists/stable/main/binary-amd64/Packages"
rm "$W/streambad/dists/stable/main/binary-amd64/Packages".*
release streambad
sed -i 's|^Filename: .*|Filename: trickle/'"$ID_prog_a"'/debuginfo|' \
    "$W/fast/dists/stable/main/binary-amd64/Packages"
rm "$W/fast/dists/stable/main/binary-amd64/Packages".*
release fast
chmod -R a+rX "$W"

start_fake slow "$ID_prog_c=stall:$T/pkg/progc-dbgsym_1.0_amd64.deb"
start_fake trickle --rate 10000 \
    "$ID_prog_a=trickle:$T/pkg/stream-dbgsym_1.0_amd64.deb"
start_fake fast --rate 100000 \
    "$ID_prog_a=trickle:$T/pkg/stream-dbgsym_1.0_amd64.deb"
start_fake trbad --rate 100000 "$ID_prog_a=trickle:$T/pkg/streambad.deb"
start_fake tone --rate 10000 "$ID_prog_a=trickle:$T/pkg/one-dbgsym_1.0_amd64.deb"
start_fake tonef --rate 100000 "$ID_prog_a=trickle:$T/pkg/one-dbgsym_1.0_amd64.deb"
start_nginx "$W" "		location = /e400/dists/stable/InRelease {
			return 400;
		}
		location /noval/ {
			alias $W/ids/;
			etag off;
			if_modified_since off;
		}
		location /hang/hang/ {
			proxy_pass http://127.0.0.1:$slow_PORT/buildid/;
			proxy_buffering off;
		}
		location /stream/trickle/ {
			proxy_pass http://127.0.0.1:$trickle_PORT/buildid/;
			proxy_buffering off;
		}
		location /fast/trickle/ {
			proxy_pass http://127.0.0.1:$fast_PORT/buildid/;
			proxy_buffering off;
		}
		location /streambad/trickle/ {
			proxy_pass http://127.0.0.1:$trbad_PORT/buildid/;
			proxy_buffering off;
		}
		location /one/trickle/ {
			proxy_pass http://127.0.0.1:$tone_PORT/buildid/;
			proxy_buffering off;
		}
		location /onefast/trickle/ {
			proxy_pass http://127.0.0.1:$tonef_PORT/buildid/;
			proxy_buffering off;
		}"
is "$(code "$N/ids/dists/stable/InRelease")" 200 "nginx serves the repositories"

kr=signed-by=$T/keyring.gpg
"$DBGMIRRORD" --no-config --check-config --repo "deb $N/ids stable main $kr" \
    >/dev/null 2>&1
ok $? "--check-config takes a repo line"
"$DBGMIRRORD" --no-config --check-config --repo "deb $N/ids" >"$T/cc.out" 2>&1
ok $((!$?)) "--check-config refuses a deb line without suite and component"
like "$(cat "$T/cc.out")" 'expected deb URL SUITE COMPONENT' "... and says why"

# metric_is NAME SERVER VALUE: SERVER's metric NAME is VALUE.
metric_is() {
	[ "$(metric "$1" "$2")" = "$3" ]
}

# refused NAME N: NAME's log shows N refreshes that failed.
refused() {
	local log
	eval "log=\$${1}_LOG"
	[ "$(grep -c 'refresh failed' "$log")" -ge "$2" ]
}

start_daemon d --scan-dir none --upstream-stall-timeout 2 \
    --repo "deb $N/ids stable main $kr" \
    --repo "deb $N/contents stable main arch=amd64 $kr" \
    --repo "deb $N/tampered stable main $kr" \
    --repo "deb $N/badsig stable main $kr" \
    --repo "deb $N/expired stable main $kr" \
    --repo "deb $N/badsum stable main $kr" \
    --repo "deb $N/hang stable main $kr" \
    --repo "deb $N/otherkey stable main $kr" \
    --repo "deb $N/e400 stable main $kr" \
    --repo "deb $N/stale stable main $kr"
wait_until 60 refreshed d 4
ok $? "the good repositories are refreshed"
wait_until 60 refused d 6
ok $? "the six bad ones are refused"
like "$(cat "$d_LOG")" "stale stable: refresh failed.*Release is past its Valid-Until" \
    "... a Release past its Valid-Until"
like "$(cat "$d_LOG")" "tampered stable: refresh failed.*Packages\.xz: size or SHA256 differs" \
    "... a tampered Packages, by its checksum in Release"
like "$(cat "$d_LOG")" "badsig stable: refresh failed.*BADSIG" "... a bad signature"
like "$(cat "$d_LOG")" "expired stable: refresh failed.*EXPSIG" "... an expired signature"
like "$(cat "$d_LOG")" "otherkey stable: refresh failed, repository refused: signature refused by gpgv: ERRSIG: signed by key $other_fpr, which keyring $T/keyring\.gpg does not hold" \
    "... a signature by another key: which key signed, which keyring lacks it"
like "$(cat "$d_LOG")" "e400 stable: refresh failed, repository refused: GET $N/e400/dists/stable/InRelease: HTTP status 400; next try in" \
    "... an HTTP error, naming the URL fetched"
like "$(cat "$d_LOG")" "ids stable: refreshed: 3 ids in 2 of 2 packages; 2 index files fetched, 0 kept; [0-9.]+ kB; [0-9.]+s" \
    "the refreshed line: ids, packages with ids, files fetched and kept, bytes, time"

check_find d "prog_a's debug file from the Build-Ids repository" \
    "$dbg/prog_a.debug" debuginfo "$ID_prog_a"
is "$(grep -c 'progs-dbgsym_1.0_amd64.deb' "$T/nginx/access.log")" 1 \
    "... one download of its package"
curl -s -D "$T/h" -o /dev/null "$d_URL/buildid/$ID_prog_b/debuginfo"
is "$(header X-DEBUGINFOD-ARCHIVE "$T/h")" "progs-dbgsym_1.0_amd64.deb" \
    "... a sibling from the same package: X-DEBUGINFOD-ARCHIVE"
is "$(header X-DEBUGINFOD-FILE "$T/h")" \
    "/usr/lib/debug/.build-id/${ID_prog_b:0:2}/${ID_prog_b:2}.debug" \
    "... X-DEBUGINFOD-FILE"
is "$(grep -c 'progs-dbgsym_1.0_amd64.deb' "$T/nginx/access.log")" 1 \
    "... still one download"
check_find d "the dwz alt file, found by its own id" \
    "$dbg/.dwz/shapes.debug" debuginfo "$ID_shapes"
check_find d "an id only Contents maps" "$bin_d" debuginfo "$ID_d"
is "$(code "$d_URL/buildid/$ID_prog_c/executable")" 404 \
    "executables are not looked for in debug repositories"
dcfg=(--no-config --cache-dir "$T/d-cache" --repo "deb $N/ids stable main $kr"
    --repo "deb $N/contents stable main arch=amd64 $kr"
    --repo "deb $N/badsig stable main $kr")
out=$("$DBGMIRROR" "${dcfg[@]}" lookup "$ID_prog_c")
like "$out" "repository +$N/ids stable: package pool/main/progc-dbgsym_1\.0_amd64\.deb \(" \
    "dbgmirror lookup names the repository and the package"
unknown=0123456789abcdef0123456789abcdef01234567
out=$("$DBGMIRROR" "${dcfg[@]}" lookup "$unknown")
like "$out" "repo $N/ids stable: not in its index \(3 ids\): an archive keeps the debug packages of its current builds only, and an older build's are not there; add a snapshot" \
    "dbgmirror lookup of an id no repository maps says why"
like "$out" "repo $N/badsig stable: never refreshed" "... for each repository"
cp "$(mkbin "$unknown")" "$T/mod.ko"
like "$("$DBGMIRROR" "${dcfg[@]}" lookup "$T/mod.ko")" \
    "repo $N/ids stable: not in its index: a kernel's vmlinux and modules have no \.build-id paths" \
    "... and for a kernel module, why not that either"
# A member's answer comes before its package is indexed.
for r in ids contents; do
	wait_until 30 metric_is "dbgmirror_repo_downloads_total{repo=\"$N/$r\",suite=\"stable\"}" "$d_URL" 1
done
out=$("$DBGMIRROR" "${dcfg[@]}" stats)
like "$out" "repo: +$N/ids stable: 3 ids in 2 of 2 packages, refreshed " \
    "dbgmirror stats: a repository's ids, packages with ids, last refresh"
like "$out" "packages: +0 indexed \(scan-packages\), 2 downloaded from repositories" \
    "... the packages repositories downloaded apart from scan-packages"
like "$out" "repo: +$N/badsig stable: never refreshed; 1 refreshes failed, the last at .*BADSIG" \
    "... and a refused one's error"

# Neither Build-Ids nor Contents: accepted and refreshed, its ids unknown.
start_daemon e --scan-dir none --repo "deb $N/bare stable main $kr"
wait_until 60 refreshed e 1
ok $? "a repository without Build-Ids or Contents is refreshed"
is "$(code "$e_URL/buildid/$ID_d/debuginfo")" 404 "... its package's id: 404"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/bare\",suite=\"stable\"}" "$e_URL")" 0 \
    "... no ids in /metrics"
like "$("$DBGMIRROR" --no-config --cache-dir "$T/e-cache" \
    --repo "deb $N/bare stable main $kr" stats)" \
    "repo: +$N/bare stable: 0 ids in 0 of 1 packages, refreshed " \
    "... dbgmirror stats: 0 ids"
kill -0 "$e_PID"
ok $? "... and the daemon is still up"

# Empty index files in every compression read as empty: the suite is
# refreshed with the ids its other files name; one with nothing indexable
# is refreshed with 0 ids, not refused.
start_daemon es --scan-dir none \
    --repo "deb $N/security stable main gz xz bz2 zst plain $kr" \
    --repo "deb $N/empty stable main $kr" \
    --repo "deb $N/stale stable main $kr check-valid-until=no"
wait_until 60 sh -c "[ \$(grep -c ': refreshed\|refresh failed' '$es_LOG') -ge 3 ]"
is "$(grep -c 'refresh failed' "$es_LOG")" 0 \
    "empty Packages and Contents (gzip, xz, bzip2, zstd, plain): nothing refused"
like "$(cat "$es_LOG")" "security stable: refreshed: 1 ids in 1 of 2 packages" \
    "... the suite with an empty Contents-amd64.gz is refreshed"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/security\",suite=\"stable\"}" "$es_URL")" 1 \
    "... with the id its Packages names"
check_find es "... served" \
    "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug" \
    debuginfo "$ID_prog_c"
like "$(cat "$es_LOG")" "empty stable: refreshed" \
    "a suite with nothing indexable is refreshed"
like "$(cat "$es_LOG")" "stale stable: refreshed" \
    "check-valid-until=no: a Release past its Valid-Until is taken (snapshots)"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/empty\",suite=\"stable\"}" "$es_URL")" 0 \
    "... with 0 ids"
like "$(grep 'scan finished' "$es_LOG")" \
    "scan finished in [0-9.]+s: the packages the repositories downloaded \($T/es-cache/repo-packages\): 0 read" \
    "the scan of a daemon with only repositories says what it scanned"

# A refresh that finds the InRelease it verified last parses nothing and
# makes no new generation, also from a server that sends no validators
# (as Debian's archive does): /noval/ is the ids repository with nginx's
# ETag and If-Modified-Since off.
start_daemon u --scan-dir none --repo "deb $N/noval stable main $kr"
wait_until 60 refreshed u 1
ul="repo=\"$N/noval\",suite=\"stable\""
is "$(metric "dbgmirror_repo_generation{$ul}" "$u_URL")" 1 \
    "a first refresh: generation 1"
kill -USR1 "$u_PID"
wait_until 60 refreshed u 2
ok $? "a second refresh succeeds"
is "$(grep -c 'GET /noval/dists/stable/InRelease HTTP/1.1" 200' "$T/nginx/access.log")" 2 \
    "... its InRelease fetched whole again (no validators)"
like "$(grep ': refreshed' "$u_LOG" | tail -n 1)" \
    "noval stable: refreshed: unchanged, InRelease as last verified: nothing parsed, 3 ids in 2 of 2 packages kept" \
    "... found unchanged: nothing parsed, the log says so"
is "$(metric "dbgmirror_repo_generation{$ul}" "$u_URL")" 1 "... no new generation"
is "$(metric "dbgmirror_repo_refreshes_unchanged_total{$ul}" "$u_URL")" 1 \
    "... counted as unchanged"
is "$(metric "dbgmirror_repo_refreshes_total{$ul}" "$u_URL")" 2 \
    "... and as a refresh that succeeded"
check_find u "its ids still served" "$dbg/prog_a.debug" debuginfo "$ID_prog_a"
like "$("$DBGMIRROR" --no-config --cache-dir "$T/u-cache" \
    --repo "deb $N/noval stable main $kr" stats)" \
    "repo: +$N/noval stable: 3 ids in 2 of 2 packages, refreshed [0-9T:Z-]+, found unchanged [0-9T:Z-]+" \
    "... dbgmirror stats says when it was found unchanged"
stop_daemon u
start_daemon u --scan-dir none --repo "deb $N/noval stable main $kr"
wait_until 60 refreshed u 1
like "$(grep ': refreshed' "$u_LOG")" "noval stable: refreshed: unchanged" \
    "after a restart, the first refresh finds it unchanged too"
is "$(metric "dbgmirror_repo_generation{$ul}" "$u_URL")" 1 "... generation 1 still"

# signed-by= naming an ASCII-armored key (.asc), as apt takes it: dearmored
# into a binary keyring for gpgv; one whose CRC-24 is wrong is refused.
gpg --batch --armor --export >"$T/keyring.asc"
sed 's/^=....$/=AAAA/' "$T/keyring.asc" >"$T/badcrc.asc"
start_daemon am --scan-dir none --repo "deb $N/ids stable main signed-by=$T/keyring.asc" \
    --repo "deb $N/contents stable main signed-by=$T/badcrc.asc"
wait_until 60 refreshed am 1
ok $? "an armored signed-by= key: the repository is refreshed"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/ids\",suite=\"stable\"}" "$am_URL")" 3 \
    "... its ids indexed"
wait_until 60 refused am 1
like "$(cat "$am_LOG")" "contents stable: refresh failed.*badcrc\.asc: CRC-24 mismatch" \
    "an armored key with a bad CRC-24: refused, and why"
# /status shows both as they are.
st=$(curl -s "$am_URL/status")
like "$st" "<tr class=\"repo\" id=\"repo-0\"><td>repository <code>$N/ids stable</code></td><td class=\"ok state\">refreshed</td><td>last refresh ended [0-9]+s ago; next refresh in [0-9hms ]+; <span class=\"ids\">3</span> build-ids in 2 packages</td>" \
    "/status: the refreshed repository, when, the next refresh, its ids"
like "$st" "<tr class=\"repo\" id=\"repo-1\"><td>repository <code>$N/contents stable</code></td><td class=\"bad state\">refresh failed</td><td>last refresh ended [0-9]+s ago: <span class=\"bad why\">[^<]*CRC-24 mismatch[^<]*</span>" \
    "... the refused one, and why"

# A cold cache: gdb on the dwz-built program, first try.
start_daemon g --scan-dir none --repo "deb $N/ids stable main $kr"
wait_until 60 refreshed g 1
gdb_run g "$FX/usr/bin/prog_a" 'info line perimeter_a' 'ptype struct shape'
like "$OUT" 'Line [0-9]+ of "prog_a\.c"' \
    "gdb, cold cache: perimeter_a resolves to a line"
like "$OUT" 'double length;' "... and struct shape from the dwz alt file"

# Failures: nothing served, nothing cached.
is "$(code "$d_URL/buildid/$ID_prog_c/debuginfo")" 200 \
    "prog_c from the good repository first in order"
start_daemon f --scan-dir none --upstream-stall-timeout 2 --error-ttl 30 \
    --repo "deb $N/badsum stable main $kr"
wait_until 60 refreshed f 1
# Its member may be out and checked before the package's checksum is known
# (a 200, see "The last byte sooner" below), or not (a 502): never wrong
# bytes.
fc=$(curl -s -o "$T/f.out" -w '%{http_code}' "$f_URL/buildid/$ID_prog_c/debuginfo")
{ [ "$fc" = 200 ] &&
    cmp -s "$T/f.out" "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug"; } ||
    [ "$fc" = 502 ]
ok $? "a package whose checksum differs: the member checked on its own ($fc), or 502"
wait_until 30 grep -q "size or SHA256 differs from the repository's index" "$f_LOG"
ok $? "... said in the log"
is "$(metric "dbgmirror_repo_checksum_errors_total{repo=\"$N/badsum\",suite=\"stable\"}" "$f_URL")" 1 \
    "... counted per repository"
is "$(code "$f_URL/buildid/$ID_prog_c/debuginfo")" 502 \
    "... remembered for error-ttl"
is "$(grep -c 'badsum/pool/main/progc' "$T/nginx/access.log")" 1 \
    "... without another download"
is "$(find "$T/f-cache/repo-packages" -type f | wc -l)" 0 \
    "... and nothing kept"

# The repository's breaker: five failed downloads in a row and it is
# skipped (its ids answered at once, with no download) for 30 s of the
# test clock, then asked again.  error-ttl and negative-ttl 0: nothing
# remembered, so each request reaches the repository step.
touch "$T/bclock"
DBGMIRROR_TEST_CLOCK=$T/bclock start_daemon k --scan-dir none \
    --error-ttl 0 --negative-ttl 0 --repo "deb $N/badsum stable main $kr"
wait_until 60 refreshed k 1
kb="dbgmirror_repo_breaker_state{repo=\"$N/badsum\",suite=\"stable\",state=\"open\"}"
before=$(grep -c 'badsum/pool/main/progc' "$T/nginx/access.log")
codes=
for i in 1 2 3 4 5; do
	codes="$codes $(code "$k_URL/buildid/$ID_prog_c/debuginfo")"
done
is "$codes" " 502 502 502 502 502" \
    "breaker: five failed downloads in a row, each a 502"
is "$(metric "$kb" "$k_URL")" 1 "... open: /metrics says so"
like "$(cat "$k_LOG")" 'badsum stable: breaker open' "... and the log"
is "$(code "$k_URL/buildid/$ID_prog_c/debuginfo")" 404 \
    "... the repository skipped: its id answered at once"
is "$(($(grep -c 'badsum/pool/main/progc' "$T/nginx/access.log") - before))" 5 \
    "... without a download"
touch -d "@$(($(stat -c %Y "$T/bclock") + 31))" "$T/bclock"
is "$(metric "$kb" "$k_URL")" 0 "after its back-off the breaker closes"
is "$(code "$k_URL/buildid/$ID_prog_c/debuginfo")" 502 \
    "... and the repository is asked again"
is "$(($(grep -c 'badsum/pool/main/progc' "$T/nginx/access.log") - before))" 6 \
    "... a download"

start_daemon h --scan-dir none --upstream-stall-timeout 2 \
    --repo "deb $N/hang stable main $kr"
wait_until 60 refreshed h 1
t0=$SECONDS
is "$(code "$h_URL/buildid/$ID_prog_c/debuginfo")" 502 \
    "a package download that hangs mid-body: 502"
lt $((SECONDS - t0)) 30
ok $? "... within the stall timeout"

# repo-downloads 1: while the hanging package downloads, a second one waits
# (its request is not refused) and starts when the first ends.  nginx logs
# a request when it ends: the hanging one comes first.
start_daemon q --scan-dir none --upstream-stall-timeout 600 \
    --repo-downloads 1 --repo "deb $N/hang stable main $kr" \
    --repo "deb $N/ids stable main $kr"
wait_until 60 refreshed q 2
curl -s -o /dev/null "$q_URL/buildid/$ID_prog_c/debuginfo" &
wait_until 30 sh -c "[ \"\$(curl -s $q_URL/metrics | awk '\$1 == \"dbgmirror_repo_downloads_running\" { print \$2 }')\" = 1 ]"
ok $? "repo-downloads 1: the hanging download runs"
curl -s -o "$T/q.a" "$q_URL/buildid/$ID_prog_a/debuginfo" &
q_pid=$!
wait_until 30 sh -c "[ \"\$(curl -s $q_URL/metrics | awk '\$1 == \"dbgmirror_repo_downloads_waiting\" { print \$2 }')\" = 1 ]"
ok $? "... a second package's download waits"
is "$(metric dbgmirror_repo_downloads_running "$q_URL")" 1 "... one running"
kill "$slow_PID"
wait "$q_pid"
ok $? "the first ended, the second starts; its request was not refused"
cmp -s "$T/q.a" "$dbg/prog_a.debug"
ok $? "... and gets the right bytes"
is "$(grep -E 'hang/hang/|ids/pool/main/progs-dbgsym' "$T/nginx/access.log" | tail -n 2 | sed 's/.*GET \/\([a-z]*\)\/.*/\1/' | tr '\n' ' ')" "hang ids " \
    "... after the first ended"
# One long worker (workers 1): the extraction of a queued download must not
# hold it while it waits, or the running download is never checked (its
# check is a long job too) and neither ends.
start_daemon w --scan-dir none --workers 1 --repo-downloads 1 \
    --repo "deb $N/fast stable main $kr" --repo "deb $N/ids stable main $kr"
wait_until 60 refreshed w 2
curl -s -m 60 -o "$T/w.a" "$w_URL/buildid/$ID_prog_a/debuginfo" &
wa=$!
wait_until 30 sh -c "[ \"\$(curl -s $w_URL/metrics | awk '\$1 == \"dbgmirror_repo_downloads_running\" { print \$2 }')\" = 1 ]"
curl -s -m 60 -o "$T/w.c" "$w_URL/buildid/$ID_prog_c/debuginfo" &
wc=$!
wait_until 30 sh -c "[ \"\$(curl -s $w_URL/metrics | awk '\$1 == \"dbgmirror_repo_downloads_waiting\" { print \$2 }')\" = 1 ]"
ok $? "one long worker: a download runs, another waits"
wait "$wa" && cmp -s "$T/w.a" "$dbg/prog_a.debug"
ok $? "... the running one ends and is served"
wait "$wc" && cmp -s "$T/w.c" "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug"
ok $? "... then the waiting one"

# The last byte sooner: a member extracted while its package downloads
# reaches the client whole as soon as it is out of the package and has
# passed its own check (its build-id, the ELF check of every fill), while
# the package (400 KB after it, at 10 KB/s) is still coming; what is kept
# waits for the package: a download that then breaks keeps nothing, and
# nothing serves the member any more.
start_daemon s --scan-dir none --upstream-stall-timeout 60 \
    --repo "deb $N/stream stable main $kr"
wait_until 60 refreshed s 1
size=$(stat -c %s "$dbg/prog_a.debug")
# -N: curl writes what it got at once, not when its buffer fills.
curl -N -s -o "$T/s.out" "$s_URL/buildid/$ID_prog_a/debuginfo" &
curl_pid=$!
wait_until 30 sh -c "[ \$(stat -c %s '$T/s.out' 2>/dev/null || echo 0) -ge $size ]"
ok $? "the member's last byte reaches the client while its package downloads"
is "$(find "$T/s-cache/repo-packages" -type f ! -name '.dl-*' | wc -l)" 0 \
    "... before the download ended"
wait "$curl_pid"
ok $? "... its transfer complete"
cmp -s "$T/s.out" "$dbg/prog_a.debug"
ok $? "... the right bytes"
rs="repo=\"$N/stream\",suite=\"stable\""
kill "$trickle_PID"
wait_until 30 grep -q 'stream stable: .*: 1 member(s) had gone out to clients, each checked on its own, before the package failed: none is kept' "$s_LOG"
ok $? "the download broken: the log says the member that went out is not kept"
is "$(metric "dbgmirror_repo_members_revoked_total{$rs}" "$s_URL")" 1 \
    "... counted"
like "$("$DBGMIRROR" --no-config --cache-dir "$T/s-cache" lookup "$ID_prog_a")" \
    'the upstreams failed|nowhere' "... and nothing is cached"
is "$(code "$s_URL/buildid/$ID_prog_a/debuginfo")" 502 \
    "... nor served: the download's failure is"

# The same for a package that comes whole but fails its checksum (one byte
# of the blob after the member changed; its index lists the right one).
start_daemon v --scan-dir none --repo "deb $N/streambad stable main $kr"
wait_until 60 refreshed v 1
vs="repo=\"$N/streambad\",suite=\"stable\""
curl -s -o "$T/v.out" "$v_URL/buildid/$ID_prog_a/debuginfo" &
curl_pid=$!
wait_until 30 sh -c "[ \$(stat -c %s '$T/v.out' 2>/dev/null || echo 0) -ge $size ]"
ok $? "a package that will fail its checksum: its member reaches the client whole"
wait "$curl_pid"
cmp -s "$T/v.out" "$dbg/prog_a.debug"
ok $? "... the right bytes: they passed their own check"
wait_until 30 metric_is "dbgmirror_repo_checksum_errors_total{$vs}" "$v_URL" 1
ok $? "the package then fails its checksum"
wait_until 30 grep -q 'streambad.*1 member(s) had gone out to clients.*none is kept (.*size or SHA256 differs' "$v_LOG"
ok $? "... the log says its member is not kept, and why"
is "$(metric "dbgmirror_repo_members_revoked_total{$vs}" "$v_URL")" 1 \
    "... counted"
like "$("$DBGMIRROR" --no-config --cache-dir "$T/v-cache" lookup "$ID_prog_a")" \
    'the upstreams failed|nowhere' "... nothing is cached"
is "$(find "$T/v-cache/repo-packages" -type f | wc -l)" 0 \
    "... nor the package kept"

# One pass per downloaded package, as gdb meets it: the first debug file,
# then the dwz alt file its .gnu_debugaltlink names (an id no index maps),
# then the second (package-coextract 0: asked for, not claimed), all out
# of the one decompression pass that reads the package as it downloads,
# each whole long before the download ends.
start_daemon o --scan-dir none --package-coextract 0 \
    --upstream-stall-timeout 60 --repo "deb $N/one stable main $kr"
wait_until 60 refreshed o 1
ol="repo=\"$N/one\",suite=\"stable\""
# in_package NAME: how many packages NAME's package cache holds.
in_package() {
	find "$T/$1-cache/repo-packages" -type f ! -name '.dl-*' | wc -l
}
curl -s -m 60 -o "$T/o.a" "$o_URL/buildid/$ID_first/debuginfo"
cmp -s "$T/o.a" "$first_debug"
ok $? "one pass: the first debug file, whole"
curl -s -m 60 -o "$T/o.alt" "$o_URL/buildid/$ID_shapes/debuginfo" &
alt_pid=$!
curl -s -m 60 -o "$T/o.b" "$o_URL/buildid/$ID_second/debuginfo" &
b_pid=$!
wait "$alt_pid" && cmp -s "$T/o.alt" "$dbg/.dwz/shapes.debug"
ok $? "... the dwz alt file it names, asked for next"
wait "$b_pid" && cmp -s "$T/o.b" "$second_debug"
ok $? "... the second, asked for while the pass runs"
is "$(in_package o)" 0 "... all before the download ended"
wait_until 60 metric_is "dbgmirror_repo_downloads_total{$ol}" "$o_URL" 1
ok $? "the download ends"
is "$(metric dbgmirror_package_passes_total "$o_URL")" 1 \
    "... one decompression pass served the three"
is "$(grep -c 'GET /one/trickle/' "$T/nginx/access.log")" 1 "... one download"
for id in "$ID_first" "$ID_shapes" "$ID_second"; do
	like "$("$DBGMIRROR" --no-config --cache-dir "$T/o-cache" lookup "$id")" \
	    'debuginfo +cached' "... $id kept once the package checked out"
done

# A daemon stopped while a pass reads a package still downloading: the
# pass gives up (it would hold the pool's thread), the daemon exits 0.
start_daemon o3 --scan-dir none --repo "deb $N/one stable main $kr"
wait_until 60 refreshed o3 1
curl -s -m 60 -o "$T/o3.a" "$o3_URL/buildid/$ID_first/debuginfo"
cmp -s "$T/o3.a" "$first_debug"
ok $? "a member out while its package downloads"
is "$(in_package o3)" 0 "... the download still running"
stop_daemon o3
is "$STOP_RC" 0 "stopped then, the daemon exits 0"

# A member asked for once the pass has read past it gets a pass of its
# own, over the download that is whole by then and checked: it reads the
# package where the check put it (one long worker: the check runs first),
# long before the package is indexed, which waits for the passes.
start_daemon o2 --scan-dir none --workers 1 --package-coextract 0 \
    --repo "deb $N/onefast stable main $kr"
wait_until 60 refreshed o2 1
curl -s -m 60 -o "$T/o2.b" "$o2_URL/buildid/$ID_second/debuginfo"
cmp -s "$T/o2.b" "$second_debug"
ok $? "the second debug file, the first passed by"
curl -s -m 60 -o "$T/o2.a" "$o2_URL/buildid/$ID_first/debuginfo"
cmp -s "$T/o2.a" "$first_debug"
ok $? "... then the first: a second pass, over the checked package"
wait_until 30 metric_is dbgmirror_package_passes_total "$o2_URL" 2
ok $? "... two passes"

# 100 concurrent requests for ids of one package: one download.
start_daemon c --scan-dir none --repo "deb $N/ids stable main $kr"
wait_until 60 refreshed c 1
before=$(grep -c 'ids/pool/main/progs-dbgsym' "$T/nginx/access.log")
for i in $(seq 1 50); do
	curl -s -o "$T/c.a.$i" "$c_URL/buildid/$ID_prog_a/debuginfo" &
	curl -s -o "$T/c.b.$i" "$c_URL/buildid/$ID_prog_b/debuginfo" &
done
wait_until 120 sh -c "! pgrep -P $$ curl >/dev/null"
bad=0
for i in $(seq 1 50); do
	cmp -s "$T/c.a.$i" "$dbg/prog_a.debug" || bad=$((bad + 1))
	cmp -s "$T/c.b.$i" "$dbg/prog_b.debug" || bad=$((bad + 1))
done
is "$bad" 0 "100 concurrent requests for two ids of one package: all right"
is "$(($(grep -c 'ids/pool/main/progs-dbgsym' "$T/nginx/access.log") - before))" 1 \
    "... one download"

# The package cache keeps repo-cache-size: a package over it evicts the
# oldest, whose members are then downloaded again.
mkdir -p "$T/bigc/usr/share/bigc"
cp -a "$T/progc/usr" "$T/bigc/"
head -c 1500000 /dev/urandom >"$T/bigc/usr/share/bigc/blob"
apt_deb bigc-dbgsym "$T/bigc" "$ID_prog_c"
apt_repo lru progs-dbgsym bigc-dbgsym
chmod -R a+rX "$W"
start_daemon l --scan-dir none --repo-cache-size 1M --package-coextract 0 \
    --repo "deb $N/lru stable main $kr"
wait_until 60 refreshed l 1
is "$(code "$l_URL/buildid/$ID_prog_a/debuginfo")" 200 "LRU: prog_a"
is "$(code "$l_URL/buildid/$ID_prog_c/debuginfo")" 200 \
    "... prog_c, from a package over repo-cache-size with the first"
# Its answer comes before its package is indexed, then the cache trimmed.
wait_until 30 grep -q 'repo package cache: .*progs-dbgsym_1.0_amd64.deb evicted' "$l_LOG"
ok $? "... which evicts the older package"
is "$(code "$l_URL/buildid/$ID_prog_b/debuginfo")" 200 \
    "... prog_b, its sibling, not kept in the pass"
is "$(grep -c 'lru/pool/main/progs-dbgsym' "$T/nginx/access.log")" 2 \
    "... downloaded again"
is "$(grep -c 'lru/pool/main/bigc-dbgsym' "$T/nginx/access.log")" 1 \
    "... while the newest package stayed"

# A refresh that removes a package forgets its ids; one that adds it back
# clears the negative entry the upstreams' 404 left.
start_fake nf
start_daemon r --scan-dir none --upstream "$nf_URL" \
    --repo "deb $N/ids stable main $kr"
wait_until 60 refreshed r 1
kill -USR1 "$r_PID"
wait_until 60 refreshed r 2
like "$(tail -n 3 "$T/nginx/access.log")" '"GET /ids/dists/stable/InRelease HTTP/1.1" 304' \
    "a refresh of an unchanged repository is a conditional request: 304"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/ids\",suite=\"stable\"}" "$r_URL")" 3 \
    "three ids indexed"
apt_repo ids progs-dbgsym
chmod -R a+rX "$W"
kill -USR1 "$r_PID"
wait_until 60 refreshed r 3
ok $? "SIGUSR1 refreshes"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/ids\",suite=\"stable\"}" "$r_URL")" 2 \
    "... two ids left"
is "$(code "$r_URL/buildid/$ID_prog_c/debuginfo")" 404 \
    "the removed package's id: 404"
is "$(code "$r_URL/buildid/$ID_prog_a/debuginfo")" 200 "the others are served"
is "$(code "$r_URL/buildid/$ID_prog_c/debuginfo")" 404 \
    "... still 404: a negative entry now"
wait_until 10 grep -q "$ID_prog_c/debuginfo\" 404 .* NEGATIVE cache" "$r_LOG"
ok $? "... answered from the negative entry"
apt_repo ids progs-dbgsym progc-dbgsym
chmod -R a+rX "$W"
kill -USR1 "$r_PID"
wait_until 60 refreshed r 4
is "$(code "$r_URL/buildid/$ID_prog_c/debuginfo")" 200 \
    "the package back: its id served at once, the negative entry cleared"

# A refresh after Release changed fetches only the index files whose
# checksum changed; the others are read from the copies kept since the
# last refresh.  Two components: main (prog_a, prog_b) and contrib
# (prog_c; later thing-dbg too, with Build-Ids).
# contrib [EXTRA]: contrib's Packages.xz, with thing-dbg when EXTRA.
contrib() {
	local r=$W/multi
	rm -f "$r/pool/contrib/thing-dbg_1.0_amd64.deb"
	[ -z "${1:-}" ] || cp "$T/pkg/thing-dbg_1.0_amd64.deb" "$r/pool/contrib/"
	(cd "$r" && dpkg-scanpackages -m pool/contrib /dev/null 2>/dev/null) |
	    sed "s/^Package: thing-dbg\$/&\nBuild-Ids: $ID_d/" |
	    xz >"$r/dists/stable/contrib/binary-amd64/Packages.xz"
}
mkdir -p "$W/multi/pool/main" "$W/multi/pool/contrib"
for c in main contrib; do
	mkdir -p "$W/multi/dists/stable/$c/binary-amd64"
done
cp "$T/pkg/progs-dbgsym_1.0_amd64.deb" "$W/multi/pool/main/"
cp "$T/pkg/progc-dbgsym_1.0_amd64.deb" "$W/multi/pool/contrib/"
(cd "$W/multi" && dpkg-scanpackages -m pool/main /dev/null 2>/dev/null) |
    xz >"$W/multi/dists/stable/main/binary-amd64/Packages.xz"
contrib
for c in main contrib; do
	printf 'usr/lib/debug/.build-id/xx/none.debug devel/none\n' |
	    gzip -9n >"$W/multi/dists/stable/$c/Contents-amd64.gz"
done
release multi
chmod -R a+rX "$W"
start_daemon m --scan-dir none \
    --repo "deb $N/multi stable main contrib $kr"
wait_until 60 refreshed m 1
ok $? "a repository of two components is refreshed"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/multi\",suite=\"stable\"}" "$m_URL")" 3 \
    "... three ids"
# gets FILE: how many times nginx was asked for multi's FILE, and with what.
gets() {
	grep "GET /multi/dists/stable/$1 " "$T/nginx/access.log" |
	    awk '{ print $9 }' | tr '\n' ' '
}
# Release names a checksum for contrib's Packages.xz that the file on the
# server does not have (a mirror caught mid-sync): it is asked for on its
# last answer's ETag, nginx answers 304, which contradicts the new
# checksum: asked for once more, whole, it is refused by its checksum and
# the refresh fails; the generation stays.
d=$W/multi/dists/stable
sed -i "s/^ [0-9a-f]\{64\}\( [0-9]* contrib\/binary-amd64\/Packages.xz\)\$/ $(printf '0%.0s' $(seq 64))\1/" \
    "$d/Release"
rm -f "$d/InRelease"
gpg --batch --yes --clearsign -o "$d/InRelease" "$d/Release" 2>/dev/null
NREL=$((NREL + 1))
touch -d "@$((EPOCHSECONDS + NREL))" "$d/InRelease"
kill -USR1 "$m_PID"
wait_until 60 refused m 1
ok $? "a Release whose checksum the server's file lacks: refresh failed"
is "$(gets contrib/binary-amd64/Packages.xz)" "200 304 200 " \
    "... contrib's Packages.xz asked for again conditionally (304), then whole"
like "$(cat "$m_LOG")" "multi stable: refresh failed.*contrib/binary-amd64/Packages\.xz: size or SHA256 differs" \
    "... then refused by its checksum"
is "$(gets main/binary-amd64/Packages.xz)" "200 " \
    "... main's Packages.xz, unchanged, not asked for again"
# Now contrib's Packages really changes (thing-dbg added); nothing else.
contrib extra
release multi
chmod -R a+rX "$W"
kill -USR1 "$m_PID"
wait_until 60 refreshed m 2
ok $? "contrib's Packages changed: refreshed"
is "$(gets contrib/binary-amd64/Packages.xz)" "200 304 200 200 " \
    "... contrib's Packages.xz fetched again"
is "$(gets main/binary-amd64/Packages.xz)" "200 " \
    "... main's not: its checksum is the one indexed"
is "$(gets main/Contents-amd64.gz)$(gets contrib/Contents-amd64.gz)" "200 200 " \
    "... nor either Contents"
is "$(metric "dbgmirror_repo_ids{repo=\"$N/multi\",suite=\"stable\"}" "$m_URL")" 4 \
    "... four ids now"
check_find m "the new id" "$bin_d" debuginfo "$ID_d"
check_find m "an id of the component not fetched again" "$dbg/prog_a.debug" \
    debuginfo "$ID_prog_a"
check_find m "an id of the changed component's other package" \
    "$T/progc/usr/lib/debug/.build-id/${ID_prog_c:0:2}/${ID_prog_c:2}.debug" \
    debuginfo "$ID_prog_c"

done_testing
