#!/usr/bin/env bash
# A CPython the recorder does not support (3.8 here) is recorded with native stacks after one
# warning. Usage: unsupported_test.sh PYTHON SHIM STUB_LIB PRINT_FRAMES
# Exit 0 as expected, 1 otherwise, 77 (skipped, reason printed) when PYTHON is absent.
set -euo pipefail
python=${1:?usage}; shim=${2:?usage}; stub=${3:?usage}; print=${4:?usage}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "SKIPPED: $python not found on this machine"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
. "$(dirname "$0")/sanitizer_env.sh"
NCCLREC_DIR="$work/dumps" LD_PRELOAD="$sanitizer_preload$shim" "$python" - "$stub" 2>"$work/stderr" <<'PY'
import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
api = ctypes.CDLL(None)
class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]
uid = UniqueId()
comm = ctypes.c_void_p()
buf = (ctypes.c_float * 4)()
assert api.ncclGetUniqueId(ctypes.byref(uid)) == 0
assert api.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0) == 0
for _ in range(3):
    assert api.ncclAllReduce(buf, buf, 4, 7, 0, comm, None) == 0
PY
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
warnings=$(grep -c "no Python frames: CPython $version is not supported" "$work/stderr" || true)
if [ "$warnings" != 1 ]; then
  echo "unsupported: expected one warning for CPython $version, got $warnings; stderr:" >&2
  cat "$work/stderr" >&2
  exit 1
fi
summary=$("$print" "$work"/dumps/*.bbox | tail -1)
# N <events> <native-only>: 5 calls recorded, every one with a native stack and no Python frame.
if [ "$(printf '%s' "$summary" | cut -f2)" != 5 ] || [ "$(printf '%s' "$summary" | cut -f3)" != 5 ]; then
  echo "unsupported: expected 5 events with native stacks only, got '$summary'" >&2
  "$print" "$work"/dumps/*.bbox >&2
  exit 1
fi
echo "unsupported: CPython $version warned once and was recorded with native stacks ($summary)"
