#!/usr/bin/env bash
# Issue 31, part 3: a network path of one job stops moving data. Two hosts on this machine
# (network namespaces; two_hosts.sh) with their own host names (a UTS namespace each: nodea,
# nodeb), joined by two veth pairs: the management one (cxxrun's store, the agents' reports) and
# the data one (hostnccl's rendezvous and messages, HOSTNCCL_SOCKET_IFNAME), as a cluster keeps its
# control traffic off the data network. One cxxrun agent per host (--nnodes 2, 2 ranks each,
# NCCL = hostnccl, NCCL's profiler plugin on: NCCLREC_COMPLETION=profiler), running all-reduces
# in a loop (tests/scenarios/scenario.cc no_hang):
#   cut      once every rank recorded ops, the data link of nodeb is taken down
#            (ip link set ... down): messages between the hosts stop, every process runs. Node 0
#            must name the connections between the hosts (transport_stalled, "suspect the
#            network between nodea and nodeb") within 15 s of the cut, default settings, and
#            ncclrec-analyze on the directory must say the same.
#   shared   one link carries both (data on the management veth), as a small cluster's one
#            network does (NCCLREC_DIR stays shared: storage on its own network): when it goes down
#            node 0 hears nothing more from node 1's agent. Node 0 must stop waiting for node 1's
#            recordings once that agent has been silent for 3 s, say so in the report, and name
#            the connections between the hosts within 15 s of the cut.
#   local    as cut, but each host keeps its recordings in a directory of its own (NCCLREC_DIR
#            on local disk): node 0 sees only its own ranks waiting for nodeb's, reads nodeb's
#            through its agent once that wait lasts a second (launcher/agent_live.cc), and must
#            name the connections between the hosts within 15 s of the cut.
#   shared_local  as shared, with a dump directory per host: node 0 can neither hear node 1's
#            agent nor read its ranks. Its ranks wait for ranks it cannot see while node 1 is
#            silent: node 0 must call that a hang naming node 1 within 15 s of the cut (not at
#            NCCLREC_TIMEOUT, 60 s), and its verdict must say node 1's ranks have no data.
#   healthy  the same job, short, no cut, a directory per host, and rank 3 (on nodeb) 2 s in host
#            code at step 2 (scenario slow_step): node 0 reads nodeb's ranks while its own wait,
#            then stops; no alarm.
# Traffic stays inside the two namespaces. Needs root (ip netns); exits 77 (skipped, with the
# reason) without it.
#   link_cut_test.sh CXXRUN SCENARIO ANALYZE SHIM cut|shared|local|shared_local|healthy
set -uo pipefail
cxxrun=$1 scenario=$2 analyze=$3 shim=$4 mode=$5
TAG=nlc SUBNET=79 . "$(dirname "$0")/two_hosts.sh"
command -v unshare > /dev/null || { echo "SKIP: no 'unshare' (Debian: util-linux)"; exit 77; }

data="10.80.$(( $$ % 250 + 1 ))"
ip link add "${tag}da" type veth peer name "${tag}db" || fail "cannot make the data veth pair"
ip link set "${tag}da" netns "$a" && ip link set "${tag}db" netns "$b" || fail "cannot move it"
ip -n "$a" addr add "$data.1/24" dev "${tag}da" && ip -n "$b" addr add "$data.2/24" dev "${tag}db"
ip -n "$a" link set "${tag}da" up && ip -n "$b" link set "${tag}db" up || fail "data link not up"

steps=4 run=slow_step
[[ $mode != healthy ]] && steps=100000000 run=no_hang
dumps() {  # dumps HOSTNAME: that host's NCCLREC_DIR
  if [[ $mode == local || $mode == shared_local || $mode == healthy ]]; then echo "$work/dumps-$1"; else echo "$work/dumps"; fi
}
agent() {  # agent NAMESPACE NODE_RANK HOSTNAME DATA_IFACE
  ip netns exec "$1" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$3" \
    env -u CXXRUN_STORE -u NCCLREC_RUN_ID -u NCCLREC_TIMEOUT -u HOSTNCCL_TIMEOUT \
    -u NCCL_SOCKET_IFNAME -u NCCLREC_HOST_STALL -u HOSTNCCL_DROP_LINK \
    LD_PRELOAD="$shim" NCCLREC_DIR="$(dumps "$3")" NCCLREC_SAMPLE_ID_FILE="$work/unique.id" \
    HOSTNCCL_SOCKET_IFNAME="$4" NCCLREC_COMPLETION=profiler CXXRUN_TOKEN="netns-$tag" \
    "$cxxrun" --nnodes 2 --node-rank "$2" --nproc-per-node 2 --master-addr "$net.1" \
    --master-port 29434 --nccl=host --run-id lc "$scenario" "$run" "$steps" 2 3 \
    > "$work/node$2.out" 2> "$work/node$2.err"
}
start=$SECONDS
data_a=${tag}da cut_link=${tag}db
[[ $mode == shared || $mode == shared_local ]] && data_a=${tag}va cut_link=${tag}vb
agent "$a" 0 nodea "$data_a" & pa=$!
agent "$b" 1 nodeb "$cut_link" & pb=$!
attempt="$(dumps nodea)/lc/attempt_0"
attempts="$attempt"
[[ $mode == local || $mode == shared_local ]] && attempts="$attempt $(dumps nodeb)/lc/attempt_0"

if [[ $mode != healthy ]]; then
  # Every rank's newest call is an all-reduce: the communicator exists and the loop runs (a cut
  # during the rendezvous would be a creation hang, another test's matter).
  for _ in $(seq 300); do
    n=0
    for d in $attempts; do
      (( n += $("$analyze" --events --last 1 "$d" 2> /dev/null | grep -c " ncclAllReduce ") ))
    done
    (( n == 4 )) && break
    sleep 0.1
  done
  sleep 0.5
  ip -n "$b" link set "$cut_link" down || fail "cannot take the link down"
  cut=$SECONDS
  echo "link $cut_link of nodeb down $((cut - start)) s after the start"
fi
wait "$pa"; ea=$?
[[ $mode != healthy ]] && after_cut=$((SECONDS - cut))
wait "$pb"; eb=$?
took=$((SECONDS - start))

if [[ $mode == healthy ]]; then
  [[ $ea == 0 && $eb == 0 ]] || fail "healthy run: agents exited $ea and $eb, expected 0"
  ! grep -q "stalled\|hang detected\|hang reported" "$work"/node*.err ||
    fail "healthy run, yet a live detection line: $(grep -h "stalled\|hang" "$work"/node*.err | head -1)"
  grep -q "^cxxrun: ranks here wait for ranks this node's dump directory does not show; reading 1 " \
    "$work/node0.err" || fail "node 0 never read node 1's ranks while rank 3 was in host code"
  echo "PASS: healthy two-host run with transport counters finished in $took s with no alarm"
  exit 0
fi

[[ $ea == 3 ]] || fail "node 0's cxxrun exited $ea, expected 3 (a hang, with the verdict)"
if [[ $mode == shared_local ]]; then
  (( after_cut < 15 )) || fail "node 0 gave its verdict $after_cut s after the cut, not within 15 s"
  grep -q "^cxxrun: hang reported .*; node 1 (host nodeb) not heard from for [0-9.]* s: the network between it and node 0 stopped, or the node did" \
    "$work/node0.err" || fail "node 0 did not call node 1's silence a hang"
  unseen='
import json, sys
j = json.load(open(sys.argv[1]))
assert any("not heard from for" in x for x in j["warnings"]), j["warnings"]
assert [r["rank"] for r in j["ranks"] if "no data from node 1" in (r.get("note") or "")] == [2, 3], j["ranks"]
v = j["verdict"]
# Ranks 0-1 wait for the ranks of the node node 0 cannot hear: that node is named.
assert v["class"] == "node_unreachable" and v["ranks"] == [2, 3], v
assert v["headline"].startswith("node 1 (host nodeb, ranks 2-3) not heard from for "), v["headline"]
assert [n.get("silent_s", 0) > 0 for n in j["nodes"]] == [False, True], j["nodes"]
print("verdict:", v["class"], "-", v["headline"])
'
  python3 -c "$unseen" "$attempt/report.json" || fail "report.json: $(head -c 3000 "$attempt/report.json")"
  grep -q "^node_unreachable: node 1 (host nodeb, ranks 2-3) not heard from for " "$work/node0.err" ||
    fail "node 0 printed no node_unreachable verdict"
  # ncclrec-analyze on node 0's attempt directory reads the same fact from report.json.
  "$analyze" "$attempt" > "$work/again.txt" 2>&1; ev=$?
  [[ $ev == 3 ]] && grep -q "^node_unreachable: node 1 (host nodeb, ranks 2-3)" "$work/again.txt" ||
    fail "ncclrec-analyze $attempt (exit $ev): $(head -3 "$work/again.txt")"
  grep "hang reported" "$work/node0.err"
  echo "PASS: node 0 called the silence of node 1 a hang $after_cut s after the cut (cxxrun exit $ea)"
  exit 0
fi
grep -q "^transport_stalled: data stopped moving between rank " "$work/node0.err" ||
  fail "node 0 printed no transport_stalled verdict"
(( after_cut < 15 )) || fail "node 0 gave its verdict $after_cut s after the cut, not within 15 s"
check='
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["class"] == "transport_stalled", v["class"]
# Both ends of a connection between the hosts: ranks 0-1 on nodea, 2-3 on nodeb.
assert any(r < 2 for r in v["ranks"]) and any(r >= 2 for r in v["ranks"]), v["ranks"]
h = v["headline"]
assert "; suspect the network" in h and "nodea" in h and "nodeb" in h, h
'
python3 -c "$check" "$attempt/report.json" || fail "report.json: $(head -c 1500 "$attempt/report.json")"
if [[ $mode == shared ]]; then
  grep -q "^cxxrun: warning: node 1 (host nodeb): not heard from for [0-9.]* s " "$work/node0.err" ||
    fail "node 0 did not say it stopped waiting for the node it cannot hear"
  silent='
import json, sys
w = json.load(open(sys.argv[1]))["warnings"]
assert any("not heard from for" in x for x in w), w
assert any("recordings are in the dump directory the nodes share" in x for x in w), w
'
  python3 -c "$silent" "$attempt/report.json" || fail "report.json warnings: $(head -c 3000 "$attempt/report.json")"
  grep "not heard from" "$work/node0.err"
fi
# With a directory per host, node 0 keeps what node 1 sent in the attempt's node1 folder.
offline=("$attempt")
[[ $mode == local ]] && offline+=("$attempt/node1")
"$analyze" --json "${offline[@]}" > "$work/verdict.json" 2> "$work/analyze.err"
python3 -c "$check" "$work/verdict.json" || fail "offline verdict: $(head -c 1500 "$work/verdict.json")"
grep "^transport_stalled:" "$work/node0.err" | head -1
python3 -c 'import json,sys; t=json.load(open(sys.argv[1])).get("timeline") or {}; print("timeline:", t)' \
  "$attempt/report.json"
echo "PASS: transport_stalled named by node 0 $after_cut s after the cut (cxxrun exit $ea, node 1 $eb) and offline"
