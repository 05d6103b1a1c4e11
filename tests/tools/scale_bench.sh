#!/usr/bin/env bash
# Generates RANKS x ENTRIES synthetic dumps of SCENARIO, runs ncclrec-analyze on them, prints its
# wall time, CPU time and peak RSS, and checks the verdict line against REGEX.
#   scale_bench.sh GEN ANALYZE SCENARIO RANKS ENTRIES [REGEX]
# SCALE_BENCH_DIR=DIR keeps the dumps in DIR/SCENARIO-RANKSxENTRIES and reuses them on the next
# run (32,768 ranks take minutes to generate and 5 GB of disk); without it they go to a temporary
# directory that is removed at exit.
set -uo pipefail
gen=$1 analyze=$2 scenario=$3 ranks=$4 entries=$5 regex=${6:-.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dumps=$work/dumps
if [[ -n ${SCALE_BENCH_DIR:-} ]]; then
  dumps=$SCALE_BENCH_DIR/$scenario-${ranks}x$entries
  [[ -f $dumps.complete ]] || rm -rf "$dumps"
fi
if [[ ! -f $dumps.complete ]]; then
  "$gen" --scenario "$scenario" --ranks "$ranks" --entries "$entries" --out "$dumps" || exit 1
  [[ -z ${SCALE_BENCH_DIR:-} ]] || : > "$dumps.complete"
fi
echo "dumps: $(du -sh "$dumps" | cut -f1) in $ranks files"
/usr/bin/time -f "wall %e s, cpu %U s user + %S s sys, max RSS %M KiB" -o "$work/time" \
  "$analyze" "$dumps" > "$work/out"
code=$?
head -1 "$work/out"
cat "$work/time"
[[ $code == 0 || $code == 3 ]] || { echo "FAIL: exit code $code" >&2; exit 1; }
head -1 "$work/out" | grep -Eq -- "$regex" || { echo "FAIL: verdict does not match $regex" >&2; exit 1; }
