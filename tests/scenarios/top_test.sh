#!/usr/bin/env bash
# Runs a job under libncclrec.so on hostnccl (no launcher) and reads it live with
# `ncclrec-top --once --screen comms` until a frame has a line matching each REGEX (at most 20 s);
# prints the last frame either way.
#   top_test.sh TOP BIN SHIM HOSTNCCL_DIR WORLD "ARGS" REGEX...
#   (ARGS: the program's arguments as one word list, e.g. "no_hang")
set -uo pipefail
if [[ $# -lt 7 ]]; then
  echo "usage: $0 TOP BIN SHIM HOSTNCCL_DIR WORLD \"ARGS\" REGEX..." >&2
  exit 2
fi
top=$1 bin=$2 shim=$3 hostnccl=$4 world=$5
read -ra args <<< "$6"
shift 6
. "$(dirname "$0")/hostnccl_ranks.sh"
rank_env=(NCCLREC_WATCHER=off)
start_ranks "$world" "$shim" "$hostnccl" "$bin" "${args[@]}"
for ((i = 0; i < 40; i++)); do
  sleep 0.5
  [[ -d $work/dumps ]] || continue
  "$top" --once --screen comms --size 100x30 "$work/dumps" > "$work/frame.txt" 2> "$work/top.err"
  ok=1
  for re in "$@"; do
    grep -Eq -- "$re" "$work/frame.txt" || ok=0
  done
  [[ $ok == 1 ]] && break
done
cat "$work/frame.txt"
cat "$work/top.err" >&2
if [[ $ok != 1 ]]; then
  for re in "$@"; do
    grep -Eq -- "$re" "$work/frame.txt" || echo "FAIL: no line of the last frame matches: $re" >&2
  done
  for ((r = 0; r < world; r++)); do tail -3 "$work/rank$r.log" >&2; done
  exit 1
fi
echo "PASS"
