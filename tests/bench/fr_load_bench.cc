// Reading one PyTorch Flight Recorder dump into the model (docs/performance.md): the pickle decoded
// and converted directly (parseFlightRecorder) against the same pickle expanded to a JSON document
// first and converted from that (parsePickle + flightRecorderToModel, how the reader worked
// before). Both read the same bytes in one run; the summary prints ns per entry and the ratio.
//
// Usage: ncclrec_fr_load_bench DUMP_FILE [GoogleBenchmark flags]
//   DUMP_FILE  a pickled Flight Recorder dump, e.g. from tests/tools/gen_fr_dumps.py
// Exit status: 0 both ran; 1 the file cannot be read or converted (one line says why); 2 usage.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "format/flight_recorder.h"
#include "format/pickle_reader.h"

namespace {

using ncclrec::base::StatusOr;
using ncclrec::format::RankData;

std::string gBytes;
std::string gPath;
size_t gEntries = 0;

StatusOr<RankData> direct() {
  return ncclrec::format::parseFlightRecorder(gBytes.data(), gBytes.size(), gPath, 0);
}

StatusOr<RankData> viaJson() {
  auto doc = ncclrec::format::parsePickle(gBytes.data(), gBytes.size(), gPath);
  if (!doc.ok()) return doc.status();
  return ncclrec::format::flightRecorderToModel(*doc, gPath, 0);
}

template <StatusOr<RankData> (*Load)()>
void run(benchmark::State& state) {
  for (auto _ : state) {
    StatusOr<RankData> data = Load();
    benchmark::DoNotOptimize(data);
  }
  state.counters["ns_per_entry"] =
      benchmark::Counter(static_cast<double>(state.iterations() * gEntries),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: ncclrec_fr_load_bench DUMP_FILE [GoogleBenchmark flags]\n");
    return 2;
  }
  gPath = argv[1];
  std::ifstream in(gPath, std::ios::binary);
  gBytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    std::fprintf(stderr, "ncclrec_fr_load_bench: %s: cannot read\n", gPath.c_str());
    return 1;
  }
  // Both paths must agree on what they read before either is timed.
  const StatusOr<RankData> a = direct();
  const StatusOr<RankData> b = viaJson();
  if (!a.ok() || !b.ok()) {
    std::fprintf(stderr, "ncclrec_fr_load_bench: %s\n",
                 (!a.ok() ? a.status() : b.status()).message().c_str());
    return 1;
  }
  if (a->events != b->events || a->stacks != b->stacks || a->comms != b->comms) {
    std::fprintf(stderr, "ncclrec_fr_load_bench: %s: the two paths disagree\n", gPath.c_str());
    return 1;
  }
  gEntries = a->events.size() == 0 ? 1 : a->events.size();
  std::printf("%s: %zu bytes, %zu events\n", gPath.c_str(), gBytes.size(), a->events.size());
  benchmark::RegisterBenchmark("via_json", run<viaJson>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("direct", run<direct>)->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
