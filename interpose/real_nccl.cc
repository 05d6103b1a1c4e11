#include "interpose/real_nccl.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <string>

#include "recorder/log.h"

namespace ncclrec::interpose {
namespace {

RealNccl g_real;
pthread_once_t g_once = PTHREAD_ONCE_INIT;
std::atomic<bool> g_resolved{false};  // fast path: one acquire load per call

// Finds `name` in the NCCL library this process uses, never in ourselves. RTLD_NEXT covers a
// program linked with libnccl (or preloading it after us); libnccl loaded by an RTLD_LOCAL dlopen
// (a Python extension) is reached by its soname with RTLD_NOLOAD.
void* findReal(const char* name) {
  const std::string alias = std::string("p") + name;
  if (void* p = dlsym(RTLD_NEXT, alias.c_str())) return p;
  static void* local = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (local != nullptr) {
    if (void* p = dlsym(local, alias.c_str())) return p;
  }
  if (void* p = dlsym(RTLD_NEXT, name)) return p;
  if (local != nullptr) return dlsym(local, name);
  return nullptr;
}

void resolve() {
#define NCCLREC_RESOLVE(name) g_real.name = reinterpret_cast<decltype(&::name)>(findReal(#name));
  NCCLREC_WRAPPED_FUNCTIONS(NCCLREC_RESOLVE)
  NCCLREC_QUERY_FUNCTIONS(NCCLREC_RESOLVE)
#undef NCCLREC_RESOLVE
  g_real.hostncclGetDevice = reinterpret_cast<int (*)(int*)>(findReal("hostncclGetDevice"));
}

}  // namespace

const RealNccl& realNccl() {
  if (!g_resolved.load(std::memory_order_acquire)) {
    pthread_once(&g_once, resolve);
    g_resolved.store(true, std::memory_order_release);
  }
  return g_real;
}

ncclResult_t missingFunction(const char* name) {
  // One warning per process is enough: a program calling an entry point its NCCL lacks is
  // broken the same way without us.
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    NCCLREC_WARN(kLogInit, "%s: no such function in the NCCL library of this process", name);
  }
  return ncclInvalidUsage;
}

}  // namespace ncclrec::interpose
