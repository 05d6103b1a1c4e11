#!/usr/bin/env bash
# The metrics endpoint's CPU cost on RANKS synthetic live ranks scraped every EVERY seconds
# (docs/performance.md, "Metrics endpoint"): the writer (ncclrec_top_bench_writer) keeps RANKS
# black boxes live in a temporary directory (each rank calls an all-reduce RATE times a second and
# stamps its heartbeat), ncclrec-exporter serves them on a free localhost port, and this script
# GETs /metrics SCRAPES times, EVERY seconds apart, after a first scrape (which maps every file).
# The exporter's CPU time is the sum over its threads of /proc/PID/task/*/schedstat (ns on a CPU).
# Prints the first scrape's CPU, then for the scrapes after it: CPU per scrape, the share of one
# core over the whole window (the figure the target is about: <= 1 %), the answer's size and the
# exporter's own ncclrec_exporter_collect_seconds.
#
# Usage: run_metrics_bench.sh [--exporter PATH] [--writer PATH] [--ranks N] [--scrapes K]
#                             [--every S] [--rate R]
#   --exporter  ncclrec-exporter (default: build/bin/ncclrec-exporter of this tree)
#   --writer    ncclrec_top_bench_writer (default: beside --exporter)
#   --ranks     black boxes (default 1024); --scrapes after the first (default 8)
#   --every     seconds between scrapes (default 15); --rate all-reduces/s per rank (default 10)
# Exit status: 0 the figures were printed; 1 they could not be measured; 2 bad usage. The target
# is reported, never judged.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exporter="${here}/../../build/bin/ncclrec-exporter"
writer=""
ranks=1024
scrapes=8
every=15
rate=10

usage() { sed -n '12,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; }
die_usage() { echo "run_metrics_bench.sh: $1" >&2; usage; exit 2; }
number='^[0-9]*\.?[0-9]+$'

while [[ $# -gt 0 ]]; do
  case "$1" in
    --exporter) [[ $# -ge 2 ]] || die_usage "--exporter needs a path"; exporter="$2"; shift 2 ;;
    --writer) [[ $# -ge 2 ]] || die_usage "--writer needs a path"; writer="$2"; shift 2 ;;
    --ranks) [[ $# -ge 2 ]] || die_usage "--ranks needs a count"; ranks="$2"; shift 2 ;;
    --scrapes) [[ $# -ge 2 ]] || die_usage "--scrapes needs a count"; scrapes="$2"; shift 2 ;;
    --every) [[ $# -ge 2 ]] || die_usage "--every needs seconds"; every="$2"; shift 2 ;;
    --rate) [[ $# -ge 2 ]] || die_usage "--rate needs calls/s"; rate="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done
[[ -n "${writer}" ]] || writer="$(dirname "${exporter}")/ncclrec_top_bench_writer"
[[ -x "${exporter}" ]] || die_usage "no exporter at '${exporter}' (build target ncclrec-exporter)"
[[ -x "${writer}" ]] || die_usage "no writer at '${writer}' (build target ncclrec_top_bench_writer)"
[[ "${ranks}" =~ ^[1-9][0-9]*$ ]] || die_usage "--ranks must be >= 1, not '${ranks}'"
[[ "${scrapes}" =~ ^[1-9][0-9]*$ ]] || die_usage "--scrapes must be >= 1, not '${scrapes}'"
for v in "${every}" "${rate}"; do [[ "${v}" =~ ${number} ]] || die_usage "'${v}' is not a number"; done
command -v curl > /dev/null || { echo "run_metrics_bench.sh: curl is needed" >&2; exit 1; }

dir="$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-metrics-bench-XXXXXX")" || exit 1
writer_pid=""
exporter_pid=""
cleanup() {
  [[ -n "${exporter_pid}" ]] && kill "${exporter_pid}" 2> /dev/null && wait "${exporter_pid}" 2> /dev/null
  [[ -n "${writer_pid}" ]] && kill "${writer_pid}" 2> /dev/null && wait "${writer_pid}" 2> /dev/null
  rm -rf "${dir}"
}
trap cleanup EXIT

seconds="$(awk -v k="${scrapes}" -v s="${every}" 'BEGIN { print k * s + 60 }')"
"${writer}" --dir "${dir}/boxes" --ranks "${ranks}" --rate "${rate}" --seconds "${seconds}" \
  > "${dir}/writer.out" 2>&1 &
writer_pid=$!
for ((i = 0; i < 600; i++)); do
  grep -q '^ready' "${dir}/writer.out" 2> /dev/null && break
  kill -0 "${writer_pid}" 2> /dev/null || break
  sleep 0.1
done
grep -q '^ready' "${dir}/writer.out" || { cat "${dir}/writer.out" >&2; echo "run_metrics_bench.sh: the writer did not start" >&2; exit 1; }

env -u NCCLREC_METRICS_TEXTFILE "${exporter}" --dir "${dir}/boxes" --port 127.0.0.1:0 \
  > /dev/null 2> "${dir}/exporter.err" &
exporter_pid=$!
url=""
for ((i = 0; i < 100; i++)); do
  url="$(grep -o 'http://[^ ]*/metrics' "${dir}/exporter.err" 2> /dev/null)"
  [[ -n "${url}" ]] && break
  kill -0 "${exporter_pid}" 2> /dev/null || break
  sleep 0.1
done
[[ -n "${url}" ]] || { cat "${dir}/exporter.err" >&2; echo "run_metrics_bench.sh: the exporter did not start" >&2; exit 1; }
echo "${ranks} black boxes in ${dir}/boxes ($(du -sh "${dir}/boxes" | cut -f1)), ${rate} all-reduces/s per rank; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

# CPU ns of every thread of the exporter so far.
cpu_ns() { cat /proc/"${exporter_pid}"/task/*/schedstat 2> /dev/null | awk '{ s += $1 } END { printf "%.0f", s }'; }
scrape() { curl -sf --max-time 30 -o "${dir}/last.txt" -w '%{size_download}' "${url}"; }

before="$(cpu_ns)"
size="$(scrape)" || { echo "run_metrics_bench.sh: the first scrape failed" >&2; exit 1; }
first="$(cpu_ns)"
start="$(date +%s.%N)"
for ((k = 1; k <= scrapes; k++)); do
  sleep "${every}"
  size="$(scrape)" || { echo "run_metrics_bench.sh: scrape ${k} failed" >&2; exit 1; }
done
end_cpu="$(cpu_ns)"
end="$(date +%s.%N)"
collect="$(sed -n 's/^ncclrec_exporter_collect_seconds \([0-9.]*\)$/\1/p' "${dir}/last.txt")"
series="$(grep -vc '^#' "${dir}/last.txt")"
awk -v b="${before}" -v f="${first}" -v e="${end_cpu}" -v t0="${start}" -v t1="${end}" \
    -v k="${scrapes}" -v s="${every}" -v size="${size}" -v series="${series}" -v c="${collect}" 'BEGIN {
  printf "first scrape: %.1f ms CPU (maps every black box)\n", (f - b) / 1e6
  printf "%d scrapes every %s s: %.1f ms CPU per scrape, %.3f %% of one core over %.0f s (target <= 1 %%: %s)\n",
    k, s, (e - f) / 1e6 / k, 100 * (e - f) / 1e9 / (t1 - t0), t1 - t0,
    (100 * (e - f) / 1e9 / (t1 - t0) <= 1 ? "met" : "NOT met")
  printf "answer: %d bytes, %d series; ncclrec_exporter_collect_seconds %s\n", size, series, c
}'
