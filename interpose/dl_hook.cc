// Lookups of NCCL entry points on library handles: ctypes.CDLL("libnccl.so.2").ncclAllReduce
// (vLLM's and SGLang's pynccl), dlopen + dlsym in C++. A preloaded library does not see those
// calls: dlsym on a handle answers from that library. libncclrec.so exports dlsym and dlvsym
// (dl_trampoline.cc); a lookup of "nccl..." on a real handle arrives here, every other one goes
// straight on to libc.
//
// The answer is the shim's wrapper when the real lookup finds the name, the name is one the shim
// wraps (NCCLREC_WRAPPED_FUNCTIONS), and the library that has it is the one the wrappers forward
// to (real_nccl.h: the first seen). Otherwise it is libc's answer, unchanged, dlerror() included.
// No recorder, thread, file or log: only the redirect.
#include <dlfcn.h>

#include <cstring>

#include "interpose/real_nccl.h"
#include "recorder/real_dl.h"

namespace ncclrec::interpose {
namespace {

struct Wrapped {
  const char* name;
  void* wrapper;
};

// Constant-initialized (relocations, no constructor): usable from the first lookup.
#define NCCLREC_WRAPPED_ENTRY(fn) {#fn, reinterpret_cast<void*>(&::fn)},
const Wrapped kWrapped[] = {NCCLREC_WRAPPED_FUNCTIONS(NCCLREC_WRAPPED_ENTRY)};
#undef NCCLREC_WRAPPED_ENTRY

const void* objectOf(const void* address) {
  Dl_info info{};
  return address != nullptr && dladdr(address, &info) != 0 ? info.dli_fbase : nullptr;
}

// The shim's wrapper of `name`, nullptr for a name it does not wrap. &::fn binds through the
// GOT: where the program itself defines the name (NCCL linked statically), that definition, not
// ours; then there is nothing to redirect to.
void* wrapperOf(const char* name) {
  for (const Wrapped& w : kWrapped) {
    if (std::strcmp(w.name, name) != 0) continue;
    static const void* const self = objectOf(reinterpret_cast<const void*>(&wrapperOf));
    if (objectOf(w.wrapper) != self) return nullptr;
    return w.wrapper;
  }
  return nullptr;
}

void* lookUp(void* handle, const char* name, const char* version) {
  const auto real = [&] {
    return version == nullptr ? recorder::realDlsym(handle, name)
                              : recorder::realDlvsym(handle, name, version);
  };
  void* found = real();
  if (found == nullptr) return nullptr;
  void* wrapper = wrapperOf(name);
  if (wrapper == nullptr || wrapper == found) return found;
  bool adopted = false;
  if (!forwardsTo(found, &adopted)) return found;
  if (adopted) {
    // Resolving the library made lookups of its own (some may fail on an older NCCL): leave
    // dlerror() as this lookup alone leaves it.
    dlerror();
    if (real() == nullptr) return nullptr;
  }
  return wrapper;
}

}  // namespace
}  // namespace ncclrec::interpose

// Reached from the trampolines by a jump, so these return to the caller of dlsym/dlvsym.
extern "C" __attribute__((visibility("hidden"), used)) void* ncclrecRedirectDlsym(
    void* handle, const char* name) {
  return ncclrec::interpose::lookUp(handle, name, nullptr);
}

extern "C" __attribute__((visibility("hidden"), used)) void* ncclrecRedirectDlvsym(
    void* handle, const char* name, const char* version) {
  return ncclrec::interpose::lookUp(handle, name, version);
}
