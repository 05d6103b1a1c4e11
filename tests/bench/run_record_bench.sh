#!/usr/bin/env bash
# Runs ncclrec_record_bench once per recorder configuration (the recorder reads NCCLREC_* once per
# process) and prints one table: config, threads, direct ns, wrapped ns, added ns, ratio, CUDA
# driver calls per op. Then once more for the cost of a dlsym through the shim: lookup, libc's
# dlsym ns, the shim's, ratio. See docs/performance.md.
#
# Usage: run_record_bench.sh [--bench PATH] [--fake-cuda PATH] [--min-time SECONDS]
#                            [--repetitions N] [-- ARGS...]
#   --bench        the benchmark binary (default: build/bin/ncclrec_record_bench of this tree)
#   --fake-cuda    the fake CUDA driver for the CUDA-marker configs (default:
#                  build/fakecuda/libcuda.so.1 of this tree; without it those configs are skipped)
#   --min-time     --benchmark_min_time per benchmark and repetition (default 0.5)
#   --repetitions  repetitions per benchmark; the table shows the median (default 5)
#   ARGS           GoogleBenchmark flags passed to the record runs (a filter must keep both)
# Exit status: 0 every configuration ran and printed its rows; 1 one did not (its output is
# shown); 2 bad usage. Timings are reported, never judged.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bench="${here}/../../build/bin/ncclrec_record_bench"
fake_cuda="${here}/../../build/fakecuda/libcuda.so.1"
min_time=0.5
repetitions=5
extra=()

usage() { sed -n '7,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
die_usage() { echo "run_record_bench.sh: $1" >&2; usage; exit 2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --bench) [[ $# -ge 2 ]] || die_usage "--bench needs a path"; bench="$2"; shift 2 ;;
    --fake-cuda) [[ $# -ge 2 ]] || die_usage "--fake-cuda needs a path"; fake_cuda="$2"; shift 2 ;;
    --min-time) [[ $# -ge 2 ]] || die_usage "--min-time needs seconds"; min_time="$2"; shift 2 ;;
    --repetitions) [[ $# -ge 2 ]] || die_usage "--repetitions needs a count"; repetitions="$2"
                   shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
[[ -x "${bench}" ]] || die_usage "no benchmark binary at '${bench}' (build ncclrec_record_bench)"
[[ "${min_time}" =~ ^[0-9]*\.?[0-9]+$ ]] || die_usage "--min-time must be seconds, not '${min_time}'"
[[ "${repetitions}" =~ ^[1-9][0-9]*$ ]] || die_usage "--repetitions must be >= 1, not '${repetitions}'"

dir="$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-bench-XXXXXX")" || exit 1
trap 'rm -rf "${dir}"' EXIT

# name | environment of the run (on top of the common settings below)
configs=(
  "pass-through (NCCLREC_DISABLE=1)|NCCLREC_DISABLE=1"
  "no stacks (STACK_DEPTH=0)|NCCLREC_STACK_DEPTH=0"
  "16 frames, libunwind|NCCLREC_STACK_DEPTH=16 NCCLREC_UNWIND=libunwind"
  "16 frames, fp|NCCLREC_STACK_DEPTH=16 NCCLREC_UNWIND=fp"
)
# CUDA markers through the fake driver (tests/support/fake_cuda.cc: a mutex and a hash lookup per
# call, not a GPU driver's cost): what counts is the driver calls per op. No stacks, so the
# markers' cost stands alone against "no stacks"; a 1 ms poll keeps the marker pool from running
# dry at this call rate.
if [[ -r "${fake_cuda}" ]]; then
  for mode in cuda cuda-full; do
    configs+=("markers, ${mode}|NCCLREC_STACK_DEPTH=0 NCCLREC_COMPLETION=${mode} \
NCCLREC_CUDA_LIBRARY=${fake_cuda} NCCLREC_POLL_MS=1")
  done
else
  echo "run_record_bench.sh: no fake CUDA driver at '${fake_cuda}': CUDA-marker configs skipped" >&2
fi

rows=()
notes=()
status=0
for entry in "${configs[@]}"; do
  name="${entry%%|*}"
  read -r -a vars <<< "${entry#*|}"
  run_dir="${dir}/run${#rows[@]}"
  # Host completion (the stub has no stream) and no exit dump: only the record path is timed.
  out="$(env NCCLREC_DISABLE=0 NCCLREC_STACK_DEPTH=16 NCCLREC_UNWIND=auto \
           NCCLREC_COMPLETION=host NCCLREC_DUMP_ON_EXIT=0 NCCLREC_DIR="${run_dir}" "${vars[@]}" \
           "${bench}" --benchmark_min_time="${min_time}" --benchmark_repetitions="${repetitions}" \
           --benchmark_enable_random_interleaving=true '--benchmark_filter=^(direct|wrapped)/' \
           "${extra[@]}" 2>&1)"
  rc=$?
  config_line="$(grep '^ncclrec-bench: recording=' <<< "${out}")"
  lines="$(grep '^ncclrec-bench: threads=' <<< "${out}")"
  if [[ ${rc} -ne 0 || -z "${config_line}" || $(grep -c . <<< "${lines}") -lt 2 ]]; then
    echo "run_record_bench.sh: configuration '${name}' failed (exit ${rc}); its output:" >&2
    echo "${out}" >&2
    status=1
    continue
  fi
  notes+=("${name}: ${config_line#ncclrec-bench: }")
  while read -r line; do
    declare -A f=()
    for kv in ${line#ncclrec-bench: }; do f["${kv%%=*}"]="${kv#*=}"; done
    calls=-
    [[ "${config_line}" =~ driver_calls_per_op=([0-9.]+)\ cuda_timed=([0-9.]+) && \
       "${f[threads]}" == 1 ]] && calls="${BASH_REMATCH[1]}/${BASH_REMATCH[2]}"
    rows+=("$(printf '%-34s %7s %10s %11s %9s %7s %12s' "${name}" "${f[threads]}" \
      "${f[direct_ns]}" "${f[wrapped_ns]}" "${f[added_ns]}" "${f[ratio]}" "${calls}")")
    unset f
  done <<< "${lines}"
done

echo
printf '%-34s %7s %10s %11s %9s %7s %12s\n' config threads "direct ns" "wrapped ns" \
  "added ns" ratio "drv/op/timed"
# Single-thread rows first, then the contended ones.
for r in "${rows[@]}"; do [[ "$(awk '{print $(NF-5)}' <<< "${r}")" == 1 ]] && echo "${r}"; done
for r in "${rows[@]}"; do [[ "$(awk '{print $(NF-5)}' <<< "${r}")" != 1 ]] && echo "${r}"; done

# dlsym: one process, recording off (lookups never record).
out="$(env NCCLREC_DISABLE=1 NCCLREC_DIR="${dir}/dlsym" "${bench}" \
         --benchmark_min_time="${min_time}" --benchmark_repetitions="${repetitions}" \
         --benchmark_enable_random_interleaving=true '--benchmark_filter=^dlsym_' 2>&1)"
rc=$?
lines="$(grep '^ncclrec-bench: dlsym ' <<< "${out}")"
if [[ ${rc} -ne 0 || $(grep -c . <<< "${lines}") -lt 3 ]]; then
  echo "run_record_bench.sh: the dlsym run failed (exit ${rc}); its output:" >&2
  echo "${out}" >&2
  status=1
else
  echo
  printf '%-34s %10s %11s %9s %7s\n' "dlsym lookup" "libc ns" "shim ns" "added ns" ratio
  while read -r line; do
    declare -A f=()
    for kv in ${line#ncclrec-bench: dlsym }; do f["${kv%%=*}"]="${kv#*=}"; done
    printf '%-34s %10s %11s %9s %7s\n' "${f[lookup]}" "${f[direct_ns]}" "${f[hooked_ns]}" \
      "${f[added_ns]}" "${f[ratio]}"
    unset f
  done <<< "${lines}"
fi

echo
for n in "${notes[@]}"; do echo "  ${n}"; done
echo "  CPU ns per call, median of ${repetitions} repetition(s) of ${min_time} s; $(nproc) CPUs"
exit ${status}
