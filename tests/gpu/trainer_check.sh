#!/usr/bin/env bash
# Check 5 of run_checks.sh: builds ncclrec-trainer on the GPU machine against its PyTorch's
# LibTorch and NCCL (only the trainer's sources; CLI11's headers and libncclrec_format_core.a, for
# --version, come in the bundle), then runs it
# on cuda:0 without and with the shim, alternating (ABBA), and prints the ratio of the median step
# times. Prints "trainer ratio R" last; exits 1 when it cannot build or run.
#   trainer_check.sh BUNDLE WORK_DIR [ROUNDS] [STEPS] [TRAINER_ARGS...]
set -uo pipefail
bundle=$(realpath "$1") work=$2 rounds=${3:-3} steps=${4:-400}
extra=("${@:5}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
torch_dir=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))') || exit 1
abi=$(python3 -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))') || exit 1
nccl_dir=$(dirname "$(find / -name 'libnccl.so.2' -path '*nvidia/nccl*' 2>/dev/null | head -1)")
mkdir -p "$work/obj"
srcs="bucket_plan checkpoint_file grad_comm injection nccl_setup options progress sampler step_sync ddp train main"
printf '%s\n' $srcs | xargs -P "$(nproc)" -I{} g++ -std=c++20 -O2 -g -fno-omit-frame-pointer \
  -D_GLIBCXX_USE_CXX11_ABI="$abi" -I"$repo" -I"$repo/third_party/nccl" -I"$bundle/include" \
  -isystem "$torch_dir/include" -isystem "$torch_dir/include/torch/csrc/api/include" \
  -c "$repo/trainer/{}.cc" -o "$work/obj/{}.o" || { echo "trainer: compile failed"; exit 1; }
g++ -o "$work/ncclrec-trainer" "$work"/obj/*.o -L"$torch_dir/lib" -Wl,-rpath,"$torch_dir/lib" \
  -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -ltorch_cuda -lc10_cuda -Wl,--as-needed \
  "$bundle/lib/libncclrec_format_core.a" -L"$nccl_dir" -l:libnccl.so.2 -Wl,-rpath,"$nccl_dir" -lpthread -ldl || { echo "trainer: link failed"; exit 1; }
run() {  # run direct|shim ROUND: prints the median step time in ms
  local pre=""
  [[ $1 == shim ]] && pre=$bundle/lib/libncclrec.so
  local out
  out=$(cd "$work" && LD_PRELOAD=$pre NCCLREC_DIR="$work/rec-$1" \
        NCCLREC_RUN_ID="trainer-$1-$2" ./ncclrec-trainer --device cuda --steps "$steps" \
        --eval-every 0 --log-every "$steps" "${extra[@]}" 2>&1)
  echo "$1 $(grep 'done:' <<< "$out")" >&2
  sed -n 's/.*step time median \([0-9.]*\) ms.*/\1/p' <<< "$out"
}
direct=() shim=()
for r in $(seq "$rounds"); do
  direct+=("$(run direct "$r")") shim+=("$(run shim "$r")") shim+=("$(run shim "$r")")
  direct+=("$(run direct "$r")")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
d=$(median "${direct[@]}") s=$(median "${shim[@]}")
[[ -n $d && -n $s ]] || { echo "trainer: a run printed no step time"; exit 1; }
"$bundle/bin/ncclrec-analyze" --events --last 3 "$work/rec-shim" 2>&1 |
  tail -4 | cut -c1-150
echo "trainer median step time: direct $d ms, shim $s ms ($((2 * rounds)) runs each)"
echo "trainer ratio $(awk -v a="$s" -v b="$d" 'BEGIN {printf "%.3f", a / b}')"
