#!/usr/bin/env bash
# Runs an NCCL program on WORLD ranks under libncclrec.so on hostnccl and keeps, per rank, its
# newest dump (or its black box when it left no dump, e.g. after SIGKILL) in OUT_DIR as
# rank<R>.ncclrec.pb / rank<R>.bbox.gz. The buffers are kept small so checked-in data stays a few
# KB; the run id is OUT_DIR's name. Ranks get RANK, LOCAL_RANK and WORLD_SIZE as from a launcher
# on one host. Waits until every rank exited or every live rank dumped (a hang), then kills what
# is left.
#   record.sh BIN SHIM HOSTNCCL_DIR OUT_DIR WORLD [ARGS...]
#   e.g. record.sh build/bin/ncclrec_scenario build/lib/libncclrec.so build/hostnccl \
#          tests/data/rank_exited 4 exited
# Then write OUT_DIR/expected.json from `ncclrec-analyze --json OUT_DIR`, checked by hand.
set -euo pipefail
if [[ $# -lt 5 ]]; then
  echo "usage: $0 BIN SHIM HOSTNCCL_DIR OUT_DIR WORLD [ARGS...]" >&2
  exit 1
fi
bin=$1 shim=$2 hostnccl=$3 out=$4 world=$5
shift 5
run_id=$(basename "$out")
. "$(dirname "$0")/hostnccl_ranks.sh"
rank_env=(NCCLREC_RUN_ID="$run_id" NCCLREC_TIMEOUT=3 NCCLREC_POLL_MS=100 NCCLREC_WATCHER=off
  NCCLREC_BUFFER=32 NCCLREC_MAX_COMMS=4 NCCLREC_MAX_STACKS=8 NCCLREC_STACK_DEPTH=4)
start_ranks "$world" "$shim" "$hostnccl" "$bin" "$@"
alive() { kill -0 "$1" 2> /dev/null; }
has_dump() { compgen -G "$work/dumps/*.$1.*.ncclrec.pb" > /dev/null; }
# A stopped process (state T in /proc/PID/stat; the scenario's frozen modes) cannot dump.
stopped() { [[ $(sed 's/.*) //' "/proc/$1/stat" 2> /dev/null | cut -d' ' -f1) == [Tt] ]]; }
# Until every rank has exited, or every live rank that runs has dumped (a hang), at most 30 s.
for ((i = 0; i < 300; i++)); do
  waiting=0
  for p in "${pids[@]}"; do
    if alive "$p" && ! stopped "$p" && ! has_dump "$p"; then waiting=1; fi
  done
  [[ $waiting == 0 ]] && break
  sleep 0.1
done
sleep 0.5  # lets a dump in progress finish its rename
for p in "${pids[@]}"; do
  if alive "$p"; then kill -9 "$p" 2> /dev/null || true; fi
  wait "$p" 2> /dev/null || true
done
rm -rf "$out"
mkdir -p "$out"
for ((r = 0; r < world; r++)); do
  p=${pids[$r]}
  newest=$(ls "$work"/dumps/*."$p".*.ncclrec.pb 2> /dev/null | sort -t. -k3,3n | tail -1 || true)
  if [[ -n $newest ]]; then
    cp "$newest" "$out/rank$r.ncclrec.pb"
  else
    gzip -9c "$work"/dumps/*."$p".bbox > "$out/rank$r.bbox.gz"
  fi
done
ls -l "$out"
