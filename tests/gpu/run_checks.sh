#!/usr/bin/env bash
# The GPU checks, run on a machine with an NVIDIA GPU, CUDA driver, PyTorch (with its NCCL) from a
# bundle of binaries built elsewhere (the relocatable tarball unpacked, plus the checks' own
# programs: see scripts/gpu-bundle.sh). Its binaries find their libraries through their RPATH, so
# BUNDLE/lib is kept out of LD_LIBRARY_PATH (its Debian libibverbs must not replace the one
# PyTorch's NCCL loads). Writes
# logs and a summary to OUT_DIR; exits with the number of checks that failed.
#   run_checks.sh BUNDLE OUT_DIR
set -uo pipefail
bundle=$(realpath "$1") out=$2
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
py=$(command -v python3)
site=$("$py" -c 'import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))' 2>/dev/null || true)
nccl_dir=$(dirname "$(find / -name 'libnccl.so.2' -path '*nvidia/nccl*' 2>/dev/null | head -1)")
cudart_dir=$(dirname "$(find / -name 'libcudart.so.13' -path '*nvidia*' 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$nccl_dir:$cudart_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
shim=$bundle/lib/libncclrec.so
analyze=$bundle/bin/ncclrec-analyze
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "nccl: $nccl_dir  cudart: $cudart_dir  python: $py"
} 2>&1 | tee "$out/summary.txt"
step() { echo "== $*" | tee -a "$out/summary.txt"; }
failed=0
verdict() {  # verdict NAME CONDITION-EXIT-CODE
  if [[ $2 == 0 ]]; then echo "PASS $1"; else echo "FAIL $1"; failed=$((failed + 1)); fi |
    tee -a "$out/summary.txt"
}

step "1. hostnccl conformance suite against real NCCL (ctest label gpu)"
HOSTNCCL_CONFORMANCE_WORKER=$bundle/bin/hostnccl_conformance_worker_cuda \
  HOSTNCCL_CONFORMANCE_REAL_NCCL=1 timeout 300 "$bundle/bin/hostnccl_conformance_test" \
  > "$out/conformance.log" 2>&1
rc=$?
grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/conformance.log" | tee -a "$out/summary.txt"
verdict "conformance against real NCCL" $rc

step "2. nccl_loop: cost per call with and without the shim; the black box of a real NCCL run"
for round in 1 2 3; do
  "$bundle/bin/nccl_loop" 20000 2>&1 | sed "s/^/direct  /"
  NCCLREC_DIR=$out/loop NCCLREC_RUN_ID=loop LD_PRELOAD=$shim "$bundle/bin/nccl_loop" 20000 2>&1 | sed "s/^/shim    /"
done 2>&1 | tee -a "$out/summary.txt"
"$analyze" --events --last 6 "$out/loop" 2>&1 | tee -a "$out/summary.txt" | head -20
"$analyze" --events --json --last 400 "$out/loop" > "$out/loop_events.json" 2>&1
"$py" - "$out/loop_events.json" <<'PY' 2>&1 | tee -a "$out/summary.txt"
import json, sys, collections
doc = json.load(open(sys.argv[1]))
evs = [e for r in doc.get("ranks", [doc]) for e in r.get("events", [])] if isinstance(doc, dict) else doc
states = collections.Counter(e.get("state") for e in evs)
print("events read:", len(evs), "states:", dict(states))
print("sample:", json.dumps(evs[-1])[:600] if evs else "none")
gpu = [e for e in evs if e.get("op") == "ncclAllReduce"]
ok = evs and set(states) == {"completed"} and gpu and all(e.get("device") == 0 for e in gpu)
sys.exit(0 if ok else 1)
PY
verdict "real NCCL run recorded: every op completed, device 0" $?

step "3. PyTorch torch.distributed (nccl, world 1) under the shim"
NCCLREC_DIR=$out/torch NCCLREC_RUN_ID=torch LD_PRELOAD=$shim "$py" "$here/torch_check.py" calls > "$out/torch_calls.log" 2>&1
rc=$?
tail -1 "$out/torch_calls.log" | tee -a "$out/summary.txt"
"$analyze" --events "$out/torch" > "$out/torch_events.txt" 2>&1
cut -c1-160 "$out/torch_events.txt" | tee -a "$out/summary.txt"
"$analyze" "$out/torch" 2>&1 | head -1 | tee -a "$out/summary.txt"
for op in ncclCommInitRankConfig ncclAllReduce ncclBcast ncclAllGather; do
  grep -q " $op " "$out/torch_events.txt" || rc=1
done
verdict "PyTorch's NCCL calls recorded (init config, all_reduce, broadcast, all_gather)" $rc
# Python frames (docs/python.md): the call site of dist.all_reduce is the script's own line, past
# torch/distributed's layers.
grep " ncclAllReduce " "$out/torch_events.txt" | grep "torch_check.py:" >/dev/null
verdict "PyTorch's all_reduce carries the script's Python call site (torch_check.py:LINE)" $?

step "4. an all-reduce held on the GPU stays enqueued; the watchdog dumps it (NCCLREC_TIMEOUT=2)"
NCCLREC_DIR=$out/held NCCLREC_RUN_ID=held NCCLREC_TIMEOUT=2 HOLD_SECONDS=6 LD_PRELOAD=$shim \
  "$py" "$here/torch_check.py" held > "$out/torch_held.log" 2>&1
rc=$?
grep -iE "hang|ncclrec|held" "$out/torch_held.log" | head -10 | tee -a "$out/summary.txt"
ls "$out/held" 2>&1 | tee -a "$out/summary.txt"
ls "$out/held"/*.hang.ncclrec.pb > /dev/null 2>&1 || rc=1
verdict "a held all-reduce stays incomplete and the watchdog dumps it" $rc
"$analyze" --events --last 5 "$out/held" 2>&1 | tee -a "$out/summary.txt" | head -20
step "5. ncclrec-trainer on cuda:0 (built here against this PyTorch), without and with the shim"
bash "$here/trainer_check.sh" "$bundle" /tmp/ncclrec-trainer-check 3 400 2>&1 | tee -a "$out/summary.txt"
verdict "ncclrec-trainer runs on the GPU under the shim" "${PIPESTATUS[0]}"
step "6. end markers: cuEventRecord vs a cuStreamWriteValue64 watermark (ns per call; nodes a capture gains)"
"$bundle/bin/marker_cost" 2>&1 | tee -a "$out/summary.txt"
verdict "marker_cost ran (compare the two markers' ns; a marker must add 0 nodes to a graph)" "${PIPESTATUS[0]}"
step "7. nccl_loop per NCCLREC_COMPLETION (host, cuda, auto), alternated with direct: ns added per call"
rc=0
for round in 1 2 3; do
  "$bundle/bin/nccl_loop" 20000 2>&1 | sed "s/^/direct  /"
  for mode in host cuda auto; do
    NCCLREC_DIR=$out/modes/$mode NCCLREC_RUN_ID=$mode NCCLREC_COMPLETION=$mode LD_PRELOAD=$shim \
      "$bundle/bin/nccl_loop" 20000 2>&1 | sed "s/^/$mode    /" || rc=1
  done
done 2>&1 | tee -a "$out/summary.txt"
"$analyze" --events --last 4 "$out/modes/auto" 2>&1 | tee -a "$out/summary.txt" | head -12
verdict "nccl_loop ran under host, cuda and auto completion" $rc
tar czf "$out/dumps.tgz" -C "$out" loop torch held modes 2>/dev/null
rm -rf "$out/loop" "$out/torch" "$out/held" "$out/modes"
echo "$failed check(s) failed" | tee -a "$out/summary.txt"
exit "$failed"
