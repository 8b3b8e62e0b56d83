# tests/integration/s3lib.sh: a real S3 object store for the tests.
#
# Source it after lib.sh.  s3_start brings up a one-node Ceph cluster of
# Debian's own packages under $T/ceph, on 127.0.0.1 only: one monitor
# (msgr2), one OSD whose bluestore is a sparse file, and radosgw (beast)
# on a free port; then an S3 user and a bucket.  The daemons run in the
# foreground (-f) as children of the test, so lib.sh's cleanup stops them
# with the rest.  Ceph is slow to start (seconds), so a script starts it
# once and shares it.  Sets S3_ENDPOINT, S3_BUCKET, S3_ACCESS_KEY,
# S3_SECRET_KEY.

S3_ACCESS_KEY=dbgmirrortestkey
S3_SECRET_KEY=dbgmirrortestsecret0123456789
S3_BUCKET=dbgmirror-test
S3_REGION=us-east-1

# s3_have: the Ceph programs are installed.
s3_have() {
	local p
	for p in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool \
	    monmaptool uuidgen; do
		command -v "$p" >/dev/null || return 1
	done
}

# s3_ceph ARGS...: the ceph CLI against the test cluster.
s3_ceph() {
	ceph -c "$S3_DIR/ceph.conf" --connect-timeout 10 "$@"
}

_s3_conf() {
	cat >"$S3_DIR/ceph.conf" <<EOF
[global]
fsid = $1
mon host = v2:127.0.0.1:$S3_MON_PORT
mon initial members = a
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind msgr2 = true
ms bind ipv6 = false
keyring = $S3_DIR/keyring
run dir = $S3_DIR/run
admin socket = $S3_DIR/run/\$name.asok
log file = $S3_DIR/log/\$name.log
log to stderr = false
crash dir = $S3_DIR/crash
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
mon data avail warn = 2
mon data avail crit = 1
paxos propose interval = 0.1
paxos min wait = 0.01
[mon]
mon data = $S3_DIR/mon.\$id
[osd]
osd data = $S3_DIR/osd.\$id
keyring = $S3_DIR/osd.\$id/keyring
osd objectstore = bluestore
bluestore block create = true
bluestore block size = $((4 << 30))
bluestore fsck on mount = false
osd memory target = 536870912
[client.rgw.a]
keyring = $S3_DIR/rgw.keyring
rgw frontends = beast endpoint=127.0.0.1:$S3_PORT
rgw enable usage log = false
rgw enable lc threads = false
; virtual-host addressing: BUCKET.localhost, which curl resolves to
; loopback itself; requests to 127.0.0.1 stay path-style
rgw dns name = localhost
EOF
}

# _s3_bg LOGNAME CMD...: a Ceph daemon in the foreground, as a child.
_s3_bg() {
	local name=$1
	shift
	"$@" -f >"$S3_DIR/log/$name.out" 2>&1 &
	DAEMON_PIDS="$DAEMON_PIDS $!"
	eval "S3_PID_$name=$!"
}

# s3_start: the cluster, a user and a bucket; bails when it cannot.
s3_start() {
	local fsid secret id uuid t0=$SECONDS
	S3_DIR=$T/ceph
	mkdir -p "$S3_DIR"/run "$S3_DIR"/log "$S3_DIR"/crash "$S3_DIR"/mon.a \
	    "$S3_DIR"/osd.0
	S3_MON_PORT=$(pick_port)
	S3_PORT=$(pick_port)
	S3_ENDPOINT=http://127.0.0.1:$S3_PORT
	fsid=$(uuidgen)
	_s3_conf "$fsid"
	ceph-authtool --create-keyring "$S3_DIR/mon.keyring" --gen-key -n mon. \
	    --cap mon 'allow *' >/dev/null &&
	ceph-authtool --create-keyring "$S3_DIR/keyring" --gen-key \
	    -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
	    --cap mgr 'allow *' >/dev/null &&
	ceph-authtool "$S3_DIR/mon.keyring" --import-keyring "$S3_DIR/keyring" \
	    >/dev/null &&
	monmaptool --create --fsid "$fsid" --addv a \
	    "[v2:127.0.0.1:$S3_MON_PORT]" "$S3_DIR/monmap" >/dev/null &&
	ceph-mon -c "$S3_DIR/ceph.conf" -i a --mkfs --monmap "$S3_DIR/monmap" \
	    --keyring "$S3_DIR/mon.keyring" >"$S3_DIR/log/mkfs.out" 2>&1 ||
	    bail "ceph-mon --mkfs failed: $(tail -3 "$S3_DIR/log/mkfs.out")"
	_s3_bg mon ceph-mon -c "$S3_DIR/ceph.conf" -i a
	wait_until 60 s3_ceph mon stat >/dev/null || bail "no ceph-mon quorum"
	secret=$(ceph-authtool --gen-print-key)
	uuid=$(uuidgen)
	id=$(echo "{\"cephx_secret\": \"$secret\"}" |
	    s3_ceph osd new "$uuid" -i -) || bail "ceph osd new failed"
	ceph-authtool --create-keyring "$S3_DIR/osd.0/keyring" -n "osd.$id" \
	    --add-key "$secret" >/dev/null
	ceph-osd -c "$S3_DIR/ceph.conf" -i "$id" --mkfs --key "$secret" \
	    --osd-uuid "$uuid" \
	    >>"$S3_DIR/log/mkfs.out" 2>&1 ||
	    bail "ceph-osd --mkfs failed: $(tail -3 "$S3_DIR/log/mkfs.out")"
	_s3_bg osd ceph-osd -c "$S3_DIR/ceph.conf" -i "$id"
	wait_until 60 sh -c "ceph -c '$S3_DIR/ceph.conf' osd dump 2>/dev/null |
	    grep -q '^osd\.0 up'" || bail "ceph-osd did not come up"
	s3_ceph auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' \
	    >"$S3_DIR/rgw.keyring" || bail "no radosgw key"
	s3_start_rgw
	radosgw-admin -c "$S3_DIR/ceph.conf" user create --uid=dbgmirror \
	    --display-name=dbgmirror --access-key="$S3_ACCESS_KEY" \
	    --secret-key="$S3_SECRET_KEY" >"$S3_DIR/log/user.out" 2>&1 ||
	    bail "radosgw-admin user create failed"
	is "$(s3_curl PUT "")" 200 "the S3 store is up (radosgw, bucket created)" ||
	    bail "cannot create the bucket"
	diag "ceph + radosgw up on $S3_ENDPOINT in $((SECONDS - t0)) s"
}

# s3_start_rgw: (again) radosgw, until it answers.
s3_start_rgw() {
	_s3_bg rgw radosgw -c "$S3_DIR/ceph.conf" -n client.rgw.a
	wait_until 60 curl -s -o /dev/null "$S3_ENDPOINT/" ||
	    bail "radosgw did not answer on $S3_ENDPOINT"
}

# s3_stop_rgw: stop radosgw (the store is down; the cluster stays).
s3_stop_rgw() {
	kill -TERM "$S3_PID_rgw" 2>/dev/null
	wait_until 20 sh -c "! kill -0 $S3_PID_rgw" || kill -KILL "$S3_PID_rgw"
	wait "$S3_PID_rgw" 2>/dev/null
}

# s3_curl METHOD KEY [CURL ARGS...]: a signed request for object KEY of
# the bucket ("" for the bucket); prints the HTTP status (the body goes
# to $T/s3.body unless the arguments say otherwise).
s3_curl() {
	local method=$1 key=$2 how
	shift 2
	# -X HEAD would wait for the body its Content-Length announces.
	how=(-X "$method")
	[ "$method" = HEAD ] && how=(-I)
	curl -s -o "$T/s3.body" -w '%{http_code}' "${how[@]}" --max-time 120 \
	    --aws-sigv4 "aws:amz:$S3_REGION:s3" \
	    --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
	    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@" \
	    "$S3_ENDPOINT/$S3_BUCKET${key:+/$key}"
}

# s3_store_opt [PREFIX]: the daemon's store option for the test bucket.
s3_store_opt() {
	echo "s3 $S3_ENDPOINT $S3_BUCKET region=$S3_REGION${1:+ prefix=$1}"
}
