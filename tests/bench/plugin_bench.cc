// The cost of one op in plugin-only mode (docs/performance.md): the callbacks NCCL makes into
// libncclrec.so's profiler plugin for one collective, in NCCL's order (CollApi start and stop on
// the calling thread, which records the op with its stack; Coll start and stop; one KernelCh
// start, KernelChStop and stop, which complete it), against the same sequence on a plugin that
// does nothing (the floor: indirect calls and descriptor set-up), in one process. Prints
//   ncclrec-bench: plugin stack_depth=<n> callbacks_ns=<x> empty_ns=<y> added_ns=<x-y>
// (CPU ns per op; the median with --benchmark_repetitions) and checks that every op left in the
// ring was recorded and completed by the callbacks (exit 3 otherwise).
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <stdlib.h>

#include <cstdio>
#include <string>

#include "format/reader.h"
#include "third_party/nccl/nccl_profiler.h"

namespace {

ncclProfPlugin* gPlugin = nullptr;
void* gCtx = nullptr;

ncclResult_t emptyInit(void** ctx, uint64_t, int* mask, const char*, int, int, int, ncclProfLogFn) {
  *ctx = &gCtx;
  *mask = ~0;
  return ncclSuccess;
}
ncclResult_t emptyStart(void*, void** h, ncclProfDescr*) {
  *h = &gCtx;
  return ncclSuccess;
}
ncclResult_t emptyStop(void*) { return ncclSuccess; }
ncclResult_t emptyState(void*, ncclProfState, ncclProfStateArgs*) { return ncclSuccess; }
ncclResult_t emptyFinalize(void*) { return ncclSuccess; }
ncclProfPlugin gEmpty = {"empty", emptyInit, emptyStart, emptyStop, emptyState, emptyFinalize};

// One collective as NCCL reports it; noinline so the stack capture walks a real frame.
__attribute__((noinline)) void oneOp(const ncclProfPlugin* p, void* ctx) {
  ncclProfDescr api{};
  api.type = ncclProfCollApi;
  api.collApi = {"AllReduce", 1024, "ncclFloat32", 0, nullptr, false};
  void* a = nullptr;
  p->startEvent(ctx, &a, &api);
  p->stopEvent(a);
  ncclProfDescr coll{};
  coll.type = ncclProfColl;
  coll.parentObj = a;
  coll.coll.func = "AllReduce";
  coll.coll.nChannels = 1;
  void* c = nullptr;
  p->startEvent(ctx, &c, &coll);
  p->stopEvent(c);
  ncclProfDescr ch{};
  ch.type = ncclProfKernelCh;
  ch.parentObj = c;
  void* k = nullptr;
  p->startEvent(ctx, &k, &ch);
  ncclProfStateArgs args{};
  p->recordEventState(k, ncclProfStateKernelChStop, &args);
  p->stopEvent(k);
  benchmark::DoNotOptimize(k);
}

void BM_PluginCallbacks(benchmark::State& state) {
  for (auto _ : state) oneOp(gPlugin, gCtx);
}
BENCHMARK(BM_PluginCallbacks);

void BM_EmptyPlugin(benchmark::State& state) {
  void* ctx = nullptr;
  int mask = 0;
  gEmpty.init(&ctx, 1, &mask, "", 1, 2, 0, nullptr);
  for (auto _ : state) oneOp(&gEmpty, ctx);
}
BENCHMARK(BM_EmptyPlugin);

class Collect : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      // A single run, or the median of repetitions (the last word).
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      const double ns = r.GetAdjustedCPUTime();
      if (r.benchmark_name().find("PluginCallbacks") != std::string::npos) plugin_ns = ns;
      if (r.benchmark_name().find("EmptyPlugin") != std::string::npos) empty_ns = ns;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double plugin_ns = 0, empty_ns = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIBNCCLREC [benchmark flags]\n", argv[0]);
    return 1;
  }
  char dir[] = "/tmp/ncclrec-plugin-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) return 2;
  setenv("NCCLREC_DIR", dir, 1);
  setenv("NCCLREC_WATCHER", "off", 1);
  setenv("NCCLREC_DUMP_ON_EXIT", "0", 1);
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  gPlugin = lib ? static_cast<ncclProfPlugin*>(dlsym(lib, "ncclProfiler_v5")) : nullptr;
  int mask = 0;
  if (gPlugin == nullptr || gPlugin->init(&gCtx, 42, &mask, "", 1, 2, 0, nullptr) != ncclSuccess ||
      gCtx == nullptr) {
    std::fprintf(stderr, "plugin_bench: cannot load the plugin from %s: %s\n", argv[1],
                 lib ? "no ncclProfiler_v5, or init failed" : dlerror());
    return 2;
  }
  --argc;
  ++argv;
  benchmark::Initialize(&argc, argv);
  Collect reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  const char* depth = std::getenv("NCCLREC_STACK_DEPTH");
  std::printf(
      "ncclrec-bench: plugin stack_depth=%s callbacks_ns=%.1f empty_ns=%.1f added_ns=%.1f\n",
      depth ? depth : "16", reporter.plugin_ns, reporter.empty_ns,
      reporter.plugin_ns - reporter.empty_ns);
  // The ring holds the latest ops: each must be an all-reduce the callbacks completed.
  auto loaded = ncclrec::format::loadPaths({dir});
  size_t ops = 0, completed = 0;
  if (loaded.ok()) {
    for (const auto& r : loaded.value().ranks) {
      for (const auto& e : r.events) {
        if (e.op != ncclrec::format::OpType::kAllReduce) continue;
        ++ops;
        if (e.state == ncclrec::format::EventState::kCompleted) ++completed;
      }
    }
  }
  std::printf("ncclrec-bench: plugin recorded=%zu completed=%zu\n", ops, completed);
  return reporter.plugin_ns > 0 && reporter.empty_ns > 0 && ops > 0 && completed == ops ? 0 : 3;
}
