#!/usr/bin/env bash
# Packs what the GPU checks (tests/gpu/run_checks.sh) need into one folder that can be copied to
# a GPU machine lacking this project's build dependencies (protobuf, libdw): the shim, the dump
# writer, ncclrec-analyze, the real-NCCL conformance suite and nccl_loop, with the non-system
# libraries they load. Built here against /usr/local/cuda's NCCL and CUDA runtime; on the GPU
# machine run_checks.sh uses that machine's NCCL and runtime (PyTorch's), found at run time.
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]     (defaults: build .gpu)
set -euo pipefail
build=${1:-build} bundle=${2:-.gpu}
need=(bin/ncclrec-analyze bin/hostnccl_conformance_test bin/hostnccl_conformance_worker_cuda
      bin/nccl_loop lib/libncclrec.so lib/libncclrec_dump.so lib/libncclrec_format.so)
for f in "${need[@]}"; do
  [[ -e $build/$f ]] || { echo "gpu-bundle: $build/$f is missing (build with the real NCCL and CUDA in /usr/local/cuda)" >&2; exit 1; }
done
rm -rf "$bundle" && mkdir -p "$bundle/bin" "$bundle/lib"
for f in "${need[@]}"; do cp "$build/$f" "$bundle/${f%%/*}/"; done
# The libraries a Debian build links that a GPU image may lack; glibc, libstdc++ and the CUDA
# and NCCL libraries are the target's own.
ldd "$build/bin/ncclrec-analyze" "$build/lib/libncclrec_dump.so" |
  grep -oE '/[^ ]*/lib(protobuf|dw|elf|lzma|bz2|z|zstd)\.so[^ ]*' | sort -u |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
strip --strip-debug "$bundle"/bin/* "$bundle"/lib/*
# CLI11's headers, for building ncclrec-trainer there against that machine's LibTorch.
mkdir -p "$bundle/include" && cp -r /usr/include/CLI "$bundle/include/"
echo "gpu-bundle: $(du -sh "$bundle" | cut -f1) in $bundle; on the GPU machine: tests/gpu/run_checks.sh $bundle OUT_DIR"
