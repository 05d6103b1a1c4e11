#!/usr/bin/env bash
# Packs what the GPU checks (tests/gpu/run_checks.sh) need into one folder that can be copied to
# a GPU machine lacking this project's build dependencies: the relocatable tarball (cpack: every
# tool, the shim, hostnccl and the libraries they load beyond glibc and libstdc++; docs/install.md)
# unpacked, plus the GPU checks' own programs (the real-NCCL conformance suite, nccl_loop and
# marker_cost) and
# CLI11's headers (the trainer is compiled there). Built here against /usr/local/cuda's NCCL and
# CUDA runtime; on the GPU machine run_checks.sh uses that machine's NCCL and runtime (PyTorch's),
# found at run time.
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]     (defaults: build .gpu)
set -euo pipefail
build=$(realpath "${1:-build}") bundle=${2:-.gpu}
extra=(bin/hostnccl_conformance_test bin/hostnccl_conformance_worker_cuda bin/nccl_loop
       bin/marker_cost)
for f in "${extra[@]}" CPackConfig.cmake; do
  [[ -e $build/$f ]] || { echo "gpu-bundle: $build/$f is missing (build with the real NCCL and CUDA in /usr/local/cuda)" >&2; exit 1; }
done
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && cpack --config "$build/CPackConfig.cmake" -G TGZ >cpack.log 2>&1) || {
  cat "$tmp/cpack.log" >&2; echo "gpu-bundle: cpack failed (log above)" >&2; exit 1; }
rm -rf "$bundle" && mkdir -p "$bundle"
tar -C "$bundle" --strip-components=1 -xzf "$tmp"/ncclrec-*.tar.gz
for f in "${extra[@]}"; do cp "$build/$f" "$bundle/bin/"; done
strip --strip-debug "$bundle"/bin/hostnccl_conformance_* "$bundle/bin/nccl_loop" \
  "$bundle/bin/marker_cost"
# CLI11's headers, for building ncclrec-trainer there against that machine's LibTorch (it links
# lib/libncclrec_format_core.a from the tarball for its --version).
cp -r /usr/include/CLI "$bundle/include/"
echo "gpu-bundle: $(du -sh "$bundle" | cut -f1) in $bundle; on the GPU machine: tests/gpu/run_checks.sh $bundle OUT_DIR"
