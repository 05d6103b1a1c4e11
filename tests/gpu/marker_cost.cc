// The cost of the two candidate end markers on a real GPU (issue 20 part A), for
// tests/gpu/run_checks.sh: a timing-disabled event (cuEventRecord, polled with cuEventQuery) and
// a watermark written by the stream into host-mapped memory (cuStreamWriteValue64, read with a
// plain load). Also whether each is captured into a CUDA graph when recorded on a capturing
// stream: a marker must never add a node to the user's graph.
//
// usage: marker_cost [libcuda path]   (default libcuda.so.1; opened with dlopen, nothing linked)
// Prints one line per measurement; exit 0 when every driver call succeeded, 1 when one failed,
// 77 when there is no usable driver or device (said on stderr).
#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

struct Driver {
  CUresult (*init)(unsigned);
  CUresult (*deviceGet)(CUdevice*, int);
  CUresult (*deviceGetAttribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*primaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*ctxSetCurrent)(CUcontext);
  CUresult (*streamCreate)(CUstream*, unsigned);
  CUresult (*streamSynchronize)(CUstream);
  CUresult (*eventCreate)(CUevent*, unsigned);
  CUresult (*eventRecord)(CUevent, CUstream);
  CUresult (*eventQuery)(CUevent);
  CUresult (*writeValue64)(CUstream, CUdeviceptr, cuuint64_t, unsigned);
  CUresult (*memHostAlloc)(void**, size_t, unsigned);
  CUresult (*memHostGetDevicePointer)(CUdeviceptr*, void*, unsigned);
  CUresult (*beginCapture)(CUstream, CUstreamCaptureMode);
  CUresult (*endCapture)(CUstream, CUgraph*);
  CUresult (*graphGetNodes)(CUgraph, CUgraphNode*, size_t*);
  CUresult (*graphDestroy)(CUgraph);
};

int gFailed = 0;

bool ok(CUresult r, const char* what) {
  if (r == CUDA_SUCCESS) return true;
  std::printf("marker_cost: %s failed: %d\n", what, static_cast<int>(r));
  ++gFailed;
  return false;
}

template <class F>
bool bind(void* lib, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(lib, name));
  if (*fn == nullptr) std::fprintf(stderr, "marker_cost: the driver lacks %s\n", name);
  return *fn != nullptr;
}

bool resolve(void* lib, Driver* d) {
  return bind(lib, "cuInit", &d->init) && bind(lib, "cuDeviceGet", &d->deviceGet) &&
         bind(lib, "cuDeviceGetAttribute", &d->deviceGetAttribute) &&
         bind(lib, "cuDevicePrimaryCtxRetain", &d->primaryCtxRetain) &&
         bind(lib, "cuCtxSetCurrent", &d->ctxSetCurrent) &&
         bind(lib, "cuStreamCreate", &d->streamCreate) &&
         bind(lib, "cuStreamSynchronize", &d->streamSynchronize) &&
         bind(lib, "cuEventCreate", &d->eventCreate) &&
         bind(lib, "cuEventRecord", &d->eventRecord) && bind(lib, "cuEventQuery", &d->eventQuery) &&
         bind(lib, "cuStreamWriteValue64_v2", &d->writeValue64) &&
         bind(lib, "cuMemHostAlloc", &d->memHostAlloc) &&
         bind(lib, "cuMemHostGetDevicePointer_v2", &d->memHostGetDevicePointer) &&
         bind(lib, "cuStreamBeginCapture_v2", &d->beginCapture) &&
         bind(lib, "cuStreamEndCapture", &d->endCapture) &&
         bind(lib, "cuGraphGetNodes", &d->graphGetNodes) &&
         bind(lib, "cuGraphDestroy", &d->graphDestroy);
}

// Median over rounds of the ns per call of `n` calls of `fn`.
template <class F>
double nsPerCall(int n, F&& fn) {
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) fn(i);
    const auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

// Nodes a capture of `record` on `s` adds to the graph; -1 when the capture failed.
template <class F>
long capturedNodes(const Driver& d, CUstream s, F&& record) {
  if (!ok(d.beginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture")) return -1;
  record();
  CUgraph g = nullptr;
  if (!ok(d.endCapture(s, &g), "cuStreamEndCapture")) return -1;
  size_t nodes = 0;
  ok(d.graphGetNodes(g, nullptr, &nodes), "cuGraphGetNodes");
  d.graphDestroy(g);
  return static_cast<long>(nodes);
}

}  // namespace

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "libcuda.so.1";
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  Driver d{};
  if (lib == nullptr || !resolve(lib, &d)) {
    std::fprintf(stderr, "marker_cost: no usable CUDA driver at %s\n", path);
    return 77;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (d.init(0) != CUDA_SUCCESS || d.deviceGet(&dev, 0) != CUDA_SUCCESS ||
      d.primaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || d.ctxSetCurrent(ctx) != CUDA_SUCCESS) {
    std::fprintf(stderr, "marker_cost: no CUDA device\n");
    return 77;
  }
  int memops = 0;
  ok(d.deviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev),
     "cuDeviceGetAttribute");
  std::printf("marker_cost: CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS = %d\n", memops);
  CUstream s = nullptr;
  CUevent ev = nullptr;
  void* host = nullptr;
  CUdeviceptr dptr = 0;
  if (!ok(d.streamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      !ok(d.eventCreate(&ev, CU_EVENT_DISABLE_TIMING), "cuEventCreate") ||
      !ok(d.memHostAlloc(&host, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
          "cuMemHostAlloc") ||
      !ok(d.memHostGetDevicePointer(&dptr, host, 0), "cuMemHostGetDevicePointer")) {
    return 1;
  }
  auto* watermark = static_cast<volatile uint64_t*>(host);
  constexpr int kCalls = 20000;
  // Alternated, twice, so that drift of the machine hits both alike.
  for (int round = 0; round < 2; ++round) {
    const double rec = nsPerCall(kCalls, [&](int) { d.eventRecord(ev, s); });
    ok(d.streamSynchronize(s), "cuStreamSynchronize");
    const double query = nsPerCall(kCalls, [&](int) { d.eventQuery(ev); });
    double write = -1, load = -1;
    if (memops != 0) {
      uint64_t value = 0;
      write = nsPerCall(kCalls, [&](int) { d.writeValue64(s, dptr, ++value, 0); });
      ok(d.streamSynchronize(s), "cuStreamSynchronize");
      if (*watermark != value) {
        std::printf("marker_cost: watermark %llu after sync, want %llu\n",
                    static_cast<unsigned long long>(*watermark),
                    static_cast<unsigned long long>(value));
        ++gFailed;
      }
      uint64_t sink = 0;
      load = nsPerCall(kCalls, [&](int) { sink += *watermark; });
      (void)sink;
    }
    std::printf(
        "marker_cost: round %d: cuEventRecord %.1f ns/call, cuEventQuery %.1f ns/call; "
        "cuStreamWriteValue64 %.1f ns/call, plain load %.1f ns (-1: no stream memory ops)\n",
        round + 1, rec, query, write, load);
  }
  const long event_nodes = capturedNodes(d, s, [&] { d.eventRecord(ev, s); });
  long write_nodes = -1;
  if (memops != 0) write_nodes = capturedNodes(d, s, [&] { d.writeValue64(s, dptr, 1, 0); });
  std::printf("marker_cost: nodes a capture gains: cuEventRecord %ld, cuStreamWriteValue64 %ld\n",
              event_nodes, write_nodes);
  return gFailed == 0 ? 0 : 1;
}
