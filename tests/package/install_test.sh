#!/usr/bin/env bash
# `cmake --install` of the build tree, then the installed tree moved elsewhere (it must run from
# anywhere): the layout of docs/install.md, every tool's --version, RPATHs relative to $ORIGIN,
# ncclrec-analyze on a golden dump directory, and a separate CMake project that finds the package
# (find_package(ncclrec)), links ncclrec::format and ncclrec::store_client, and reads the dumps.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR. Exit 0 pass, 1 fail.
set -euo pipefail
build=$(cd "${1:?usage: install_test.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: install_test.sh BUILD_DIR SOURCE_DIR}" && pwd)
fail() { echo "install_test: FAIL: $*"; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/first" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"; fail "cmake --install failed (log above)"; }
mv "$work/first" "$work/moved"  # nothing may point back at the first prefix or the build tree
p=$work/moved
for f in bin/ncclrec-analyze bin/ncclrec-top bin/ncclrec-watch bin/ncclrec-exporter bin/cxxrun \
  lib/libncclrec.so lib/libncclrec_dump.so share/ncclrec/prometheus/ncclrec.rules.yml \
  share/ncclrec/grafana/ncclrec-dashboard.json \
  lib/libncclrec_format.so lib/ncclrec/hostnccl/libnccl.so.2 lib/ncclrec/samples/sample_gated_save \
  lib/cmake/ncclrec/ncclrecConfig.cmake include/ncclrec/format/reader.h \
  include/ncclrec/format/ncclrec.pb.h include/ncclrec/format/store_client.h \
  share/doc/ncclrec/README.md share/doc/ncclrec/docs/install.md \
  share/ncclrec/samples/gated_save/main.cc share/ncclrec/samples/gated_save/expected.json; do
  [ -e "$p/$f" ] || fail "$f is not installed"
done
# hostnccl never lands where the dynamic linker looks by default.
[ ! -e "$p/lib/libnccl.so.2" ] || fail "lib/libnccl.so.2 would shadow a real NCCL"

# RPATHs: relative to the file only.
rpath() { readelf -d "$1" | sed -n 's/.*(\(RPATH\|RUNPATH\)).*\[\(.*\)\]/\1 \2/p'; }
for f in bin/ncclrec-analyze bin/ncclrec-top bin/ncclrec-watch bin/ncclrec-exporter bin/cxxrun; do
  [ "$(rpath "$p/$f")" = 'RPATH $ORIGIN/../lib' ] || fail "$f: '$(rpath "$p/$f")', want RPATH \$ORIGIN/../lib"
done
for f in lib/libncclrec.so lib/libncclrec_dump.so lib/libncclrec_format.so; do
  [ "$(rpath "$p/$f")" = 'RPATH $ORIGIN' ] || fail "$f: '$(rpath "$p/$f")', want RPATH \$ORIGIN"
done
[ "$(rpath "$p/lib/ncclrec/hostnccl/libnccl.so.2")" = 'RPATH $ORIGIN/../..' ] ||
  fail "hostnccl: '$(rpath "$p/lib/ncclrec/hostnccl/libnccl.so.2")', want RPATH \$ORIGIN/../.."
[ -z "$(rpath "$p/lib/ncclrec/samples/sample_gated_save")" ] ||
  fail "the samples must carry no RPATH (LD_LIBRARY_PATH picks their libnccl.so.2)"

# Every tool answers --version with the same version and commit.
want=""
for tool in ncclrec-analyze ncclrec-top ncclrec-watch ncclrec-exporter cxxrun; do
  out=$("$p/bin/$tool" --version) || fail "$tool --version exited $?"
  [[ $out =~ ^$tool\ ([0-9]+\.[0-9]+\.[0-9]+\ \(git\ [0-9a-z-]+\))$ ]] || fail "$tool --version: '$out'"
  [ -z "$want" ] || [ "${BASH_REMATCH[1]}" = "$want" ] || fail "$tool says ${BASH_REMATCH[1]}, not $want"
  want=${BASH_REMATCH[1]}
done
version=$(sed -n 's/^project(ncclrec VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[[ $want == "$version "* ]] || fail "--version says '$want', CMakeLists.txt $version"

# The installed analyzer on a golden dump directory.
rc=0; out=$("$p/bin/ncclrec-analyze" --json "$src/tests/data/rank_gated_collective") || rc=$?
[ "$rc" -eq 3 ] || fail "ncclrec-analyze exited $rc on the golden dumps (want 3): $out"
grep -q '"class": *"rank_gated_collective"' <<<"$out" || fail "golden verdict: $out"

# A separate project: find_package(ncclrec) from the moved prefix, linked and run.
cmake -S "$src/tests/package/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$p" \
  -DCMAKE_BUILD_TYPE=Release >"$work/consumer.log" 2>&1 &&
  cmake --build "$work/consumer" >>"$work/consumer.log" 2>&1 || {
  cat "$work/consumer.log"; fail "the consumer project did not configure or build (log above)"; }
out=$("$work/consumer/read_dumps" "$src/tests/data/rank_gated_collective") || fail "read_dumps: $out"
[ "$(grep -c '^rank [0-3] of 4: [1-9][0-9]* events$' <<<"$out")" -eq 4 ] || fail "read_dumps printed: $out"
grep -q "^ncclrec $want$" <<<"$out" || fail "read_dumps linked another version: $out"
echo "install_test: PASS ($want; layout, RPATHs, --version, golden verdict, find_package consumer)"
