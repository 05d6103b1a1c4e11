#!/usr/bin/env bash
# The demo: installs what it needs, builds, then runs samples/gated_save with 4 ranks on the CPU
# (hostnccl) under libncclrec.so. Rank 0 issues an extra all-reduce in save_checkpoint(); the job
# hangs; each rank's watchdog dumps; the per-rank summary shows where every rank stopped.
#   scripts/demo.sh [--ranks N] [--timeout SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ranks=4
timeout=3
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=${2:?--ranks needs a number}; shift 2 ;;
    --timeout) timeout=${2:?--timeout needs seconds}; shift 2 ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
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
  sample_gated_save ncclrec-analyze

run="$root/ncclrec-demo"
rm -rf "$run"
mkdir -p "$run"
export NCCLREC_DIR="$run/dumps" NCCLREC_TIMEOUT="$timeout" NCCLREC_RUN_ID="demo-$(date +%s)"
export NCCLREC_SAMPLE_ID_FILE="$run/unique.id" WORLD_SIZE="$ranks" HOSTNCCL_TIMEOUT=600
echo
echo "== $ranks ranks of samples/gated_save under libncclrec.so (NCCLREC_TIMEOUT=${timeout}s)"
pids=()
for ((r = 0; r < ranks; r++)); do
  RANK=$r LD_PRELOAD="$build/lib/libncclrec.so" LD_LIBRARY_PATH="$build/hostnccl" \
    "$build/bin/sample_gated_save" 10 5 >"$run/rank$r.log" 2>&1 &
  pids+=($!)
done
trap 'kill -9 "${pids[@]}" 2>/dev/null || true' EXIT

# Every rank dumps once its own op is stuck for NCCLREC_TIMEOUT, or when another rank's trigger
# file says the job is stuck; wait for all of them (or for the job to end, which it should not).
deadline=$((SECONDS + timeout + 30))
while [ $SECONDS -lt $deadline ]; do
  dumps=$(find "$NCCLREC_DIR" -maxdepth 1 \( -name '*.hang.ncclrec.pb' -o -name '*.trigger.ncclrec.pb' \) 2>/dev/null | wc -l)
  alive=0
  for p in "${pids[@]}"; do if kill -0 "$p" 2>/dev/null; then alive=$((alive + 1)); fi; done
  if [ "$dumps" -ge "$ranks" ] || [ "$alive" -eq 0 ]; then break; fi
  sleep 0.5
done
kill -9 "${pids[@]}" 2>/dev/null || true
wait 2>/dev/null || true
trap - EXIT

for ((r = 0; r < ranks; r++)); do
  echo "-- rank $r: $(tail -n 1 "$run/rank$r.log")"
done
echo
echo "== dumps and black boxes in $NCCLREC_DIR:"
ls -1 "$NCCLREC_DIR" | sed 's/^/   /'
echo
echo "== the last 4 NCCL calls of every rank (ncclrec-analyze --events --last 4):"
"$build/bin/ncclrec-analyze" --events --last 4 "$NCCLREC_DIR"
