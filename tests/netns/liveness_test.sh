#!/usr/bin/env bash
# Issue 31 on two hosts of one job on this machine: network namespaces joined by a veth pair, one
# cxxrun agent in each (--nnodes 2, 2 ranks each, NCCL = hostnccl), NCCLREC_DIR shared as on a
# cluster. tests/scenarios/scenario.cc runs in it:
#   frozen          rank 3 (node 1) stops (SIGSTOP) inside the all-reduce every rank entered
#   frozen_between  rank 3 stops between two all-reduces
#   no_hang         the job finishes: no alarm
# A hang must get rank_not_running naming rank 3 on node 0 (node 1's agent read /proc and sent
# it with its recordings), within 15 s of the stall, default settings; ncclrec-analyze on the
# directory must say the same. Traffic stays inside the two namespaces. Needs root (ip netns);
# exits 77 (skipped, with the reason) without it.
#   liveness_test.sh CXXRUN SCENARIO ANALYZE SHIM frozen|frozen_between|no_hang
set -uo pipefail
cxxrun=$1 scenario=$2 analyze=$3 shim=$4 mode=$5
TAG=ncl SUBNET=78 . "$(dirname "$0")/two_hosts.sh"

agent() {  # agent NAMESPACE NODE_RANK
  ip netns exec "$1" env -u CXXRUN_STORE -u NCCLREC_RUN_ID -u NCCLREC_TIMEOUT -u HOSTNCCL_TIMEOUT \
    -u NCCL_SOCKET_IFNAME -u HOSTNCCL_SOCKET_IFNAME -u NCCLREC_HOST_STALL \
    LD_PRELOAD="$shim" NCCLREC_DIR="$work/dumps" NCCLREC_SAMPLE_ID_FILE="$work/unique.id" \
    CXXRUN_TOKEN="netns-$tag" \
    "$cxxrun" --nnodes 2 --node-rank "$2" --nproc-per-node 2 --master-addr "$net.1" \
    --master-port 29433 --nccl=host --run-id lv "$scenario" "$mode" 4 2 3 \
    > "$work/node$2.out" 2> "$work/node$2.err"
}
start=$SECONDS
agent "$a" 0 & pa=$!
agent "$b" 1 & pb=$!
wait "$pa"; ea=$?
wait "$pb"; eb=$?
took=$((SECONDS - start))
attempt="$work/dumps/lv/attempt_0"

if [[ $mode == no_hang ]]; then
  [[ $ea == 0 && $eb == 0 ]] || fail "healthy run: agents exited $ea and $eb, expected 0"
  ! grep -q "stalled\|hang detected\|hang reported" "$work"/node*.err ||
    fail "healthy run, yet a live detection line: $(grep -h "stalled\|hang" "$work"/node*.err | head -1)"
  "$analyze" --json "$attempt" > "$work/verdict.json" 2> "$work/analyze.err"
  python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["verdict"]["class"] != "no_hang")' \
    "$work/verdict.json" || fail "healthy run: $(head -c 600 "$work/verdict.json")"
  echo "PASS: healthy two-host run finished in $took s with no alarm"
  exit 0
fi

[[ $ea == 3 ]] || fail "node 0's cxxrun exited $ea, expected 3 (a hang, with the verdict)"
grep -q "^rank_not_running: rank 3 stopped running" "$work/node0.err" ||
  fail "node 0 printed no rank_not_running verdict naming rank 3"
python3 - "$attempt/report.json" "$took" << 'PY' || fail "report.json: $(head -c 1200 "$attempt/report.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
took = float(sys.argv[2])
v = doc["verdict"]
assert v["class"] == "rank_not_running" and v["ranks"] == [3], (v["class"], v["ranks"])
states = {r["rank"]: r.get("process_state") for r in doc["ranks"]}
assert states[3] == "stopped", states
# Whichever agent's detector declared it, node 0's report has its timeline ("detected_by" when
# node 1's did: it published its timeline with the hang).
t = doc["timeline"]
after = t["verdict_after_s"]
assert after < 15, after
assert t.get("detected_by", "node 1 (host ") .startswith("node 1 (host "), t
print("verdict %.2f s after the stall began (detected %s); process states %s"
      % (after, "on " + t["detected_by"] if "detected_by" in t else "on node 0", states))
PY
"$analyze" --json "$attempt" > "$work/verdict.json" 2> "$work/analyze.err"
python3 - "$work/verdict.json" << 'PY' || fail "offline verdict: $(head -c 800 "$work/verdict.json")"
import json, sys
v = json.load(open(sys.argv[1]))["verdict"]
assert v["class"] == "rank_not_running" and v["ranks"] == [3], (v["class"], v["ranks"])
PY
grep "^rank_not_running:" "$work/node0.err" | head -1
echo "PASS: rank_not_running named live by node 0 (cxxrun exit $ea, node 1 $eb) and offline, $took s"
