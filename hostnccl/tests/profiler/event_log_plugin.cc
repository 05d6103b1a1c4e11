// A profiler plugin for tests: writes every callback it receives, one line each, to the file
// PROFTEST_LOG names, so a test can compare the event stream with what NCCL would send.
//
// Events get ids 1, 2, ... in start order; "parent" is the id of the parent's handle (0: none).
// Handles stay valid until the last finalize (NCCL may name a stopped event as a parent).
// PROFTEST_MASK sets the activation mask returned by init (default: every event type);
// PROFTEST_FAIL=init|start makes init, or the first startEvent, return ncclInternalError.
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "third_party/nccl/nccl_profiler.h"

namespace {

struct Event {
  int id;
};

std::mutex gMu;
FILE* gOut = nullptr;
std::vector<std::unique_ptr<Event>> gEvents;
int gContexts = 0;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

void line(const std::string& s) {
  if (gOut == nullptr) gOut = std::fopen(env("PROFTEST_LOG"), "a");
  if (gOut == nullptr) return;
  std::fprintf(gOut, "%s\n", s.c_str());
  std::fflush(gOut);
}

int idOf(const void* handle) { return handle ? static_cast<const Event*>(handle)->id : 0; }

std::string describe(const ncclProfDescr& d) {
  char b[256];
  switch (d.type) {
    case ncclProfGroupApi:
      std::snprintf(b, sizeof b, "GroupApi depth=%d", d.groupApi.groupDepth);
      break;
    case ncclProfCollApi:
      std::snprintf(b, sizeof b, "CollApi %s count=%zu %s root=%d", d.collApi.func, d.collApi.count,
                    d.collApi.datatype, d.collApi.root);
      break;
    case ncclProfP2pApi:
      std::snprintf(b, sizeof b, "P2pApi %s count=%zu %s", d.p2pApi.func, d.p2pApi.count,
                    d.p2pApi.datatype);
      break;
    case ncclProfColl:
      std::snprintf(b, sizeof b, "Coll %s seq=%" PRIu64 " count=%zu %s root=%d ch=%d", d.coll.func,
                    d.coll.seqNumber, d.coll.count, d.coll.datatype, d.coll.root, d.coll.nChannels);
      break;
    case ncclProfP2p:
      std::snprintf(b, sizeof b, "P2p %s count=%zu %s peer=%d ch=%d", d.p2p.func, d.p2p.count,
                    d.p2p.datatype, d.p2p.peer, d.p2p.nChannels);
      break;
    case ncclProfKernelCh:
      std::snprintf(b, sizeof b, "KernelCh channel=%d", d.kernelCh.channelId);
      break;
    case ncclProfProxyOp:
      std::snprintf(b, sizeof b, "ProxyOp channel=%d peer=%d steps=%d send=%d pid=%s",
                    d.proxyOp.channelId, d.proxyOp.peer, d.proxyOp.nSteps, d.proxyOp.isSend,
                    d.proxyOp.pid == getpid() ? "self" : "other");
      break;
    case ncclProfProxyStep:
      std::snprintf(b, sizeof b, "ProxyStep step=%d", d.proxyStep.step);
      break;
    default:
      std::snprintf(b, sizeof b, "type=%" PRIu64, d.type);
  }
  return b;
}

ncclResult_t init(void** ctx, uint64_t commId, int* mask, const char* /*name*/, int nNodes,
                  int nranks, int rank, ncclProfLogFn /*log*/) {
  std::lock_guard<std::mutex> lock(gMu);
  if (std::strcmp(env("PROFTEST_FAIL"), "init") == 0) return ncclInternalError;
  *ctx = reinterpret_cast<void*>(static_cast<uintptr_t>(++gContexts));
  *mask = *env("PROFTEST_MASK") ? static_cast<int>(std::strtol(env("PROFTEST_MASK"), nullptr, 0))
                                : 0x7fff;
  char b[160];
  std::snprintf(b, sizeof b, "init ctx=%d comm=%016" PRIx64 " nodes=%d rank=%d/%d", gContexts,
                commId, nNodes, rank, nranks);
  line(b);
  return ncclSuccess;
}

ncclResult_t startEvent(void* ctx, void** handle, ncclProfDescr* d) {
  std::lock_guard<std::mutex> lock(gMu);
  *handle = nullptr;
  if (std::strcmp(env("PROFTEST_FAIL"), "start") == 0) {
    line("start failed");
    return ncclInternalError;
  }
  gEvents.push_back(std::make_unique<Event>(Event{static_cast<int>(gEvents.size()) + 1}));
  *handle = gEvents.back().get();
  char b[96];
  std::snprintf(b, sizeof b, "start %d ctx=%d parent=%d rank=%d ", gEvents.back()->id,
                static_cast<int>(reinterpret_cast<uintptr_t>(ctx)), idOf(d->parentObj), d->rank);
  line(b + describe(*d));
  return ncclSuccess;
}

ncclResult_t stopEvent(void* handle) {
  std::lock_guard<std::mutex> lock(gMu);
  line("stop " + std::to_string(idOf(handle)));
  return ncclSuccess;
}

ncclResult_t recordEventState(void* handle, ncclProfState state, ncclProfStateArgs* /*args*/) {
  std::lock_guard<std::mutex> lock(gMu);
  line("state " + std::to_string(idOf(handle)) + " " + std::to_string(state));
  return ncclSuccess;
}

ncclResult_t finalize(void* ctx) {
  std::lock_guard<std::mutex> lock(gMu);
  line("finalize ctx=" + std::to_string(reinterpret_cast<uintptr_t>(ctx)));
  return ncclSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) ncclProfPlugin ncclProfiler_v5 = {
    "event-log", init, startEvent, stopEvent, recordEventState, finalize};
