# Sourced by the scenario scripts that run a job under libncclrec.so on hostnccl with no launcher
# (record.sh, top_test.sh, watch_test.sh): a work directory $work, removed on exit after every
# rank still running is killed, and
#   start_ranks WORLD SHIM HOSTNCCL_DIR BIN [ARGS...]
# which starts ranks 0..WORLD-1 of BIN as a launcher on one host would (RANK, LOCAL_RANK,
# WORLD_SIZE), recording into $work/dumps, each rank's output in $work/rank<R>.log, their pids in
# the array pids. The array rank_env adds to the ranks' environment: VAR=value, or -u VAR to unset.
# With NCCLREC_TEST_KEEP=DIR set, $work (dumps, black boxes, logs, report.json) is copied to a new
# directory under DIR, named after the script, before it is removed: to read a failing test's
# recordings, or to compare two analyzers on them.
work=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/../tools/keep_work.sh"
pids=()
rank_env=()
cleanup() {
  for p in "${pids[@]}"; do
    kill -KILL "$p" 2> /dev/null || true  # `|| true`: callers may run under set -e
    wait "$p" 2> /dev/null || true
  done
  keep_work "$work"
  rm -rf "$work"
}
trap cleanup EXIT
start_ranks() {
  local world=$1 shim=$2 hostnccl=$3 bin=$4 r
  shift 4
  keep_work_command=("$0" "$bin" "$world" "$@")
  for ((r = 0; r < world; r++)); do
    env "${rank_env[@]}" RANK=$r LOCAL_RANK=$r WORLD_SIZE=$world LD_PRELOAD=$shim \
      LD_LIBRARY_PATH=$hostnccl NCCLREC_DIR=$work/dumps NCCLREC_SAMPLE_ID_FILE=$work/id \
      "$bin" "$@" > "$work/rank$r.log" 2>&1 &
    pids+=($!)
  done
}
