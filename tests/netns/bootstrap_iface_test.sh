#!/usr/bin/env bash
# Two hosts of one job on this machine: network namespaces joined by a veth pair (10.77.N.1 and
# 10.77.N.2), one cxxrun agent in each (--nnodes 2, 2 ranks each, NCCL = hostnccl), the job's
# NCCLREC_DIR shared as on a cluster's shared file system. samples/bootstrap_iface runs in it:
#   faulty   node 0 exports NCCL_SOCKET_IFNAME=lo, so the unique id names 127.0.0.1 as its
#            bootstrap root; node 1's ranks retry their own loopback while node 0's wait. cxxrun
#            must decide the hang (NCCLREC_INIT_STALL=5) and print bootstrap_stuck with that root
#            and node 0's setting; ncclrec-analyze on the dumps must say the same.
#   healthy  the job finishes; ncclrec-analyze says no_hang.
# Traffic stays inside the two namespaces. Needs root (ip netns); exits 77 (skipped, with the
# reason) without it.
#   bootstrap_iface_test.sh CXXRUN SAMPLE ANALYZE SHIM faulty|healthy
set -uo pipefail
cxxrun=$1 sample=$2 analyze=$3 shim=$4 mode=$5
TAG=ncr SUBNET=77 . "$(dirname "$0")/two_hosts.sh"

agent() {  # agent NAMESPACE NODE_RANK
  ip netns exec "$1" env -u CXXRUN_STORE -u NCCLREC_RUN_ID -u NCCLREC_TIMEOUT -u HOSTNCCL_TIMEOUT \
    -u NCCL_SOCKET_IFNAME -u HOSTNCCL_SOCKET_IFNAME \
    LD_PRELOAD="$shim" NCCLREC_DIR="$work/dumps" NCCLREC_POLL_MS=100 NCCLREC_INIT_STALL=5 \
    CXXRUN_TOKEN="netns-$tag" \
    "$cxxrun" --nnodes 2 --node-rank "$2" --nproc-per-node 2 --master-addr "$net.1" \
    --master-port 29431 --nccl=host --monitor-interval 0.05 --run-id bi "$sample" "$mode" \
    > "$work/node$2.out" 2> "$work/node$2.err"
}
start=$SECONDS
agent "$a" 0 & pa=$!
agent "$b" 1 & pb=$!
wait "$pa"; ea=$?
wait "$pb"; eb=$?
took=$((SECONDS - start))
attempt="$work/dumps/bi/attempt_0"

if [[ $mode == healthy ]]; then
  [[ $ea == 0 && $eb == 0 ]] || fail "healthy run: agents exited $ea and $eb, expected 0"
  "$analyze" --json "$attempt" > "$work/verdict.json" 2> "$work/analyze.err"
  python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["verdict"]["class"] != "no_hang")' \
    "$work/verdict.json" || fail "healthy run: $(head -c 600 "$work/verdict.json")"
  echo "PASS: healthy two-host run finished in $took s with no hang"
  exit 0
fi

[[ $ea == 3 ]] || fail "node 0's cxxrun exited $ea, expected 3 (a hang, with the verdict)"
grep -q "bootstrap_stuck: every member joined" "$work/node0.err" ||
  fail "node 0 printed no bootstrap_stuck verdict"
for want in "the bootstrap cannot connect to the id's root 127.0.0.1:" \
            "NCCL_SOCKET_IFNAME=lo on ranks 0-1" "no NCCL network setting on ranks 2-3"; do
  grep -qF "$want" "$work/node0.err" || fail "the verdict lacks '$want'"
done
"$analyze" --json "$attempt" > "$work/verdict.json" 2> "$work/analyze.err"
python3 - "$work/verdict.json" << 'PY' || fail "offline verdict: $(head -c 800 "$work/verdict.json")"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["class"] == "bootstrap_stuck", v["class"]
assert v["ranks"] == [] and v["waiting"] == [0, 1, 2, 3], (v["ranks"], v["waiting"])
assert v["callsite"]["function"] == "initProcessGroup", v["callsite"]
PY
grep "bootstrap_stuck:" "$work/node0.err" | head -1
echo "PASS: bootstrap_stuck named live by node 0 (cxxrun exit $ea, node 1 $eb) and offline, $took s"
