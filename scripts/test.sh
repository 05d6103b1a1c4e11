#!/usr/bin/env bash
# The test command: installs what it needs, builds, and runs every test that needs no GPU.
#   scripts/test.sh                       all tests, in build/
#   scripts/test.sh --sanitize thread     the code loaded into users' processes (recorder, shim,
#                                         hostnccl) and its tests, Python's included, under TSan
#   scripts/test.sh --sanitize address    ... under AddressSanitizer (LeakSanitizer included)
#   scripts/test.sh --sanitize undefined  ... under UndefinedBehaviorSanitizer (any report fails)
#   scripts/test.sh --sanitize address,undefined   ... under both in one build (what CI runs)
# Tests labelled `gpu` run only where a GPU is visible; elsewhere ctest reports them skipped, each
# with its reason.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sanitize=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=${2:?--sanitize needs address, thread, undefined or address,undefined}; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown argument '$1' (see --help)" >&2; exit 1 ;;
  esac
done

case "$sanitize" in
  ""|address|thread|undefined|address,undefined|undefined,address) ;;
  *) echo "test.sh: --sanitize takes address, thread, undefined or address,undefined, not" \
          "'$sanitize'" >&2; exit 1 ;;
esac

"$root/scripts/install-deps.sh"
jobs=$(nproc 2>/dev/null || echo 2)
if [ -z "$sanitize" ]; then
  "$root/scripts/build.sh" "$root/build"
  cd "$root/build"
  # Label `accuracy`: random-fault runs kept out of CI (none at present: faultgen.seeds_1_60 is
  # in; docs/accuracy.md).
  # Label `package`: the packages in minimal Debian roots, minutes with network (.ci/run's own
  # step; docs/install.md).
  exec ctest --output-on-failure -j "$jobs" --timeout 300 -LE 'accuracy|package'
fi

# Sanitizer runs build and run only the code loaded into users' processes and its tests (the
# Python tests preload the instrumented shim into CPython; hostnccl's conformance suite runs its
# instrumented worker processes). The tests that read a dump run build/'s ncclrec-analyze when
# build/ is there (brought up to date first): the analyzer is a tool, not loaded into users'
# processes, and compiling it again under a sanitizer is half of such a build.
build="$root/build-${sanitize//,/-}"
targets=(ncclrec_recorder_test ncclrec_watchdog_alloc_test ncclrec_interpose_test
  ncclrec_interpose ncclrec_dump nccl_caller ncclrec_stub_nccl ncclrec_fake_cuda
  ncclrec_print_frames ncclrec_python_layout_print hostnccl_test hostnccl_conformance_test
  hostnccl_conformance_worker hostnccl_profiler_test ncclrec_completion_worker
  ncclrec_symbolize_test)
if [ -f "$root/build/CMakeCache.txt" ]; then
  cmake --build "$root/build" -j "$jobs" --target ncclrec-analyze
  analyze="$root/build/bin/ncclrec-analyze"
else
  analyze=""
  targets+=(ncclrec-analyze)
fi
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja -DNCCLREC_SANITIZE="$sanitize" -DCMAKE_BUILD_TYPE=Debug \
  -DNCCLREC_TEST_ANALYZE="$analyze" >"$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; exit 1; }
cmake --build "$build" -j "$jobs" --target "${targets[@]}"
cd "$build"
exec ctest --output-on-failure -j "$jobs" --timeout 300 -L 'recorder|interpose|python|hostnccl' \
  -LE samples
