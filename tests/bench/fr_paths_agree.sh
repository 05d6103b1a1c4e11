#!/usr/bin/env bash
# The direct conversion of a pickled Flight Recorder dump (parseFlightRecorder: memoized strings,
# frames and entry keys recognized by node) must give the same model as the pickle expanded to a
# JSON document and converted from that (no node identity used): for every scenario of
# gen_fr_dumps.py, every rank, pickle protocols 2 and 4. ncclrec_fr_load_bench compares the two
# (events, stacks, communicators) before timing anything; no benchmark is run here.
#
# Usage: fr_paths_agree.sh BENCH_BINARY
# Exit status: 0 every dump agreed; 1 one did not, or a dump could not be made (named on stderr).
set -u
bench=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$(mktemp -d "${TMPDIR:-/tmp}/ncclrec-fr-agree-XXXXXX")" || exit 1
trap 'rm -rf "${dir}"' EXIT
checked=0
for scenario in healthy gated size_mismatch dtype_mismatch p2p_ring p2p_skip coalesced \
                missing_rank multi_pg ring_wrap; do
  for protocol in 2 4; do
    out="${dir}/${scenario}_${protocol}"
    /usr/bin/python3 "${here}/../tools/gen_fr_dumps.py" "${scenario}" "${out}" --ranks 4 \
      --protocol "${protocol}" >/dev/null ||
      { echo "fr_paths_agree.sh: the generator failed on ${scenario}" >&2; exit 1; }
    for f in "${out}"/nccl_trace_rank_*; do
      # The bench says why on stderr; google-benchmark adds a line there for the empty filter.
      why="$("${bench}" "${f}" --benchmark_filter='^$' 2>&1 >/dev/null)" || {
        echo "fr_paths_agree.sh: ${scenario}, protocol ${protocol}: ${why}" >&2
        exit 1
      }
      checked=$((checked + 1))
    done
  done
done
echo "fr_paths_agree.sh: ${checked} dumps: the direct and the JSON-document conversions agree"
