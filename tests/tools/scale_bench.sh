#!/usr/bin/env bash
# Generates RANKS x ENTRIES synthetic dumps of SCENARIO, runs ncclrec-analyze on them, prints its
# wall time and peak RSS, and checks the verdict line against REGEX.
#   scale_bench.sh GEN ANALYZE SCENARIO RANKS ENTRIES [REGEX]
set -uo pipefail
gen=$1 analyze=$2 scenario=$3 ranks=$4 entries=$5 regex=${6:-.}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$gen" --scenario "$scenario" --ranks "$ranks" --entries "$entries" --out "$work/dumps" || exit 1
echo "dumps: $(du -sh "$work/dumps" | cut -f1) in $ranks files"
/usr/bin/time -f "wall %e s, max RSS %M KiB" -o "$work/time" "$analyze" "$work/dumps" > "$work/out"
code=$?
head -1 "$work/out"
cat "$work/time"
[[ $code == 0 || $code == 3 ]] || { echo "FAIL: exit code $code" >&2; exit 1; }
head -1 "$work/out" | grep -Eq -- "$regex" || { echo "FAIL: verdict does not match $regex" >&2; exit 1; }
