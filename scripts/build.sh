#!/usr/bin/env bash
# Configures and builds ncclrec. Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]
# BUILD_DIR defaults to build/. Reruns are incremental.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$root/build"}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$build"
cmake -S "$root" -B "$build" -G Ninja "$@" >"$build/configure.log" 2>&1 || {
  cat "$build/configure.log" >&2
  echo "build: cmake configure failed (log above, also in $build/configure.log)" >&2
  exit 1
}
cmake --build "$build" -j "$jobs"
