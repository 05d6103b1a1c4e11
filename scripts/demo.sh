#!/usr/bin/env bash
# The demo: installs what it needs, builds, then runs the reference LibTorch trainer
# (ncclrec-trainer) with 4 ranks on the CPU (hostnccl) under libncclrec.so and cxxrun, with
# --inject=gated_save: rank 0 issues an extra all-reduce in saveCheckpoint(); the job hangs one
# collective later; cxxrun, watching every rank's black box live, sees within about a second that
# no pending op can complete; every rank dumps; cxxrun prints the analyzer's verdict and exits 3.
#   scripts/demo.sh [--ranks N] [--timeout SECONDS]   (--timeout: NCCLREC_TIMEOUT, the fixed rule)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ranks=4
timeout=""
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?--ranks needs a number}; shift 2 ;;
    --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done
case "$ranks" in ''|*[!0-9]*) echo "demo.sh: --ranks must be a number, not '$ranks'" >&2; exit 1 ;; esac

"$root/scripts/install-deps.sh"
build="$root/build"
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; echo "demo.sh: configure failed" >&2; exit 1; }
cmake --build "$build" -j "$(nproc)" --target ncclrec_interpose ncclrec_dump hostnccl \
  ncclrec-trainer ncclrec-analyze cxxrun

run="$root/ncclrec-demo"
rm -rf "$run"
mkdir -p "$run"
cd "$run"
echo
echo "== LD_PRELOAD=libncclrec.so cxxrun --nproc-per-node $ranks --nccl=host ncclrec-trainer \\"
echo "     --steps 60 --eval-every 20 --ckpt-dir ckpt --ckpt-every 20 --inject=gated_save"
if [ -n "$timeout" ]; then
  export NCCLREC_TIMEOUT="$timeout"
  echo "   (NCCLREC_TIMEOUT=${timeout}s: a hang once nothing moved for that long)"
else
  echo "   (default settings: cxxrun watches every rank's black box and decides as soon as no"
  echo "    pending op can complete)"
fi
echo
status=0
LD_PRELOAD="$build/lib/libncclrec.so" \
  "$build/bin/cxxrun" --nproc-per-node "$ranks" --nccl=host \
  "$build/bin/ncclrec-trainer" --steps 60 --eval-every 20 --log-every 10 --ckpt-dir ckpt \
  --ckpt-every 20 --inject=gated_save || status=$?
echo
if [ "$status" -ne 3 ]; then
  echo "demo.sh: expected cxxrun to diagnose a hang (exit 3), got exit $status" >&2
  exit 1
fi
dumps=$(find "$run/ncclrec-dumps" -name report.json -printf '%h\n' | head -n 1)
echo "== every rank's last NCCL calls: $build/bin/ncclrec-analyze --events --last 3 $dumps"
"$build/bin/ncclrec-analyze" --events --last 3 "$dumps"
