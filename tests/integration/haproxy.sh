#!/bin/bash
# Routing by build-id: HAProxy (packaging/haproxy.cfg, addresses replaced)
# in front of three nodes.  A herd of 200 for one cold id lands on one
# node and costs one upstream request; stopping a node moves only its ids.
# Behind the shipped file, a node that trusts HAProxy's X-Forwarded-For
# sees the client's own address: a client sending X-Forwarded-For cannot
# choose its addr= identity.
. "$top_srcdir/tests/integration/lib.sh"

command -v haproxy >/dev/null ||
    bail "haproxy is not installed (./quickstart installs it)"

id=3333333333333333333333333333333333330001
bin=$(mkbin $id 400000)
echo 'int main(void) { return 0; }' >"$T/src.c"
# Each answer of up waits 1 s, so all 200 requests arrive during the fill;
# src answers the sources of every id with one file at once (sources are
# not ELF-checked).
start_fake up --delay 1000 "$id=ok:$bin"
start_fake src "*=ok:$T/src.c"
for n in node1 node2 node3; do
	start_daemon "$n" --scan-dir none --upstream "$up_URL" \
	    --upstream "$src_URL"
done

# Health checks every 200 ms; a node is out after three failures in a
# row, each given 10 s: a node slow under a loaded machine (sanitizers)
# is not taken out, a stopped one (connection refused) is within a second.
checks="check inter 200ms fall 3 rise 1"
port=$(pick_port)
sed -e "s/bind 127.0.0.1:8002/bind 127.0.0.1:$port/" \
    -e "s/check inter 2s fall 2 rise 2/$checks/" \
    -e "s/timeout connect 2s/&\n\ttimeout check 10s/" \
    -e "s/server node1 .*/server node1 127.0.0.1:$node1_PORT/" \
    -e "s/server node2 .*/server node2 127.0.0.1:$node2_PORT/" \
    -e "s/server node3 .*/server node3 127.0.0.1:$node3_PORT/" \
    "$top_srcdir/packaging/haproxy.cfg" >"$T/haproxy.cfg"
haproxy -f "$T/haproxy.cfg" -db >"$T/haproxy.log" 2>&1 &
DAEMON_PIDS="$DAEMON_PIDS $!"
LB=http://127.0.0.1:$port
wait_until 20 sh -c "curl -s -o /dev/null '$LB/buildid/$id/nothing'" ||
    { cat "$T/haproxy.log"; bail "haproxy did not start"; }
is "$(code "$LB/")" 200 "haproxy answers (health checks on / pass)"

herd "$LB/buildid/$id/debuginfo" 200
is "$(sort "$T/herd/codes" | uniq -c | awk '{ print $1 " " $2 }')" "200 200" \
    "a herd of 200 for one cold id through haproxy: 200 answers"
is "$(requests_to up "$id")" 1 "... one upstream request"
same=0
for f in "$T"/herd/*.body; do
	cmp -s "$f" "$bin" && same=$((same + 1))
done
is "$same" 200 "... 200 correct bodies"
nodes=0
for n in node1 node2 node3; do
	eval "log=\$${n}_LOG"
	grep -q "GET /buildid/$id/debuginfo" "$log" && nodes=$((nodes + 1))
done
is "$nodes" 1 "... all on one node"

# node_of ID: the node that answers ID's source.
node_of() {
	curl -s -D - -o /dev/null "$LB/buildid/$1/source/src.c" |
	    tr -d '\r' | sed -n 's/^x-dbgmirror-node: //Ip'
}
ids=$(for i in $(seq 1 40); do printf '44444444444444444444444444444444444%05d\n' "$i"; done)
for i in $ids; do
	echo "$i $(node_of "$i")"
done >"$T/before"
is "$(awk '{ print $2 }' "$T/before" | sort -u | tr '\n' ' ')" "node1 node2 node3 " \
    "40 ids spread over the three nodes"
for i in $ids; do
	echo "$i $(node_of "$i")"
done >"$T/again"
is "$(diff "$T/before" "$T/again")" "" "... each id on the same node every time"

stop_daemon node2
wait_until 20 sh -c "grep -q 'node2 is DOWN' '$T/haproxy.log'"
ok $? "node2 stopped: haproxy's health check takes it out"
for i in $ids; do
	echo "$i $(node_of "$i")"
done >"$T/after"
moved=$(join "$T/before" "$T/after" | awk '$2 != $3' | wc -l)
was2=$(awk '$2 == "node2"' "$T/before" | wc -l)
is "$moved" "$was2" "... only node2's ids moved ($was2 of 40)"
is "$(join "$T/before" "$T/after" | awk '$2 == "node2" && $3 == "node2"' | wc -l)" 0 \
    "... none of them to node2"
is "$(awk '{ print $2 }' "$T/after" | grep -c '^$')" 0 "... every id answered"

# trusted-proxy behind the shipped file.  One node, every server line
# pointing at it, trusts loopback (where HAProxy connects from) and lets
# only 10.9.9.9 read.
missing=3333333333333333333333333333333333330009
start_daemon acl --scan-dir none --trusted-proxy 127.0.0.1 \
    --access "read addr=10.9.9.9/32"
is "$(code "$acl_URL/buildid/$missing/debuginfo" \
    -H "X-Forwarded-For: 10.9.9.9")" 404 \
    "a trusted peer's X-Forwarded-For: 10.9.9.9 meets addr=10.9.9.9/32"
is "$(code "$acl_URL/buildid/$missing/debuginfo")" 403 \
    "... and without it the rule is not met: 403"
port2=$(pick_port)
sed -e "s/bind 127.0.0.1:8002/bind 127.0.0.1:$port2/" \
    -e "s/check inter 2s fall 2 rise 2/$checks/" \
    -e "s/timeout connect 2s/&\n\ttimeout check 10s/" \
    -e "s/server \(node[1-3]\) .*/server \1 127.0.0.1:$acl_PORT/" \
    "$top_srcdir/packaging/haproxy.cfg" >"$T/haproxy-acl.cfg"
haproxy -f "$T/haproxy-acl.cfg" -db >"$T/haproxy-acl.log" 2>&1 &
DAEMON_PIDS="$DAEMON_PIDS $!"
LB2=http://127.0.0.1:$port2
wait_until 20 sh -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$LB2/')\" = 200 ]" ||
    { cat "$T/haproxy-acl.log"; bail "the second haproxy did not start"; }
is "$(code "$LB2/buildid/$missing/debuginfo" -H "X-Forwarded-For: 10.9.9.9")" \
    403 "through the shipped haproxy.cfg, a client's X-Forwarded-For: 10.9.9.9 stays 403"
is "$(code "$LB2/buildid/$missing/debuginfo" -H "X-Forwarded-For: 10.9.9.9" \
    -H "X-Forwarded-For: 10.9.9.9, 127.0.0.1")" 403 \
    "... with two such headers too"
access_log_has acl "\"GET /buildid/$missing/debuginfo\" 403"
ok $? "... refused by the node itself"
stop_daemon acl

done_testing
