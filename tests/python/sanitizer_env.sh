# Sourced by the Python tests: when the shim was built with a sanitizer (scripts/test.sh
# --sanitize), set what its runtime needs inside an uninstrumented interpreter. Exports only.
# ldd's output is read whole first: `ldd | grep -q` under pipefail fails when grep stops early.
shim_deps=$(ldd "$shim" 2>/dev/null || true)
if [[ $shim_deps == *libasan* ]]; then
  # The runtime comes in as the shim's dependency, after the interpreter; CPython's own
  # allocations at exit are not ours to report.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:detect_leaks=0"
elif [[ $shim_deps == *libtsan* ]]; then
  # libunwind's thread-exit hook crashes TSan's interceptors (see interpose/testing/shim_harness.cc).
  export NCCLREC_UNWIND=fp
fi
