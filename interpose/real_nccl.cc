#include "interpose/real_nccl.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <new>
#include <string>

#include "recorder/log.h"
#include "recorder/real_dl.h"

namespace ncclrec::interpose {
namespace {

using recorder::realDlsym;

// The table the wrappers use: published once by the first resolution, replaced at most once more
// when a dlsym adopts a library and the table in place found none. Tables are never freed (a
// wrapper may still be reading an old one); a resolution that finds nothing publishes kNone.
std::atomic<const RealNccl*> g_real{nullptr};
const RealNccl kNone;

// The link map of the object that defines `symbol`.
const void* libraryOf(const void* symbol) {
  Dl_info info{};
  void* map = nullptr;
  if (symbol == nullptr || dladdr1(symbol, &info, &map, RTLD_DL_LINKMAP) == 0) return nullptr;
  return map;
}

// Finds `name` in the NCCL library this process uses, never in ourselves. RTLD_NEXT covers a
// program linked with libnccl (or preloading it after us); libnccl loaded by an RTLD_LOCAL dlopen
// (a Python extension) is reached by its soname with RTLD_NOLOAD.
void* findDefault(const char* name) {
  const std::string alias = std::string("p") + name;
  if (void* p = realDlsym(RTLD_NEXT, alias.c_str())) return p;
  static void* local = dlopen("libnccl.so.2", RTLD_LAZY | RTLD_NOLOAD);
  if (local != nullptr) {
    if (void* p = realDlsym(local, alias.c_str())) return p;
  }
  if (void* p = realDlsym(RTLD_NEXT, name)) return p;
  if (local != nullptr) return realDlsym(local, name);
  return nullptr;
}

template <class Find>
void fill(RealNccl* t, Find&& find) {
#define NCCLREC_RESOLVE(name) t->name = reinterpret_cast<decltype(&::name)>(find(#name));
  NCCLREC_WRAPPED_FUNCTIONS(NCCLREC_RESOLVE)
  NCCLREC_QUERY_FUNCTIONS(NCCLREC_RESOLVE)
#undef NCCLREC_RESOLVE
  t->hostncclGetDevice = reinterpret_cast<int (*)(int*)>(find("hostncclGetDevice"));
#define NCCLREC_FIRST_FOUND(name) \
  if (t->library == nullptr) t->library = libraryOf(reinterpret_cast<const void*>(t->name));
  NCCLREC_WRAPPED_FUNCTIONS(NCCLREC_FIRST_FOUND)
#undef NCCLREC_FIRST_FOUND
}

__attribute__((noinline)) const RealNccl* resolveDefault() {
  const RealNccl* table = &kNone;
  if (auto* found = new (std::nothrow) RealNccl) {
    fill(found, findDefault);
    if (found->library != nullptr) {
      table = found;
    } else {
      delete found;
    }
  }
  const RealNccl* expected = nullptr;
  if (g_real.compare_exchange_strong(expected, table, std::memory_order_acq_rel,
                                     std::memory_order_acquire))
    return table;
  if (table != &kNone) delete table;
  return expected;  // another thread's resolution, or an adopted library
}

}  // namespace

const RealNccl& realNccl() {
  const RealNccl* table = g_real.load(std::memory_order_acquire);
  if (table == nullptr) [[unlikely]]
    table = resolveDefault();
  return *table;
}

bool forwardsTo(const void* symbol, bool* adopted) {
  *adopted = false;
  const auto* map = static_cast<const link_map*>(libraryOf(symbol));
  if (map == nullptr) return false;
  const RealNccl* current = g_real.load(std::memory_order_acquire);
  if (current != nullptr && current->library != nullptr) return current->library == map;
  // The main program has no list predecessor; there is nothing to dlopen for it.
  if (map->l_prev == nullptr || map->l_name == nullptr || map->l_name[0] == '\0') return false;

  *adopted = true;
  // A reference of our own: the wrappers keep forwarding to the library whatever the program
  // closes. Never released.
  void* handle = dlopen(map->l_name, RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  auto* table = new (std::nothrow) RealNccl;
  if (table != nullptr) {
    fill(table, [handle](const char* name) -> void* {
      const std::string alias = std::string("p") + name;
      if (void* p = realDlsym(handle, alias.c_str())) return p;
      return realDlsym(handle, name);
    });
  }
  if (table == nullptr || table->library != map) {  // its functions are not its own: leave it
    delete table;
    dlclose(handle);
    return false;
  }
  while (!g_real.compare_exchange_weak(current, table, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
    if (current != nullptr && current->library != nullptr) {  // another library came first
      delete table;
      dlclose(handle);
      return current->library == map;
    }
  }
  return true;
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
