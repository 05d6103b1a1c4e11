#!/usr/bin/env bash
# ncclrec-top's refresh rate and CPU use on RANKS synthetic ranks (docs/performance.md): the
# writer (ncclrec_top_bench_writer) keeps RANKS black boxes live in a temporary directory (each
# rank calls an all-reduce RATE times a second and stamps its heartbeat), and
# `ncclrec-top --bench SECONDS` collects and draws at INTERVAL on them, then prints the refreshes
# per second and its CPU use from getrusage. A second run measures the same files once the
# writer stopped (a hung job: nothing changes).
#
# Usage: run_top_bench.sh [--top PATH] [--writer PATH] [--ranks N] [--seconds S]
#                         [--interval S] [--rate R] [--snapshot-every S]
#   --top       ncclrec-top (default: build/bin/ncclrec-top of this tree)
#   --writer    ncclrec_top_bench_writer (default: beside --top)
#   --ranks     black boxes (default 1024); --seconds per run (default 10)
#   --interval  ncclrec-top's --interval (default 0.5); --rate all-reduces/s per rank (default 10)
#   --snapshot-every  seconds between fresh 16-thread snapshots of every rank (default 0: one
#               at the start, as after a dump)
# Exit status: 0 both runs printed their figures; 1 one did not; 2 bad usage. The targets
# (>= 2 refreshes/s, <= 5 % of one core at 1024 ranks) are reported, never judged.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
top="${here}/../../build/bin/ncclrec-top"
writer=""
ranks=1024
seconds=10
interval=0.5
rate=10
snapshot_every=0

usage() { sed -n '9,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
die_usage() { echo "run_top_bench.sh: $1" >&2; usage; exit 2; }
number='^[0-9]*\.?[0-9]+$'

while [[ $# -gt 0 ]]; do
  case "$1" in
    --top) [[ $# -ge 2 ]] || die_usage "--top needs a path"; top="$2"; shift 2 ;;
    --writer) [[ $# -ge 2 ]] || die_usage "--writer needs a path"; writer="$2"; shift 2 ;;
    --ranks) [[ $# -ge 2 ]] || die_usage "--ranks needs a count"; ranks="$2"; shift 2 ;;
    --seconds) [[ $# -ge 2 ]] || die_usage "--seconds needs seconds"; seconds="$2"; shift 2 ;;
    --interval) [[ $# -ge 2 ]] || die_usage "--interval needs seconds"; interval="$2"; shift 2 ;;
    --rate) [[ $# -ge 2 ]] || die_usage "--rate needs calls/s"; rate="$2"; shift 2 ;;
    --snapshot-every) [[ $# -ge 2 ]] || die_usage "--snapshot-every needs seconds"; snapshot_every="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
[[ -n "${writer}" ]] || writer="$(dirname "${top}")/ncclrec_top_bench_writer"
[[ -x "${top}" ]] || die_usage "no ncclrec-top at '${top}' (build target ncclrec-top)"
[[ -x "${writer}" ]] || die_usage "no writer at '${writer}' (build target ncclrec_top_bench_writer)"
[[ "${ranks}" =~ ^[1-9][0-9]*$ ]] || die_usage "--ranks must be >= 1, not '${ranks}'"
for v in "${seconds}" "${interval}" "${rate}" "${snapshot_every}"; do
  [[ "${v}" =~ ${number} ]] || die_usage "'${v}' is not a number"
done

dir="$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-top-bench-XXXXXX")" || exit 1
writer_pid=""
cleanup() {
  [[ -n "${writer_pid}" ]] && kill "${writer_pid}" 2> /dev/null && wait "${writer_pid}" 2> /dev/null
  rm -rf "${dir}"
}
trap cleanup EXIT

# The writer runs for both measurements plus setup; it is stopped before the second one.
"${writer}" --dir "${dir}/boxes" --ranks "${ranks}" --rate "${rate}" \
  --snapshot-every "${snapshot_every}" \
  --seconds "$(awk -v s="${seconds}" 'BEGIN { print 2 * s + 60 }')" > "${dir}/writer.out" 2>&1 &
writer_pid=$!
for ((i = 0; i < 600; i++)); do
  grep -q '^ready' "${dir}/writer.out" 2> /dev/null && break
  kill -0 "${writer_pid}" 2> /dev/null || break
  sleep 0.1
done
grep -q '^ready' "${dir}/writer.out" || { cat "${dir}/writer.out" >&2; echo "run_top_bench.sh: the writer did not start" >&2; exit 1; }
echo "${ranks} black boxes in ${dir}/boxes ($(du -sh "${dir}/boxes" | cut -f1)); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

status=0
measure() {
  local name=$1 line
  line="$("${top}" --bench "${seconds}" --interval "${interval}" "${dir}/boxes" 2>&1)"
  if ! grep -q '^ncclrec-top bench: ' <<< "${line}"; then
    echo "run_top_bench.sh: ${name}: no figures; its output:" >&2
    echo "${line}" >&2
    status=1
    return
  fi
  echo "${name}: ${line#ncclrec-top bench: }"
  local hz cpu
  hz="$(sed -E 's/.*rate_hz=([0-9.]+).*/\1/' <<< "${line}")"
  cpu="$(sed -E 's/.*cpu_pct=([0-9.]+).*/\1/' <<< "${line}")"
  awk -v hz="${hz}" -v cpu="${cpu}" -v n="${name}" 'BEGIN {
    printf "  %s: %.2f refreshes/s (target >= 2: %s), %.2f %% of one core (target <= 5: %s)\n",
      n, hz, (hz >= 2 ? "met" : "NOT met"), cpu, (cpu <= 5 ? "met" : "NOT met") }'
}

measure "live (${rate} all-reduces/s per rank)"
kill "${writer_pid}" 2> /dev/null
wait "${writer_pid}" 2> /dev/null
writer_pid=""
measure "still (writer stopped)"
exit ${status}
