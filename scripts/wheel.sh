#!/usr/bin/env bash
# Builds the Python wheel (docs/python.md): the package python/ncclrec with the installed tree of
# the CMake build inside it, as the relocatable tarball carries it (docs/install.md): the shim,
# the dump writer, the tools and the libraries they need beyond glibc and libstdc++, hostnccl and
# the samples. Prints the wheel's path on its last line.
#   scripts/wheel.sh [--build DIR] OUTDIR
# DIR (default build/) is configured when it is not (without tests and trainer), and its target
# ncclrec_installed (what the installed tree takes) is built. Uses Debian's python3-build,
# python3-wheel and python3-setuptools (no package index).
# Exit codes: 0 the wheel is built, 1 a step failed (its log is printed), 2 bad usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
out=""
usage() { sed -n '2,10p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:?--build needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "wheel.sh: unknown option '$1'" >&2; usage ;;
    *) [ -z "$out" ] || usage; out=$1; shift ;;
  esac
done
[ -n "$out" ] || usage
fail() { echo "wheel.sh: $*" >&2; exit 1; }
py=/usr/bin/python3  # Debian's, where python3-build and python3-wheel are installed
"$py" -c "import build, setuptools, wheel" 2>/dev/null ||
  fail "needs Debian's python3-build, python3-wheel and python3-setuptools (scripts/install-deps.sh)"

# What the installed tree takes from the build (target ncclrec_installed, not the tests).
if [ ! -f "$build/CMakeCache.txt" ]; then
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja -DNCCLREC_BUILD_TESTS=OFF -DNCCLREC_BUILD_TRAINER=OFF \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; fail "cmake configure failed"; }
fi
echo "wheel.sh: building $build (target ncclrec_installed)"
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target ncclrec_installed \
  >"$build/wheel-build.log" 2>&1 || { tail -50 "$build/wheel-build.log" >&2; fail "the build failed"; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The installed tree, stripped as in the packages (the samples keep their symbols), with the
# bundled libraries of the tarball.
tree=$work/tree
for component in runtime bundled; do
  strip=""; [ "$component" = runtime ] && strip=--strip
  cmake --install "$build" --prefix "$tree" --component "$component" $strip >>"$work/install.log" 2>&1 ||
    { cat "$work/install.log" >&2; fail "cmake --install --component $component failed"; }
done

# The package, and the tree in ncclrec/_bundle/: what runs (bin/, lib/ without the CMake files
# and static libraries of find_package, which a wheel has no use for) and the samples' sources.
stage=$work/stage
mkdir -p "$stage"
cp "$root/python/pyproject.toml" "$root/python/setup.py" "$root/python/README.md" "$stage/"
mkdir "$stage/ncclrec"
cp "$root"/python/ncclrec/*.py "$stage/ncclrec/"
bundle=$stage/ncclrec/_bundle
mkdir -p "$bundle/share"
cp -R "$tree/bin" "$tree/lib" "$bundle/"
cp -R "$tree/share/ncclrec" "$bundle/share/"
rm -rf "$bundle/lib/cmake" "$bundle/bin/ncclrec-trainer"  # the trainer needs LibTorch
rm -f "$bundle"/lib/*.a
# A wheel holds no symbolic links: each link (a library's soname, libprotobuf.so.32 ->
# libprotobuf.so.32.0.12) becomes the file it names, and the versioned name goes, since every
# reference is by soname (DT_NEEDED).
declare -A moved=()
while IFS= read -r -d '' link; do
  target=$(readlink -f "$link")
  case "$target" in "$bundle"/*) ;; *) fail "$link points out of the tree, to $target" ;; esac
  rm "$link"
  if [ -n "${moved[$target]:-}" ]; then
    cp "${moved[$target]}" "$link"
  else
    mv "$target" "$link"
    moved[$target]=$link
  fi
done < <(find "$bundle" -type l -print0)
find "$bundle" -name __pycache__ -prune -exec rm -rf {} +
for f in bin/ncclrec-analyze bin/ncclrec-top bin/ncclrec-watch bin/cxxrun lib/libncclrec.so \
  lib/libncclrec_dump.so lib/ncclrec/hostnccl/libnccl.so.2 lib/ncclrec/samples/sample_gated_save \
  share/ncclrec/samples/python/gated_save/gated_save.py; do
  [ -f "$bundle/$f" ] || fail "the installed tree has no $f"
done

# The version, from the tools themselves (CMakeLists.txt's, and the commit).
line=$("$bundle/bin/ncclrec-analyze" --version) || fail "ncclrec-analyze --version failed"
[[ $line =~ ^ncclrec-analyze\ ([0-9]+\.[0-9]+\.[0-9]+)\ \(git\ ([0-9a-z-]+)\)$ ]] ||
  fail "ncclrec-analyze --version said '$line'"
version=${BASH_REMATCH[1]}
printf '"""Written by scripts/wheel.sh."""\n__version__ = "%s"\ngit = "%s"\n' \
  "$version" "${BASH_REMATCH[2]}" >"$stage/ncclrec/_version.py"

# The platform tag that the files' symbol versions allow (scripts/wheel_tag.py, docs/python.md).
tag=$("$py" "$root/scripts/wheel_tag.py" --explain "$bundle" 2>"$work/tag.log") ||
  { cat "$work/tag.log" >&2; fail "no platform tag"; }
sed 's/^/  /' "$work/tag.log"
printf '[bdist_wheel]\nplat_name = %s\n' "$tag" >"$stage/setup.cfg"

echo "wheel.sh: building ncclrec $version for $tag"
(cd "$stage" && "$py" -m build --wheel --no-isolation --outdir "$work/dist" .) >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; fail "python3 -m build failed (log above)"; }
name=ncclrec-$version-py3-none-$tag.whl
[ -f "$work/dist/$name" ] || { ls "$work/dist" >&2; fail "python3 -m build made no $name"; }
mv "$work/dist/$name" "$out/$name"
echo "wheel.sh: $(du -h "$out/$name" | cut -f1) with $(find "$bundle" -type f | wc -l) native files and samples"
echo "$out/$name"
