# Sourced by the Python tests: when the shim was built with a sanitizer (scripts/test.sh
# --sanitize), set what its runtime needs inside an uninstrumented interpreter: exports, and
# `sanitizer_preload`, to put first in LD_PRELOAD ("" without a sanitizer).
# ldd's output is read whole first: `ldd | grep -q` under pipefail fails when grep stops early.
shim_deps=$(ldd "$shim" 2>/dev/null || true)
sanitizer_preload=""
if [[ $shim_deps == *libasan* ]]; then
  # The runtime comes in as the shim's dependency, after the interpreter; CPython's own
  # allocations at exit are not ours to report.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
elif [[ $shim_deps == *libtsan* ]]; then
  # libunwind's thread-exit hook crashes TSan's interceptors (see interpose/testing/shim_harness.cc).
  export NCCLREC_UNWIND=fp
  # The runtime must come before libc in the lookup order, or the interpreter's threads and the
  # recorder's watchdog (pthread_create through libstdc++) start unknown to it and crash.
  sanitizer_preload=$(printf '%s\n' "$shim_deps" | awk '/libtsan/ {print $3; exit}'):
fi
