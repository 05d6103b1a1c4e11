#!/usr/bin/env bash
# Bounded run of the readers' fuzz target for CI: seeds from the golden recordings (tests/data),
# and, given the Flight Recorder generator and python3, FR dumps (pickle protocols 2 and 4, JSON);
# new inputs in a temporary corpus. A crash leaves its input (crash-*) in the working directory.
#   run_fuzz.sh FUZZER SECONDS DATA_DIR [GEN_FR_DUMPS_PY]
set -euo pipefail
fuzzer=$1 seconds=$2 data=$3 gen_fr=${4:-}
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
n=0
for f in "$data"/*/*.ncclrec.pb; do cp "$f" "$corpus/seed$((n++)).pb"; done
for f in "$data"/*/*.bbox.gz; do gzip -dc "$f" > "$corpus/seed$((n++)).bbox"; done
if [[ -n $gen_fr ]] && command -v python3 >/dev/null; then
  for args in "gated" "coalesced --protocol 4" "p2p_ring --json"; do
    # shellcheck disable=SC2086 # args is a scenario and its flags
    python3 "$gen_fr" $args "$corpus/fr" --ranks 2
    for f in "$corpus"/fr/*; do mv "$f" "$corpus/seed$((n++)).fr"; done
  done
  rmdir "$corpus/fr"
fi
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1100000 "$corpus"
