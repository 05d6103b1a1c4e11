#!/usr/bin/env bash
# Installs the Debian 12 packages ncclrec builds and tests with, skipping those already installed.
# Needs root or sudo. Cheap to rerun: with everything present it only runs dpkg-query.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libprotobuf-dev protobuf-compiler
  libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libunwind8 libdw-dev
  libgloo-dev
  libtorch-dev
  libncurses-dev tmux
  python3-torch openmpi-bin slurm-wlm
  python3-build python3-wheel python3-setuptools python3-venv
  prometheus-cpp-dev prometheus curl
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
