#!/usr/bin/env bash
# The packages on a machine that has none of ncclrec's dependencies: builds the .tar.gz and the
# .deb with cpack, makes a minimal Debian 12 root (debootstrap --variant=minbase: no -dev package,
# no protobuf, libdw, gloo, ...), and in it (chroot):
#   1. the tarball unpacked under /opt: --version of every tool, ncclrec-analyze on a golden dump
#      directory, and samples/gated_save under cxxrun + libncclrec.so + the bundled hostnccl, each
#      verdict checked;
#   2. the .deb in a second root (dpkg -i, then apt-get -f install of its Depends from the
#      mirror): the same checks under /usr.
# Usage: chroot_test.sh BUILD_DIR SOURCE_DIR. Exit 0 pass, 1 fail, 77 skipped (the reason printed:
# not root, no debootstrap, no network for the first root). The root is cached as
# BUILD_DIR/package-test/bookworm-minbase.tar (and apt's downloads beside it): reruns take seconds.
set -euo pipefail
build=$(cd "${1:?usage: chroot_test.sh BUILD_DIR SOURCE_DIR}" && pwd)
src=$(cd "${2:?usage: chroot_test.sh BUILD_DIR SOURCE_DIR}" && pwd)
mirror=${NCCLREC_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=$build/package-test
start=$(date +%s)
say() { echo "chroot_test: $*"; }
skip() { say "SKIPPED: $*"; exit 77; }
fail() { say "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap)"
command -v cpack >/dev/null || skip "cpack is not installed"
mkdir -p "$cache/apt-archives"
work=$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-chroot.XXXXXX")
mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  # Never delete through a bind mount of the host's /dev or /proc that failed to come off.
  for m in "${mounted[@]}"; do
    if mountpoint -q "$m"; then echo "chroot_test: $m is still mounted; left $work in place"; return; fi
  done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# The minimal root, made once and cached (with apt's package lists, for the .deb's Depends).
root_tar=$cache/bookworm-minbase.tar
if [ ! -s "$root_tar" ]; then
  host=${mirror#*://}; host=${host%%/*}
  timeout 10 bash -c "exec 3<>/dev/tcp/$host/80" 2>/dev/null ||
    skip "cannot reach $host:80 to make the Debian 12 root (and none is cached in $root_tar)"
  say "debootstrap --variant=minbase bookworm from $mirror (once; cached in $root_tar)"
  t=$(date +%s)
  debootstrap --variant=minbase bookworm "$work/base" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log"; fail "debootstrap failed (log above)"; }
  cp /etc/resolv.conf "$work/base/etc/resolv.conf"
  chroot "$work/base" apt-get update -qq || fail "apt-get update in the new root failed"
  chroot "$work/base" apt-get clean
  tar -C "$work/base" -cf "$root_tar.tmp" . && mv "$root_tar.tmp" "$root_tar"
  rm -rf "$work/base"
  say "root made in $(( $(date +%s) - t )) s ($(du -h "$root_tar" | cut -f1))"
fi

# The packages, from the build tree as it is.
t=$(date +%s)
rm -rf "$work/pkg" && mkdir -p "$work/pkg"
(cd "$work/pkg" && cpack --config "$build/CPackConfig.cmake" >"$work/cpack.log" 2>&1) || {
  tail -30 "$work/cpack.log"; fail "cpack failed (log above)"; }
tgz=$(ls "$work"/pkg/ncclrec-*.tar.gz) deb=$(ls "$work"/pkg/ncclrec_*.deb)
say "cpack: $(basename "$tgz") $(du -h "$tgz" | cut -f1), $(basename "$deb") $(du -h "$deb" | cut -f1), in $(( $(date +%s) - t )) s"

# A fresh root from the cache, with /proc, /dev and /sys (cxxrun and the shim read /proc).
new_root() {
  local dir=$1
  mkdir -p "$dir" && tar -C "$dir" -xf "$root_tar"
  for m in proc dev sys; do mount --bind "/$m" "$dir/$m" && mounted+=("$dir/$m"); done
  # A program in the root must find nothing of the build machine's.
  if chroot "$dir" sh -c 'ls /usr/lib/x86_64-linux-gnu/libprotobuf* /usr/lib/x86_64-linux-gnu/libdw.so* /usr/lib/libgloo* 2>/dev/null' | grep -q .; then
    fail "the minimal root already has protobuf, libdw or gloo"
  fi
  mkdir -p "$dir/tmp/golden" && cp "$src"/tests/data/rank_gated_collective/*.ncclrec.pb "$dir/tmp/golden/"
}

# The checks, in the root `dir`, on the tools installed under `prefix` (in the root), with
# LD_PRELOAD=`preload`.
check_tree() {
  local dir=$1 prefix=$2 preload=$3 out rc
  for tool in ncclrec-analyze ncclrec-top ncclrec-watch ncclrec-exporter cxxrun; do
    out=$(chroot "$dir" "$prefix/bin/$tool" --version) || fail "$prefix/bin/$tool --version failed: $out"
    [[ $out =~ ^$tool\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [0-9a-z-]+\)$ ]] || fail "$tool --version printed '$out'"
  done
  say "$prefix: $out"
  # A golden dump directory: the verdict of tests/data/rank_gated_collective/expected.json.
  rc=0; out=$(chroot "$dir" "$prefix/bin/ncclrec-analyze" --json /tmp/golden) || rc=$?
  [ "$rc" -eq 3 ] || fail "ncclrec-analyze on the golden dumps exited $rc (want 3): $out"
  grep -q '"class": *"rank_gated_collective"' <<<"$out" || fail "golden verdict is not rank_gated_collective: $out"
  grep -q '"line": *44' <<<"$out" || fail "golden verdict lacks the call site scenario.cc:44: $out"
  say "$prefix: ncclrec-analyze on the golden dumps: rank_gated_collective at scenario.cc:44"
  # samples/gated_save: 4 ranks on the bundled hostnccl, recorded, dumped, analyzed.
  rc=0
  out=$(chroot "$dir" env -C /tmp LD_PRELOAD="$preload" NCCLREC_DIR=/tmp/dumps \
        NCCLREC_TIMEOUT=2 NCCLREC_DEBUG=INFO NCCLREC_DEBUG_SUBSYS=INIT \
        "$prefix/bin/cxxrun" --standalone --nproc-per-node 4 --nccl=host --run-id gs \
        "$prefix/lib/ncclrec/samples/sample_gated_save" 2>&1) || rc=$?
  [ "$rc" -eq 3 ] || fail "cxxrun on sample_gated_save exited $rc (want 3): $out"
  grep -q "cxxrun: NCCL: hostnccl from $prefix/lib/ncclrec/hostnccl" <<<"$out" ||
    fail "cxxrun did not use the bundled hostnccl: $out"
  grep -q "libncclrec.so [0-9.]* (git " <<<"$out" || fail "the shim did not log its version: $out"
  grep -q "^rank_gated_collective: rank 0 alone .*saveCheckpoint()" <<<"$out" ||
    fail "cxxrun's verdict is not rank 0's gated all-reduce in saveCheckpoint(): $out"
  rc=0; out=$(chroot "$dir" "$prefix/bin/ncclrec-analyze" --json /tmp/dumps/gs/attempt_0) || rc=$?
  [ "$rc" -eq 3 ] || fail "ncclrec-analyze on the sample's dumps exited $rc (want 3): $out"
  grep -q '"function": *"saveCheckpoint"' <<<"$out" || fail "sample verdict does not name saveCheckpoint: $out"
  grep -q '"file": *"[^"]*main.cc"' <<<"$out" || fail "sample verdict has no file:line (libdw): $out"
  say "$prefix: sample_gated_save under cxxrun + libncclrec.so + hostnccl: rank_gated_collective in saveCheckpoint()"
}

# 1. The tarball, unpacked under /opt (its top directory renamed: it runs from anywhere).
t=$(date +%s)
new_root "$work/tgz-root"
tar -C "$work/tgz-root/opt" -xzf "$tgz" && mv "$work"/tgz-root/opt/ncclrec-* "$work/tgz-root/opt/ncclrec"
check_tree "$work/tgz-root" /opt/ncclrec /opt/ncclrec/lib/libncclrec.so
say "tarball checks in $(( $(date +%s) - t )) s"

# 2. The .deb, with its Depends from the mirror (apt's downloads cached between runs).
t=$(date +%s)
new_root "$work/deb-root"
mount --bind "$cache/apt-archives" "$work/deb-root/var/cache/apt/archives" &&
  mounted+=("$work/deb-root/var/cache/apt/archives")
cp "$deb" "$work/deb-root/tmp/ncclrec.deb"
chroot "$work/deb-root" dpkg -i /tmp/ncclrec.deb >"$work/dpkg.log" 2>&1 || true
export DEBIAN_FRONTEND=noninteractive
if ! chroot "$work/deb-root" apt-get -f install -y -qq >>"$work/dpkg.log" 2>&1; then
  # The cached package lists may be stale: refresh them once.
  chroot "$work/deb-root" apt-get update -qq >>"$work/dpkg.log" 2>&1 &&
    chroot "$work/deb-root" apt-get -f install -y -qq >>"$work/dpkg.log" 2>&1 || {
    tail -30 "$work/dpkg.log"; fail "installing the .deb's dependencies failed (log above)"; }
fi
chroot "$work/deb-root" dpkg-query -W -f='${Status}' ncclrec | grep -q "install ok installed" || {
  tail -30 "$work/dpkg.log"; fail "the .deb is not installed (log above)"; }
[ ! -e "$work/deb-root/usr/lib/libnccl.so.2" ] || fail "the .deb put a libnccl.so.2 on the default path"
check_tree "$work/deb-root" /usr libncclrec.so  # the bare name: /usr/lib is a default path
say "deb checks in $(( $(date +%s) - t )) s"
say "PASS in $(( $(date +%s) - start )) s"
