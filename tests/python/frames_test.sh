#!/usr/bin/env bash
# Runs frames_check.py under one CPython with libncclrec.so preloaded over the stub NCCL, then
# compares the Python frames in the black box (and in the exit dump, unless --kill) with the
# stacks Python reported. Usage:
#   frames_test.sh PYTHON SHIM STUB_LIB PRINT_FRAMES [--kill]
# Exit 0 on a match, 1 on a difference, 77 (skipped, reason printed) when PYTHON is absent.
set -euo pipefail
python=${1:?usage}; shim=${2:?usage}; stub=${3:?usage}; print=${4:?usage}; mode=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v "$python" >/dev/null 2>&1; then
  echo "SKIPPED: $python not found on this machine"
  exit 77
fi
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/sanitizer_env.sh"
depth=${NCCLREC_PYTHON_DEPTH:-32}
set +e
NCCLREC_DIR="$work/dumps" NCCLREC_PYTHON_DEPTH=$depth NCCLREC_DEBUG=INFO \
  LD_PRELOAD="$sanitizer_preload$shim${LD_PRELOAD:+:$LD_PRELOAD}" \
  "$python" "$here/frames_check.py" record "$stub" "$work/expected.json" $mode 2>"$work/stderr"
rc=$?
set -e
if [ ! -f "$work/expected.json" ]; then
  echo "frames: CPython $version: the script failed (exit $rc):" >&2
  cat "$work/stderr" >&2
  exit 1
fi
grep -q "Python frames" "$work/stderr" || { echo "frames: CPython $version: the shim did not report Python frames:" >&2; cat "$work/stderr" >&2; exit 1; }
status=0
files=("$work"/dumps/*.bbox)
[ "$mode" = --kill ] || files+=("$work"/dumps/*.ncclrec.pb)
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "frames: CPython $version: no ${f##*.} file was written" >&2; status=1; continue; }
  "$print" "$f" >"$work/frames.txt"
  echo "frames: CPython $version, $(basename "$f"):"
  python3 "$here/frames_check.py" compare "$work/expected.json" "$work/frames.txt" "$depth" || status=1
done
exit $status
