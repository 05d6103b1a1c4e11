#!/usr/bin/env bash
# Bounded run of the readers' fuzz target for CI: seeds from the golden recordings (tests/data),
# new inputs in a temporary corpus. A crash leaves its input (crash-*) in the working directory.
#   run_fuzz.sh FUZZER SECONDS DATA_DIR
set -euo pipefail
fuzzer=$1 seconds=$2 data=$3
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
n=0
for f in "$data"/*/*.ncclrec.pb; do cp "$f" "$corpus/seed$((n++)).pb"; done
for f in "$data"/*/*.bbox.gz; do gzip -dc "$f" > "$corpus/seed$((n++)).bbox"; done
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=1100000 "$corpus"
