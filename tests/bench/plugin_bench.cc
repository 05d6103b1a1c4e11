// The cost of one op in plugin-only mode (docs/performance.md): the callbacks NCCL makes into
// libncclrec.so's profiler plugin for one collective, in NCCL's order (CollApi start and stop on
// the calling thread, which records the op with its stack; Coll start and stop; one KernelCh
// start, KernelChStop and stop, which complete it), against the same sequence on a plugin that
// does nothing (the floor: indirect calls and descriptor set-up), in one process. Prints
//   ncclrec-bench: plugin stack_depth=<n> callbacks_ns=<x> empty_ns=<y> added_ns=<x-y>
// (CPU ns per op; the median with --benchmark_repetitions) and checks that every op left in the
// ring was recorded and completed by the callbacks (exit 3 otherwise).
//
// The same op with its transport (issue 31): under the Coll event, a send and a receive ProxyOp
// of kProxySteps steps each, every step started, moved (SendWait / RecvGPUWait) and stopped, as
// NCCL's proxy reports a ring step; the plugin counts them in the black box's link table. Prints
//   ncclrec-bench: plugin-proxy steps=<n> callbacks_ns=<x> empty_ns=<y> added_ns=<x-y>
//   ratio_vs_no_proxy=<x / callbacks_ns of the op alone>
// and checks the link table's counters add up to the steps made, and the communicator's kernel
// record to the ops launched and their channels started and stopped.
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

constexpr int kProxySteps = 8;  // per direction and op: NCCL_STEPS, one ring step's slices

// One connection's proxy operation of kProxySteps steps under the Coll event `coll`.
void proxyOp(const ncclProfPlugin* p, void* ctx, void* coll, bool send) {
  ncclProfDescr op{};
  op.type = ncclProfProxyOp;
  op.parentObj = coll;
  op.proxyOp.peer = send ? 1 : 0;
  op.proxyOp.nSteps = kProxySteps;
  op.proxyOp.isSend = send ? 1 : 0;
  void* o = nullptr;
  p->startEvent(ctx, &o, &op);
  for (int i = 0; i < kProxySteps; ++i) {
    ncclProfDescr step{};
    step.type = ncclProfProxyStep;
    step.parentObj = o;
    step.proxyStep.step = i;
    void* h = nullptr;
    p->startEvent(ctx, &h, &step);
    p->recordEventState(h, send ? 9 : 12, nullptr);  // SendWait, RecvGPUWait
    p->stopEvent(h);
  }
  p->stopEvent(o);
}

// One collective as NCCL reports it; noinline so the stack capture walks a real frame. With
// `proxy`, its send and receive proxy operations run while its Coll event is open.
__attribute__((noinline)) void oneOp(const ncclProfPlugin* p, void* ctx, bool proxy = false) {
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
  if (proxy) {
    proxyOp(p, ctx, c, true);
    proxyOp(p, ctx, c, false);
  }
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

void BM_PluginCallbacksWithProxy(benchmark::State& state) {
  for (auto _ : state) oneOp(gPlugin, gCtx, true);
}
BENCHMARK(BM_PluginCallbacksWithProxy);

void BM_EmptyPluginWithProxy(benchmark::State& state) {
  void* ctx = nullptr;
  int mask = 0;
  gEmpty.init(&ctx, 1, &mask, "", 1, 2, 0, nullptr);
  for (auto _ : state) oneOp(&gEmpty, ctx, true);
}
BENCHMARK(BM_EmptyPluginWithProxy);

class Collect : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      // A single run, or the median of repetitions (the last word).
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name != "median") continue;
      const double ns = r.GetAdjustedCPUTime();
      const std::string name = r.benchmark_name();
      const bool proxy = name.find("WithProxy") != std::string::npos;
      if (name.find("PluginCallbacks") != std::string::npos) (proxy ? proxy_ns : plugin_ns) = ns;
      if (name.find("EmptyPlugin") != std::string::npos) (proxy ? proxy_empty_ns : empty_ns) = ns;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  double plugin_ns = 0, empty_ns = 0, proxy_ns = 0, proxy_empty_ns = 0;
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
  std::printf(
      "ncclrec-bench: plugin-proxy steps=%d callbacks_ns=%.1f empty_ns=%.1f added_ns=%.1f "
      "ratio_vs_no_proxy=%.2f\n",
      kProxySteps, reporter.proxy_ns, reporter.proxy_empty_ns,
      reporter.proxy_ns - reporter.proxy_empty_ns,
      reporter.plugin_ns > 0 ? reporter.proxy_ns / reporter.plugin_ns
                             : 0.0);  // The ring holds the latest ops: each must be an all-reduce
                                      // the callbacks completed.
  auto loaded = ncclrec::format::loadPaths({dir});
  size_t ops = 0, completed = 0, links = 0, kernels = 0;
  bool counted = true;
  if (loaded.ok()) {
    for (const auto& r : loaded.value().ranks) {
      // Every step the proxy ops announced was posted, moved and done, on two connections; every
      // op launched one kernel channel, which started and stopped (the kernel record).
      for (const auto& l : r.links) {
        if (l.isKernel()) {
          ++kernels;
          counted = counted && l.planned > 0 && l.posted == l.planned && l.done == l.planned &&
                    l.op_steps == 1;
          continue;
        }
        ++links;
        counted = counted && l.planned > 0 && l.posted == l.planned && l.moved == l.planned &&
                  l.done == l.planned && l.op_steps == kProxySteps;
      }
      for (const auto& e : r.events) {
        if (e.op != ncclrec::format::OpType::kAllReduce) continue;
        ++ops;
        if (e.state == ncclrec::format::EventState::kCompleted) ++completed;
      }
    }
  }
  std::printf(
      "ncclrec-bench: plugin recorded=%zu completed=%zu links=%zu kernel_records=%zu counted=%s\n",
      ops, completed, links, kernels, counted ? "yes" : "no");
  const bool measured = reporter.plugin_ns > 0 && reporter.empty_ns > 0 && reporter.proxy_ns > 0;
  return measured && ops > 0 && completed == ops && links == 2 && kernels == 1 && counted ? 0 : 3;
}
