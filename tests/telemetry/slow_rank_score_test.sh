#!/usr/bin/env bash
# The slow-rank score on a real straggler: the slow_rank sample (rank 2 spends 40 ms more per step)
# under cxxrun with libncclrec.so and hostnccl; `ncclrec-exporter --once` on what it recorded must
# give rank 2 a score of 1 and the others 0 (docs/metrics.md).
# Usage: slow_rank_score_test.sh BUILD_DIR. Exit status: 0 passed, 1 failed.
set -u
build=${1:?the build directory}
dir=$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-slow-rank-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() { echo "slow_rank_score_test: FAIL: $*"; exit 1; }
env -u NCCLREC_METRICS_PORT LD_PRELOAD="$build/lib/libncclrec.so" NCCLREC_DIR="$dir" \
  "$build/bin/cxxrun" --standalone --nproc-per-node 4 --nccl=host --run-id slow \
  "$build/bin/sample_slow_rank" > "$dir/job.log" 2>&1 || { cat "$dir/job.log"; fail "the job failed"; }
out=$("$build/bin/ncclrec-exporter" --dir "$dir" --once 2> "$dir/exporter.err") ||
  { cat "$dir/exporter.err"; fail "ncclrec-exporter --once failed"; }
for r in 0 1 2 3; do
  want=0; [ "$r" = 2 ] && want=1
  line=$(grep "^ncclrec_rank_slow_score{job_id=\"slow\",host=\"[^\"]*\",rank=\"$r\"}" <<< "$out")
  [ "${line##* }" = "$want" ] || fail "rank $r: '$line', want score $want"
done
grep -q '^ncclrec_job_slow_rank_score{job_id="slow"} 1$' <<< "$out" || fail "no job score 1"
echo "ok: rank 2's slow score 1, the others 0"
