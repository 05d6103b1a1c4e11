#!/usr/bin/env bash
# Writes every output of ncclrec-analyze (verdict text, --json, --events text and JSON, --stacks,
# --trace) on every tests/data set, on 64-rank sets of every ncclrec-gen-dumps scenario and on
# gen_fr_dumps.py scenarios (pickle and JSON) into OUT, one file per set and mode, so that two
# builds can be compared byte for byte (diff -r) before and after a change that must keep every
# verdict:
#   verdict_snapshot.sh ANALYZE GEN INPUTS OUT
# INPUTS caches the generated sets (reused when present). Run from the repository root.
set -uo pipefail
analyze=$1 gen=$2 inputs=$3 out=$4
mkdir -p "$inputs" "$out"
sets=()
for d in tests/data/*/; do
  d=${d%/}
  compgen -G "$d/*.ncclrec.pb" > /dev/null || compgen -G "$d/*.bbox" > /dev/null || continue
  sets+=("$d")
done
for s in gated skipped exited size_mismatch dtype_mismatch redop_mismatch no_hang; do
  d=$inputs/gen-$s
  [[ -d $d ]] || "$gen" --scenario "$s" --ranks 64 --entries 200 --culprit 5 --out "$d" || exit 1
  sets+=("$d")
done
for s in healthy gated ring_wrap size_mismatch dtype_mismatch p2p_ring p2p_skip coalesced \
  missing_rank multi_pg; do
  for fmt in pkl json; do
    d=$inputs/fr-$s-$fmt
    flag=(); [[ $fmt == json ]] && flag=(--json)
    [[ -d $d ]] || /usr/bin/python3 tests/tools/gen_fr_dumps.py "$s" "$d" --ranks 16 \
      "${flag[@]}" > /dev/null || exit 1
    sets+=("$d")
  done
done
for d in "${sets[@]}"; do
  n=$(basename "$d")
  "$analyze" "$d" > "$out/$n.txt" 2>&1; echo "exit $?" >> "$out/$n.txt"
  "$analyze" --json "$d" > "$out/$n.json" 2>&1; echo "exit $?" >> "$out/$n.json"
  "$analyze" --events "$d" > "$out/$n.events" 2>&1; echo "exit $?" >> "$out/$n.events"
  "$analyze" --events --json "$d" > "$out/$n.events.json" 2>&1
  echo "exit $?" >> "$out/$n.events.json"
  "$analyze" --stacks "$d" > "$out/$n.stacks" 2>&1; echo "exit $?" >> "$out/$n.stacks"
  "$analyze" --trace "$out/$n.trace.json" "$d" > "$out/$n.trace.txt" 2>&1
  echo "exit $?" >> "$out/$n.trace.txt"
done
echo "$(ls "$out" | wc -l) outputs of ${#sets[@]} sets in $out"
