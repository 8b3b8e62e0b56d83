#!/bin/bash
# Remote Arch repositories (repo = arch URL NAME): a -debug package built
# here (tar --zstd) and a NAME.files database (a gzip tar of desc and files
# entries, as repo-add writes them), served by nginx on loopback.
# debuginfod-find gets the debug file byte for byte from a cold cache; a
# package whose SHA256SUM the database does not match is refused.  With
# key=FILE, NAME.files.sig (gpg --detach-sign) must sign the database: a
# missing or bad signature refuses the repository, with the reason logged.
# A package whose files list a usr/lib/.build-id/ link serves /executable.
# An empty database (a gzip of nothing, a tar of nothing) is 0 ids; one
# found again, byte for byte, from a server without validators is not
# parsed again.
# Redirects of repository fetches follow repo-redirects: same-host by
# default (another loopback port refused, for the database and for a
# package), any, none; never to the daemon's own listener.
. "$top_srcdir/tests/integration/lib.sh"

command -v nginx >/dev/null || bail "nginx is not installed"
command -v gpgv >/dev/null || bail "gpgv is not installed"
# nginx's workers run as another user when started as root.
chmod 755 "$T"
build_fixtures
dbg=$FX/usr/lib/debug
client_env
W=$T/www
mkdir -p "$W/core-debug" "$W/bad" "$T/nginx" "$T/db" \
    "$T/root/usr/lib/debug/.build-id/${ID_prog_b:0:2}"

cp "$dbg/prog_b.debug" \
    "$T/root/usr/lib/debug/.build-id/${ID_prog_b:0:2}/${ID_prog_b:2}.debug"
pkg=progb-debug-1.0-1-x86_64.pkg.tar.zst
tar --zstd -cf "$W/core-debug/$pkg" -C "$T/root" usr
ok $? "tar --zstd builds the Arch package"
cp "$W/core-debug/$pkg" "$W/bad/$pkg"
printf 'X' >>"$W/bad/$pkg"

# files_db DIR NAME: DIR/NAME.files for the package in DIR.
files_db() {
	local d=$T/db/$1/progb-debug-1.0-1 f=$W/$1/$pkg
	mkdir -p "$d"
	printf '%%FILENAME%%\n%s\n\n%%NAME%%\nprogb-debug\n\n%%CSIZE%%\n%s\n\n%%SHA256SUM%%\n%s\n\n' \
	    "$pkg" "$(stat -c %s "$W/core-debug/$pkg")" \
	    "$(sha256sum <"$W/core-debug/$pkg" | cut -d' ' -f1)" >"$d/desc"
	{
		printf '%%FILES%%\nusr/\nusr/lib/\nusr/lib/debug/\n'
		(cd "$T/root" && find usr -type f | sort)
	} >"$d/files"
	tar -czf "$W/$1/$2.files" -C "$T/db/$1" progb-debug-1.0-1/desc \
	    progb-debug-1.0-1/files
}
files_db core-debug core-debug
files_db bad bad
# A binary package with prog_b and its usr/lib/.build-id/ link, as the
# .files database lists them: its executable is served.
bpkg=progb-1.0-1-x86_64.pkg.tar.zst
bdb=$T/db/bin/progb-1.0-1
mkdir -p "$T/binroot/usr/bin" "$T/binroot/usr/lib/.build-id/${ID_prog_b:0:2}" \
    "$W/bin" "$bdb"
cp "$FX/usr/bin/prog_b" "$T/binroot/usr/bin/"
ln -s ../../../../usr/bin/prog_b \
    "$T/binroot/usr/lib/.build-id/${ID_prog_b:0:2}/${ID_prog_b:2}"
tar --zstd -cf "$W/bin/$bpkg" -C "$T/binroot" usr
printf '%%FILENAME%%\n%s\n\n%%CSIZE%%\n%s\n\n%%SHA256SUM%%\n%s\n\n' "$bpkg" \
    "$(stat -c %s "$W/bin/$bpkg")" \
    "$(sha256sum <"$W/bin/$bpkg" | cut -d' ' -f1)" >"$bdb/desc"
{
	printf '%%FILES%%\n'
	(cd "$T/binroot" && find usr | sort)
} >"$bdb/files"
tar -czf "$W/bin/bin.files" -C "$T/db/bin" progb-1.0-1/desc progb-1.0-1/files
# Signed databases: a good signature, none, and one of other bytes.
export GNUPGHOME=$T/gnupg
mkdir -m 700 "$GNUPGHOME"
gpg --batch --passphrase '' --quick-gen-key 'dbgmirror test <t@example.org>' \
    ed25519 sign never >/dev/null 2>&1 &&
    gpg --batch --export >"$T/keyring.gpg"
ok $? "a throwaway signing key"
mkdir -p "$W/signed" "$W/nosig" "$W/badsig"
for r in signed nosig badsig; do
	cp "$W/core-debug/$pkg" "$W/$r/"
	files_db "$r" "$r"
done
gpg --batch --detach-sign -o "$W/signed/signed.files.sig" "$W/signed/signed.files"
# A database of no packages: a gzip of nothing, and a tar of nothing.
mkdir -p "$W/empty" "$W/none"
gzip -n </dev/null >"$W/empty/empty.files"
tar -czf "$W/none/none.files" -T /dev/null
echo other >"$T/other"
gpg --batch --detach-sign -o "$W/badsig/badsig.files.sig" "$T/other"
# Repositories whose fetches redirect (nginx's return 302 below): the
# database to another loopback server, to the daemon's own admin
# endpoint, to another path of the same server; a package elsewhere.
for r in redir-db redir-own redir-same redir-pkg; do
	mkdir -p "$W/$r"
	files_db "$r" "$r"
done
mv "$W/redir-same/redir-same.files" "$W/redir-same/moved.files"
cp "$W/core-debug/$pkg" "$W/redir-same/"
chmod -R a+rX "$W"
start_fake other
own=$(pick_port)

start_nginx "$W" "
	location /noval/ {
		alias $W/core-debug/;
		etag off;
		if_modified_since off;
	}
	location = /redir-db/redir-db.files { return 302 $other_URL/redir-db.files; }
	location = /redir-own/redir-own.files { return 302 http://127.0.0.1:$own/admin/purge?negative; }
	location = /redir-same/redir-same.files { return 302 /redir-same/moved.files; }
	location = /redir-pkg/$pkg { return 302 $other_URL/$pkg; }"


start_daemon d --scan-dir none --repo "arch $N/core-debug core-debug" \
    --repo "arch $N/bad bad"
wait_until 60 refreshed d 2
ok $? "both .files databases are read"
check_find d "prog_b's debug file from an Arch repository" \
    "$dbg/prog_b.debug" debuginfo "$ID_prog_b"
is "$(grep -c "core-debug/$pkg" "$T/nginx/access.log")" 1 "one download"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/d-cache" \
    --repo "arch $N/core-debug core-debug" stats)
like "$out" "repo: +$N/core-debug core-debug: 1 ids in 1 of 1 packages" \
    "dbgmirror stats counts its id"
is "$(code "$d_URL/buildid/$ID_prog_b/executable")" 404 \
    "an id only a debug package names: no executable (404)"

start_daemon x --scan-dir none --repo "arch $N/core-debug core-debug" \
    --repo "arch $N/bin bin" --repo "arch $N/empty empty" \
    --repo "arch $N/none none"
wait_until 60 refreshed x 4
ok $? "a binary package's database is read, and two empty ones"
like "$(cat "$x_LOG")" "empty empty: refreshed: 0 ids in 0 of 0 packages" \
    "... a .files database that is a gzip of nothing: 0 ids, not refused"
like "$(cat "$x_LOG")" "none none: refreshed: 0 ids in 0 of 0 packages" \
    "... one that is a tar of nothing too"
check_find x "prog_b from a package whose usr/lib/.build-id/ link names it" \
    "$FX/usr/bin/prog_b" executable "$ID_prog_b"
check_find x "... its debug file from the other repository" \
    "$dbg/prog_b.debug" debuginfo "$ID_prog_b"

start_daemon b --scan-dir none --repo "arch $N/bad bad"
wait_until 60 grep -q ': refreshed' "$b_LOG"
is "$(code "$b_URL/buildid/$ID_prog_b/debuginfo")" 502 \
    "a package that does not match its SHA256SUM: 502"

key=key=$T/keyring.gpg
start_daemon k --scan-dir none --repo "arch $N/signed signed $key" \
    --repo "arch $N/nosig nosig $key" --repo "arch $N/badsig badsig $key"
wait_until 60 grep -q 'signed signed: refreshed' "$k_LOG"
ok $? "key=: a database signed by the key is read"
check_find k "its id served" "$dbg/prog_b.debug" debuginfo "$ID_prog_b"
wait_until 60 grep -q 'badsig badsig: refresh failed' "$k_LOG"
like "$(cat "$k_LOG")" 'badsig badsig: refresh failed.*BADSIG' \
    "key=: a bad signature refuses the repository, saying why"
wait_until 60 grep -q 'nosig nosig: refresh failed' "$k_LOG"
like "$(cat "$k_LOG")" 'nosig nosig: refresh failed.*\.files\.sig.*404' \
    "key=: a missing signature refuses the repository, saying why"
is "$(grep -c ': refreshed' "$k_LOG")" 1 "... only the good one refreshed"
out=$("$DBGMIRROR" --no-config --cache-dir "$T/k-cache" \
    --repo "arch $N/badsig badsig $key" stats)
like "$out" "repo: +$N/badsig badsig: never refreshed" \
    "... nothing of the refused one indexed"

# The same database again, from a server that sends no validators:
# nothing parsed, no new generation.
start_daemon u --scan-dir none --repo "arch $N/noval core-debug"
wait_until 60 refreshed u 1
kill -USR1 "$u_PID"
wait_until 60 refreshed u 2
ok $? "a second refresh from a server without validators"
like "$(grep ': refreshed' "$u_LOG" | tail -n 1)" \
    "noval core-debug: refreshed: unchanged, the \.files database as last verified: nothing parsed, 1 ids in 1 of 1 packages kept" \
    "... found unchanged"
is "$(metric "dbgmirror_repo_generation{repo=\"$N/noval\",suite=\"core-debug\"}" "$u_URL")" 1 \
    "... no new generation"

# Redirects.  By default (same-host): to another loopback port refused,
# naming the URL; to another path of the same server followed.
start_daemon r1 --scan-dir none --repo "arch $N/redir-db redir-db" \
    --repo "arch $N/redir-same redir-same"
wait_until 60 grep -q 'redir-db redir-db: refresh failed' "$r1_LOG"
like "$(cat "$r1_LOG")" "redir-db redir-db: refresh failed.*redirect to $other_URL/redir-db.files refused \\(repo-redirects\\)" \
    "a database redirected to another loopback port: refused, naming the URL"
is "$(requests_to other .)" 0 "... the other server was never asked"
wait_until 60 grep -q 'redir-same redir-same: refreshed:' "$r1_LOG"
ok $? "a redirect on the same server is followed"
check_find r1 "... and its package served" "$dbg/prog_b.debug" debuginfo \
    "$ID_prog_b"
stop_daemon r1
start_daemon r2 --scan-dir none --repo "arch $N/redir-pkg redir-pkg"
wait_until 60 grep -q 'redir-pkg redir-pkg: refreshed:' "$r2_LOG"
is "$(code "$r2_URL/buildid/$ID_prog_b/debuginfo")" 502 \
    "a package redirected to another loopback port: not fetched (502)"
like "$(cat "$r2_LOG")" "redir-pkg redir-pkg: download failed: .*redirect to $other_URL/$pkg refused" \
    "... the refusal logged with the URL"
is "$(requests_to other .)" 0 "... the other server was never asked"
stop_daemon r2
# repo-redirects = any: followed to the other server, never to this one.
start_daemon r3 --scan-dir none --listen "127.0.0.1:$own" \
    --repo-redirects any --repo "arch $N/redir-db redir-db" \
    --repo "arch $N/redir-own redir-own"
wait_until 60 grep -q 'redir-own redir-own: refresh failed' "$r3_LOG"
like "$(cat "$r3_LOG")" "redir-own redir-own: refresh failed.*redirect to http://127.0.0.1:$own/admin/purge.negative refused \\(repo-redirects\\)" \
    "repo-redirects = any: a redirect to this daemon's own listener refused"
! grep -q '"[A-Z]* /admin/purge' "$r3_LOG"
ok $? "... nothing reached its admin endpoint"
wait_until 60 sh -c "grep -q 'redir-db.files' '$other_LOG'"
ok $? "... while one to another server is followed"
grep -q "warning: repo-redirects = any (command line)" "$r3_LOG"
ok $? "... and the start-up log says repo-redirects = any"
stop_daemon r3
start_daemon r4 --scan-dir none --repo-redirects none \
    --repo "arch $N/redir-same redir-same"
wait_until 60 grep -q 'redir-same redir-same: refresh failed' "$r4_LOG"
like "$(cat "$r4_LOG")" "refresh failed.*redirect to $N/redir-same/moved.files refused" \
    "repo-redirects = none: not even on the same server"
stop_daemon r4

done_testing
