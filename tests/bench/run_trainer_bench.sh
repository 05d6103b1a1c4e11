#!/usr/bin/env bash
# The flight recorder's cost to a real training loop: ncclrec-trainer with 4 ranks on hostnccl
# under cxxrun, without and with LD_PRELOAD=libncclrec.so, alternating (ABBA) in one run of this
# script, and the ratio of the median step times. See docs/performance.md.
#
# Usage: run_trainer_bench.sh [--build DIR] [--ranks N] [--steps N] [--rounds N] [-- ARGS...]
#   --build   the build directory holding bin/cxxrun, bin/ncclrec-trainer, lib/libncclrec.so
#             (default: build/ of this tree)
#   --ranks   workers (default 4)
#   --steps   optimizer steps per run (default 500; the trainer leaves the first 5 out)
#   --rounds  rounds of one run without and one with the shim (default 5)
#   ARGS      extra ncclrec-trainer flags for every run
# Exit status: 0 every run finished and printed its step time; 1 one did not (its output is
# shown); 2 bad usage. Timings are reported, never judged.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${here}/../../build"
ranks=4
steps=500
rounds=5
extra=()

usage() { sed -n '6,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
die_usage() { echo "run_trainer_bench.sh: $1" >&2; usage; exit 2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) [[ $# -ge 2 ]] || die_usage "--build needs a directory"; build="$2"; shift 2 ;;
    --ranks) [[ $# -ge 2 ]] || die_usage "--ranks needs a number"; ranks="$2"; shift 2 ;;
    --steps) [[ $# -ge 2 ]] || die_usage "--steps needs a number"; steps="$2"; shift 2 ;;
    --rounds) [[ $# -ge 2 ]] || die_usage "--rounds needs a number"; rounds="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
for n in "${ranks}" "${steps}" "${rounds}"; do
  [[ "${n}" =~ ^[1-9][0-9]*$ ]] || die_usage "--ranks, --steps and --rounds must be >= 1, not '${n}'"
done
[[ -d "${build}" ]] || die_usage "no build directory '${build}'"
build="$(cd "${build}" && pwd)"
cxxrun="${build}/bin/cxxrun"
trainer="${build}/bin/ncclrec-trainer"
shim="${build}/lib/libncclrec.so"
for f in "${cxxrun}" "${trainer}" "${shim}"; do
  [[ -e "${f}" ]] || die_usage "no ${f} (build cxxrun, ncclrec-trainer, ncclrec_interpose and ncclrec_dump)"
done

dir="$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-trainer-bench-XXXXXX")" || exit 1
trap 'rm -rf "${dir}"' EXIT

# One run; prints its median step time in ms (rank 0's "done:" line), or fails with its output.
run() {
  local mode=$1 round=$2 out
  local -a env=()
  if [[ ${mode} == shim ]]; then
    env=(LD_PRELOAD="${shim}")
  fi
  out="$(cd "${dir}" && env "${env[@]}" NCCLREC_DIR="${dir}/dumps" \
           "${cxxrun}" --standalone --nproc-per-node "${ranks}" --nccl=host \
           --run-id "bench-${mode}-${round}" "${trainer}" --steps "${steps}" --eval-every 0 \
           --log-every "${steps}" "${extra[@]}" 2>&1)"
  local rc=$?
  local ms
  ms="$(sed -n 's/.*step time median \([0-9.]*\) ms.*/\1/p' <<< "${out}")"
  if [[ ${rc} -ne 0 || -z "${ms}" ]]; then
    echo "run_trainer_bench.sh: run ${round} (${mode}) failed (exit ${rc}); its output:" >&2
    echo "${out}" >&2
    return 1
  fi
  echo "${ms}"
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

plain=()
shimmed=()
printf '%-7s %14s %14s %8s\n' round "without (ms)" "with (ms)" ratio
for ((r = 1; r <= rounds; r++)); do
  # ABBA: the order alternates so that a drift in the machine's load favours neither.
  if ((r % 2)); then order=(plain shim); else order=(shim plain); fi
  declare -A got=()
  for mode in "${order[@]}"; do
    got[${mode}]="$(run "${mode}" "${r}")" || exit 1
  done
  plain+=("${got[plain]}")
  shimmed+=("${got[shim]}")
  printf '%-7s %14s %14s %8.4f\n' "${r}" "${got[plain]}" "${got[shim]}" \
    "$(awk -v a="${got[shim]}" -v b="${got[plain]}" 'BEGIN { print a / b }')"
  unset got
done
p="$(printf '%s\n' "${plain[@]}" | median)"
s="$(printf '%s\n' "${shimmed[@]}" | median)"
printf '%-7s %14s %14s %8.4f\n' median "${p}" "${s}" "$(awk -v a="${s}" -v b="${p}" 'BEGIN { print a / b }')"
echo
echo "  ncclrec-trainer, ${ranks} ranks on hostnccl, ${steps} steps per run (median step time of"
echo "  each run, first 5 steps left out); ratio = with libncclrec.so / without; $(nproc) CPUs"
