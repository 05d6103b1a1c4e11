#!/usr/bin/env bash
# Runs random NCCL programs with one injected fault each (ncclrec_faultgen) under cxxrun +
# libncclrec.so + hostnccl, compares ncclrec-analyze's verdict with the injection, and prints a
# confusion table, the accuracies and every failure with a replay command (docs/accuracy.md).
#   run.sh --count N --seed S [--jobs J] [--keep DIR] [--fault KIND] [--build DIR]
#          [--results FILE]
#   --count N    programs, seeds S, S+1, ..., S+N-1 (default 1)
#   --seed S     the first seed (default 1)
#   --jobs J     programs at once (default 1; each runs 2 to 8 ranks)
#   --keep DIR   keep each program's dumps, logs and verdict in DIR/seed-S (default: failures are
#                not kept either)
#   --fault KIND every program gets this fault kind instead of its seed's (none: healthy)
#   --build DIR  where ncclrec was built (default: build/ of this checkout); the binaries can also
#                be named with FAULTGEN_BIN, CXXRUN_BIN, NCCLREC_SHIM, ANALYZE_BIN
#   --results F  also write one JSON line per program to F
# Exit status: 0 every verdict as expected; 1 some verdict was not (or a program could not be
# run); 2 bad usage or a missing binary.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
usage() { sed -n '5,19p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
count=1 seed=1 jobs=1 keep="" fault="" build="$root/build" results="" one=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --count|--seed|--jobs|--keep|--fault|--build|--results|--one)
      [[ $# -ge 2 ]] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
      declare "${1#--}=$2"; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in count seed jobs; do
  [[ ${!n} =~ ^[0-9]+$ ]] || { echo "run.sh: --$n must be a number (got '${!n}')" >&2; exit 2; }
done
[[ $count -ge 1 && $jobs -ge 1 ]] || { echo "run.sh: --count and --jobs must be 1 or more" >&2; exit 2; }
# Each program runs in a folder of its own: a relative build path would not resolve there.
[[ -d $build ]] || { echo "run.sh: --build $build: not a directory" >&2; exit 2; }
build=$(cd "$build" && pwd)
export FAULTGEN_BIN=${FAULTGEN_BIN:-$build/bin/ncclrec_faultgen}
export CXXRUN_BIN=${CXXRUN_BIN:-$build/bin/cxxrun}
export NCCLREC_SHIM=${NCCLREC_SHIM:-$build/lib/libncclrec.so}
export ANALYZE_BIN=${ANALYZE_BIN:-$build/bin/ncclrec-analyze}
for f in "$FAULTGEN_BIN" "$CXXRUN_BIN" "$NCCLREC_SHIM" "$ANALYZE_BIN"; do
  [[ -e $f ]] || { echo "run.sh: $f not found (build it, or give --build DIR)" >&2; exit 2; }
done
if [[ -n $fault ]] && ! "$FAULTGEN_BIN" --seed 1 --fault "$fault" --describe > /dev/null; then
  exit 2
fi

# One program: runs it, writes its result line to $work/seed-S.json, prints a progress line.
run_one() {
  local s=$1
  local dir="$work/seed-$s"
  mkdir -p "$dir"
  local gen=("$FAULTGEN_BIN" --seed "$s")
  [[ -n $fault ]] && gen+=(--fault "$fault")
  "${gen[@]}" --describe > "$dir/program.json"
  local world
  world=$(grep -o '"world":[0-9]*' "$dir/program.json" | cut -d: -f2)
  local t0=$SECONDS
  (cd "$dir" && env -u CXXRUN_STORE -u CXXRUN_TOKEN -u NCCLREC_RUN_ID -u HOSTNCCL_TIMEOUT \
    LD_PRELOAD="$NCCLREC_SHIM" NCCLREC_DIR="$dir/dumps" NCCLREC_TIMEOUT=2 NCCLREC_POLL_MS=100 \
    timeout -k 5 120 "$CXXRUN_BIN" --standalone --nproc-per-node "$world" --nccl=host \
    --monitor-interval 0.05 --run-id "fg-$s" "${gen[@]}" > cxxrun.out 2> cxxrun.err)
  local cxxrun_exit=$?
  "$ANALYZE_BIN" --json "$dir/dumps/fg-$s/attempt_0" > "$dir/verdict.json" 2> "$dir/analyze.err"
  local analyze_exit=$?
  # One Python start per program: on a loaded machine each costs seconds.
  FAULTGEN_FORCED=$fault python3 "$here/score.py" line "$dir" "$s" "$cxxrun_exit" "$analyze_exit" \
    $((SECONDS - t0)) "$work/seed-$s.json"
  if [[ -n $keep ]]; then
    mkdir -p "$keep" && rm -rf "$keep/seed-$s" && cp -r "$dir" "$keep/seed-$s"
  fi
  rm -rf "$dir"
}

if [[ -n $one ]]; then  # internal: one program, for xargs
  work=$WORK run_one "$one"
  exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export WORK=$work
echo "faultgen: $count program(s) from seed $seed, $jobs at a time ($FAULTGEN_BIN)"
start=$SECONDS
extra=()
[[ -n $fault ]] && extra+=(--fault "$fault")
[[ -n $keep ]] && extra+=(--keep "$(realpath -m "$keep")")
seq "$seed" $((seed + count - 1)) |
  xargs -P "$jobs" -I{} "$0" --one {} --build "$build" "${extra[@]}"
cat "$work"/seed-*.json > "$work/all.jsonl" 2> /dev/null
[[ -n $results ]] && cp "$work/all.jsonl" "$results"
echo "faultgen: $count program(s) in $((SECONDS - start)) s"
python3 "$here/score.py" report "$count" < "$work/all.jsonl"
