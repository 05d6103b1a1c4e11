#!/usr/bin/env bash
# Runs a job live (record.sh: libncclrec.so on hostnccl), then ncclrec-analyze on what it left,
# and checks the exit code and the verdict line (the first line of the default report).
#   live_test.sh ANALYZE EXPECTED_EXIT VERDICT_REGEX BIN SHIM HOSTNCCL_DIR WORLD [ARGS...]
set -uo pipefail
if [[ $# -lt 7 ]]; then
  echo "usage: $0 ANALYZE EXPECTED_EXIT VERDICT_REGEX BIN SHIM HOSTNCCL_DIR WORLD [ARGS...]" >&2
  exit 2
fi
analyze=$1 expected_exit=$2 regex=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/live
if ! "$here/record.sh" "$1" "$2" "$3" "$out" "${@:4}" > "$work/record.log" 2>&1; then
  echo "recording failed:" >&2
  cat "$work/record.log" >&2
  exit 1
fi
for gz in "$out"/*.gz; do
  [[ -e $gz ]] && gunzip "$gz"
done
"$analyze" "$out" > "$work/report.txt" 2> "$work/err.txt"
code=$?
cat "$work/report.txt"
cat "$work/err.txt" >&2
if [[ $code != "$expected_exit" ]]; then
  echo "FAIL: exit code $code, expected $expected_exit" >&2
  exit 1
fi
if ! head -1 "$work/report.txt" | grep -Eq -- "$regex"; then
  echo "FAIL: the verdict line does not match: $regex" >&2
  exit 1
fi
echo "PASS"
