#include "hostnccl/profiler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <set>
#include <string>

#include "hostnccl/errors.h"
#include "third_party/nccl/nccl_profiler.h"

namespace ncclrec::hostnccl::prof {
namespace {

// An event type is emitted when its bit or the bit of any event below it in the tree is active
// (NCCL's rule: a child needs its parent's handle).
constexpr int kBelowColl =
    ncclProfColl | ncclProfProxyOp | ncclProfProxyStep | ncclProfKernelCh | ncclProfNetPlugin;
constexpr int kBelowP2p =
    ncclProfP2p | ncclProfProxyOp | ncclProfProxyStep | ncclProfKernelCh | ncclProfNetPlugin;
constexpr int kBelowCollApi = ncclProfCollApi | kBelowColl;
constexpr int kBelowP2pApi = ncclProfP2pApi | kBelowP2p;
constexpr int kBelowGroupApi =
    ncclProfGroupApi | kBelowCollApi | kBelowP2pApi | ncclProfKernelLaunch;

const ncclProfPlugin* gPlugin = nullptr;  // written once, under gLoadOnce
std::once_flag gLoadOnce;
std::atomic<bool> gBroken{false};

// The API state of one thread: the GroupApi event open since the first call of the current
// outermost group (or lone call).
struct ApiState {
  void* group = nullptr;
  bool open = false;
};
thread_local ApiState tApi;

const ncclProfPlugin* lookUp(void* handle) {
  for (const char* sym : {"ncclProfiler_v6", "ncclProfiler_v5"}) {
    if (void* p = dlsym(handle, sym)) return static_cast<const ncclProfPlugin*>(p);
  }
  return nullptr;
}

void load() {
  const char* env = std::getenv("NCCL_PROFILER_PLUGIN");
  if (env == nullptr || *env == '\0' || strcasecmp(env, "none") == 0) return;
  const ncclProfPlugin* p = nullptr;
  std::string why;
  if (std::strcmp(env, "STATIC_PLUGIN") == 0) {
    p = lookUp(RTLD_DEFAULT);
    if (p == nullptr) why = "no ncclProfiler_v6 or ncclProfiler_v5 in the global scope";
  } else {
    void* h = dlopen(env, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr && std::strchr(env, '/') == nullptr) {
      why = dlerror();
      h = dlopen(("libnccl-profiler-" + std::string(env) + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (h == nullptr) {
      if (why.empty()) why = dlerror();
    } else if ((p = lookUp(h)) == nullptr) {
      why = "it exports neither ncclProfiler_v6 nor ncclProfiler_v5";
    }
  }
  if (p == nullptr || p->init == nullptr || p->startEvent == nullptr || p->stopEvent == nullptr ||
      p->recordEventState == nullptr || p->finalize == nullptr) {
    if (why.empty()) why = "its function table is incomplete";
    logAlways("hostnccl: NCCL_PROFILER_PLUGIN=%s: %s; running without a profiler", env,
              why.c_str());
    return;
  }
  gPlugin = p;
  logInfo("profiler plugin %s loaded from %s", p->name ? p->name : "(unnamed)", env);
}

bool live() { return gPlugin != nullptr && !gBroken.load(std::memory_order_relaxed); }

// Any failing event callback switches the plugin off for good, said once.
void check(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess || gBroken.exchange(true)) return;
  logAlways("hostnccl: profiler plugin %s failed (%d) in %s; no longer calling it",
            gPlugin->name ? gPlugin->name : "(unnamed)", static_cast<int>(rc), what);
}

void* start(Comm& c, ncclProfDescr& d) {
  void* h = nullptr;
  check(gPlugin->startEvent(c.profContext, &h, &d), "startEvent");
  return h;
}

void stop(void* h) {
  if (h != nullptr && live()) check(gPlugin->stopEvent(h), "stopEvent");
}

void state(void* h, ncclProfState s, ncclProfStateArgs* args) {
  if (h != nullptr && live()) check(gPlugin->recordEventState(h, s, args), "recordEventState");
}

// NCCL's names (ncclFuncToString, ncclDatatypeToString).
const char* funcName(OpKind k) {
  static const char* const kNames[] = {"AllReduce",     "Broadcast", "Reduce", "AllGather",
                                       "ReduceScatter", "AlltoAll",  "Gather", "Scatter",
                                       "Send",          "Recv",      "Split"};
  return kNames[static_cast<int>(k)];
}

const char* typeName(ncclDataType_t t) {
  static const char* const kNames[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                       "ncclUint32",   "ncclInt64",      "ncclUint64",
                                       "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                       "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  int i = static_cast<int>(t);
  return i >= 0 && i < ncclNumTypes ? kNames[i] : "Unknown";
}

// NCCL's API passes root 0 for the collectives that have none.
int rootOf(const OpArgs& a) { return a.root < 0 ? 0 : a.root; }

bool isP2p(OpKind k) { return k == OpKind::kSend || k == OpKind::kRecv; }

int distinctHosts(const Comm& c) {
  std::set<std::string> hosts;
  for (const SockAddr& a : c.serviceAddrs) hosts.insert(a.host());
  return hosts.empty() ? 1 : static_cast<int>(hosts.size());
}

// The logger handed to init, as NCCL hands its own: plugin messages go to hostnccl's log.
void pluginLog(ncclProfLogLevel level, unsigned long /*flags*/, const char* /*file*/, int /*line*/,
               const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (level <= ncclProfLogWarn) {
    logWarn("profiler plugin: %s", buf);
  } else {
    logInfo("profiler plugin: %s", buf);
  }
}

thread_local void* tCurrentOp = nullptr;

// NCCL's proxy step states (profiler v4-v6 numbering).
constexpr ncclProfState kProxyStepSendWait = 9;
constexpr ncclProfState kProxyStepRecvGPUWait = 12;

uint64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

void commInit(Comm& c) {
  std::call_once(gLoadOnce, load);
  if (!live()) return;
  int mask = 0;
  void* ctx = nullptr;
  ncclResult_t rc = ncclInternalError;
  try {
    rc = gPlugin->init(&ctx, c.hash, &mask, "", distinctHosts(c), c.nranks, c.rank, pluginLog);
  } catch (...) {
  }
  if (rc != ncclSuccess) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      logAlways(
          "hostnccl: profiler plugin init failed (%d) for comm %016llx; continuing "
          "without the profiler",
          static_cast<int>(rc), static_cast<unsigned long long>(c.hash));
    }
    return;
  }
  c.profContext = ctx;
  c.profMask = mask;
  c.profInited = true;
}

void commFinalize(Comm& c) {
  if (!c.profInited) return;
  c.profInited = false;
  c.profMask = 0;
  if (live()) check(gPlugin->finalize(c.profContext), "finalize");
}

void apiStart(OpArgs& a, int userDepth) {
  Comm& c = *a.comm;
  a.profApi = nullptr;
  if (!live() || (c.profMask & kBelowGroupApi) == 0) return;
  if (!tApi.open) {
    ncclProfDescr d{};
    d.type = ncclProfGroupApi;
    d.rank = c.rank;
    d.groupApi.groupDepth = userDepth + 1;  // NCCL counts its own implicit group
    tApi.group = start(c, d);
    tApi.open = true;
    state(tApi.group, ncclProfStateGroupStartApiStop, nullptr);
  }
  ncclProfDescr d{};
  d.parentObj = tApi.group;
  d.rank = c.rank;
  if (isP2p(a.kind)) {
    if ((c.profMask & kBelowP2pApi) == 0 || !live()) return;
    d.type = ncclProfP2pApi;
    d.p2pApi = {funcName(a.kind), a.count, typeName(a.dtype), a.stream, false};
  } else {
    if ((c.profMask & kBelowCollApi) == 0 || !live()) return;
    d.type = ncclProfCollApi;
    d.collApi = {funcName(a.kind), a.count, typeName(a.dtype), rootOf(a), a.stream, false};
  }
  a.profApi = start(c, d);
}

void apiStop(const OpArgs& a) { stop(a.profApi); }

void groupEndEnter() {
  if (tApi.open) state(tApi.group, ncclProfStateGroupEndApiStart, nullptr);
}

void groupDone() {
  if (!tApi.open) return;
  void* h = tApi.group;
  tApi = ApiState{};
  stop(h);
}

OpEvents opStart(const OpArgs& a, bool kernel) {
  OpEvents e;
  Comm& c = *a.comm;
  const bool p2p = isP2p(a.kind);
  if (!live() || (c.profMask & (p2p ? kBelowP2p : kBelowColl)) == 0) return e;
  ncclProfDescr d{};
  d.parentObj = a.profApi;
  d.rank = c.rank;
  // As NCCL: a 1-rank communicator runs no kernel channel (its data is copied on the stream), so
  // its ops carry nChannels 0 and raise no KernelCh event.
  const uint8_t channels = c.nranks > 1 ? 1 : 0;
  if (p2p) {
    d.type = ncclProfP2p;
    void* buff = a.kind == OpKind::kSend ? const_cast<void*>(a.sendbuff) : a.recvbuff;
    d.p2p = {funcName(a.kind), buff, typeName(a.dtype), a.count, a.root, channels, nullptr};
  } else {
    d.type = ncclProfColl;
    uint64_t seq = c.profCollSeq[static_cast<int>(a.kind)]++;
    d.coll = {seq,          funcName(a.kind), a.sendbuff,        a.recvbuff,
              a.count,      rootOf(a),        typeName(a.dtype), channels,
              /*nWarps=*/1, "RING",           "SIMPLE",          nullptr};
  }
  e.op = start(c, d);
  if (e.op == nullptr || channels == 0 || !kernel || (c.profMask & ncclProfKernelCh) == 0 ||
      !live()) {
    return e;
  }
  ncclProfDescr k{};
  k.type = ncclProfKernelCh;
  k.parentObj = e.op;
  k.rank = c.rank;
  k.kernelCh.channelId = 0;
  k.kernelCh.pTimer = nowNs();
  e.channel = start(c, k);
  return e;
}

void opDone(const OpArgs& /*a*/, OpEvents& e, bool ok) {
  if (e.channel != nullptr && ok) {
    ncclProfStateArgs s{};
    s.kernelCh.pTimer = nowNs();
    state(e.channel, ncclProfStateKernelChStop, &s);
  }
  stop(e.channel);
  stop(e.op);
  e = OpEvents{};
}

void* currentOp() { return tCurrentOp; }
CurrentOpScope::CurrentOpScope(void* op) : saved_(tCurrentOp) { tCurrentOp = op; }
CurrentOpScope::~CurrentOpScope() { tCurrentOp = saved_; }

void* proxyOpStart(Comm& c, void* op, int peer, bool isSend, int nSteps, size_t chunkBytes) {
  constexpr int kProxy = ncclProfProxyOp | ncclProfProxyStep | ncclProfNetPlugin;
  if (op == nullptr || !live() || (c.profMask & kProxy) == 0) return nullptr;
  ncclProfDescr d{};
  d.type = ncclProfProxyOp;
  d.parentObj = op;
  d.rank = c.rank;
  d.proxyOp.pid = getpid();
  d.proxyOp.channelId = 0;
  d.proxyOp.peer = peer;
  d.proxyOp.nSteps = nSteps;
  d.proxyOp.chunkSize = static_cast<int>(std::min<size_t>(chunkBytes, 1u << 30));
  d.proxyOp.isSend = isSend ? 1 : 0;
  return start(c, d);
}

void* proxyStepStart(Comm& c, void* proxyOp, int step) {
  if (proxyOp == nullptr || !live() || (c.profMask & ncclProfProxyStep) == 0) return nullptr;
  ncclProfDescr d{};
  d.type = ncclProfProxyStep;
  d.parentObj = proxyOp;
  d.rank = c.rank;
  d.proxyStep.step = step;
  return start(c, d);
}

void proxyStepMoved(void* step, bool isSend) {
  state(step, isSend ? kProxyStepSendWait : kProxyStepRecvGPUWait, nullptr);
}

void proxyStop(void* handle) { stop(handle); }

}  // namespace ncclrec::hostnccl::prof
