// Binds NCCL the way ctypes bindings do (dlopen, then dlsym on the handle) and reports what each
// lookup answered, for the dlsym tests in interpose_dlsym_test.cc. Linked with no NCCL; linked
// with libncclrec_next_probe_a.so and _b.so, which both define probeTwin (the RTLD_NEXT case).
//
//   dlsym_probe <library> <step>...
//     open:local | open:global   dlopen(<library>, RTLD_NOW | RTLD_LOCAL or RTLD_GLOBAL)
//     nccl:<how>                 looks up four entry points, prints "<name> in <object>" for each,
//                                then runs ncclGetUniqueId, ncclCommInitRank (1 rank),
//                                ncclAllReduce on host floats and ncclCommDestroy through them.
//                                <how>: handle (the open: handle), main (dlopen(NULL)), default
//                                (RTLD_DEFAULT), next (RTLD_NEXT from this program)
//     other:<library>            dlopen's another library RTLD_LOCAL; where its ncclAllReduce is
//     missing                    wrapped names that a handle lacks: answers and dlerror()
//     same                       non-NCCL lookups: the object and symbol each answer is in, and
//                                whether it equals libc's own dlsym's answer in this process
//     next                       dlsym(RTLD_NEXT, ...) made inside libncclrec_next_probe_a.so
//     hook                       the object this program's dlsym binds to
// Each step prints lines; exit status 0, 1 when a step failed, 2 for a bad step.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "nccl.h"

extern "C" void* nextProbeLookup(const char* name);
extern "C" void* nextProbeVersionedLookup(const char* name, const char* version);
extern "C" int probeTwin();

namespace {

#if defined(__x86_64__)
constexpr const char* kLibcBaseVersion = "GLIBC_2.2.5";
#else
constexpr const char* kLibcBaseVersion = "GLIBC_2.17";
#endif

using DlsymFn = void* (*)(void*, const char*);

// "<object basename>:<symbol>" of an address, "null" for nullptr.
std::string where(const void* p) {
  if (p == nullptr) return "null";
  Dl_info info{};
  if (dladdr(p, &info) == 0) return "unknown";
  std::string object = info.dli_fname != nullptr ? info.dli_fname : "";
  if (const size_t slash = object.rfind('/'); slash != std::string::npos)
    object = object.substr(slash + 1);
  return object + ":" + (info.dli_sname != nullptr ? info.dli_sname : "?");
}

std::string objectOf(const void* p) {
  const std::string w = where(p);
  return w.substr(0, w.find(':'));
}

// libc's dlsym, asked for by version so that a dlsym the program is linked to (the shim's,
// unversioned) is not the answer.
DlsymFn libcDlsym() {
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (libc == nullptr) return nullptr;
  void* f = dlvsym(libc, "dlsym", "GLIBC_2.34");
  if (f == nullptr) f = dlvsym(libc, "dlsym", kLibcBaseVersion);
  return reinterpret_cast<DlsymFn>(f);
}

struct Probe {
  std::string library;
  void* handle = nullptr;

  bool open(const std::string& mode) {
    const int flag = mode == "global" ? RTLD_GLOBAL : RTLD_LOCAL;
    handle = dlopen(library.c_str(), RTLD_NOW | flag);
    std::printf("open:%s %s\n", mode.c_str(), handle != nullptr ? "ok" : dlerror());
    return handle != nullptr;
  }

  void* lookUp(const std::string& how, const char* name) {
    if (how == "handle") return dlsym(handle, name);
    if (how == "main") return dlsym(dlopen(nullptr, RTLD_NOW), name);
    if (how == "default") return dlsym(RTLD_DEFAULT, name);
    if (how == "next") return dlsym(RTLD_NEXT, name);
    return nullptr;
  }

  bool nccl(const std::string& how) {
    auto get_id = reinterpret_cast<decltype(&ncclGetUniqueId)>(lookUp(how, "ncclGetUniqueId"));
    auto init = reinterpret_cast<decltype(&ncclCommInitRank)>(lookUp(how, "ncclCommInitRank"));
    auto all_reduce = reinterpret_cast<decltype(&ncclAllReduce)>(lookUp(how, "ncclAllReduce"));
    auto destroy = reinterpret_cast<decltype(&ncclCommDestroy)>(lookUp(how, "ncclCommDestroy"));
    std::printf(
        "ncclGetUniqueId in %s\nncclCommInitRank in %s\nncclAllReduce in %s\n"
        "ncclCommDestroy in %s\n",
        objectOf(reinterpret_cast<void*>(get_id)).c_str(),
        objectOf(reinterpret_cast<void*>(init)).c_str(),
        objectOf(reinterpret_cast<void*>(all_reduce)).c_str(),
        objectOf(reinterpret_cast<void*>(destroy)).c_str());
    if (!get_id || !init || !all_reduce || !destroy) {
      std::printf("nccl:%s missing\n", how.c_str());
      return false;
    }
    ncclUniqueId id{};
    ncclComm_t comm = nullptr;
    float send[8], recv[8] = {};
    for (int i = 0; i < 8; ++i) send[i] = static_cast<float>(i + 1);
    const int rc_id = get_id(&id);
    const int rc_init = rc_id == ncclSuccess ? init(&comm, 1, id, 0) : -1;
    const int rc_reduce = rc_init == ncclSuccess
                              ? all_reduce(send, recv, 8, ncclFloat32, ncclSum, comm, nullptr)
                              : -1;
    const int rc_destroy = rc_init == ncclSuccess ? destroy(comm) : -1;
    const bool data_ok = std::memcmp(send, recv, sizeof(send)) == 0;
    std::printf("nccl:%s rc=%d,%d,%d,%d data=%s\n", how.c_str(), rc_id, rc_init, rc_reduce,
                rc_destroy, data_ok ? "ok" : "wrong");
    return rc_destroy == ncclSuccess && data_ok;
  }

  // A handle without NCCL, and names the library lacks: the answers stay NULL with an error.
  bool missing() {
    void* libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    struct Case {
      const char* label;
      void* h;
      const char* name;
      const char* version;
    };
    const Case cases[] = {{"libm", libm, "ncclAllReduce", nullptr},
                          {"libm", libm, "ncclAllReduce", kLibcBaseVersion},
                          {"library", handle, "ncclNoSuchEntryPoint", nullptr},
                          {"library", handle, "ncclAllReduce", "NCCLREC_NO_SUCH_VERSION"}};
    bool ok = true;
    for (const Case& c : cases) {
      dlerror();
      void* p = c.version != nullptr ? dlvsym(c.h, c.name, c.version) : dlsym(c.h, c.name);
      const bool error = dlerror() != nullptr;
      std::printf("missing %s %s%s%s %s dlerror=%s\n", c.label, c.name, c.version ? "@" : "",
                  c.version ? c.version : "", where(p).c_str(), error ? "set" : "unset");
      ok = ok && p == nullptr && error;
    }
    // A name that is found leaves no error behind, even when its lookup is the one that makes the
    // shim adopt the library (and look up every entry point, some absent from the stub).
    for (const char* name : {"ncclCommSplit", "ncclCommCount"}) {
      dlerror();
      void* p = dlsym(handle, name);
      const bool error = dlerror() != nullptr;
      std::printf("found %s in %s dlerror=%s\n", name, objectOf(p).c_str(),
                  error ? "set" : "unset");
      ok = ok && p != nullptr && !error;
    }
    return ok;
  }

  bool same() {
    const DlsymFn real = libcDlsym();
    if (real == nullptr) {
      std::printf("same: libc's dlsym not found\n");
      return false;
    }
    void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    struct Handle {
      const char* label;
      void* h;
    };
    const Handle handles[] = {
        {"default", RTLD_DEFAULT}, {"next", RTLD_NEXT}, {"libc", libc}, {"library", handle}};
    bool ok = true;
    for (const Handle& h : handles) {
      for (const char* name : {"malloc", "free", "dlopen", "dlsym", "probeTwin", "ncclGetVersion",
                               "ncclGetErrorString", "pncclAllReduce", "nccl", "ncc", ""}) {
        void* hooked = dlsym(h.h, name);
        void* direct = real(h.h, name);
        std::printf("same %s:%s %s %s\n", h.label, name, where(hooked).c_str(),
                    hooked == direct ? "equal" : "DIFFERENT");
        ok = ok && hooked == direct;
      }
    }
    void* v = dlvsym(RTLD_DEFAULT, "dlsym", kLibcBaseVersion);
    std::printf("same dlvsym default:dlsym@base %s %s\n", objectOf(v).c_str(),
                v == reinterpret_cast<void*>(real) ? "libc's" : "OTHER");
    return ok && v == reinterpret_cast<void*>(real);
  }

  bool next() {
    const struct {
      const char* name;
      const char* version;
    } cases[] = {{"probeTwin", nullptr},
                 {"malloc", nullptr},
                 {"dlsym", nullptr},
                 {"dlopen", nullptr},
                 {"ncclrecNoSuchSymbol", nullptr},
                 {"malloc", kLibcBaseVersion}};
    // Twice: in a process whose first lookup this is, the first round goes through the
    // trampoline's first-use path, the second through its usual one.
    for (int round = 1; round <= 2; ++round) {
      for (const auto& c : cases) {
        void* p = c.version != nullptr ? nextProbeVersionedLookup(c.name, c.version)
                                       : nextProbeLookup(c.name);
        std::printf("next %d %s%s %s\n", round, c.name, c.version != nullptr ? "@base" : "",
                    where(p).c_str());
      }
    }
    std::printf("next probeTwin() %d\n", probeTwin());
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dlsym_probe <library> <step>...\n");
    return 2;
  }
  Probe probe;
  probe.library = argv[1];
  bool ok = true;
  for (int i = 2; i < argc; ++i) {
    const std::string step = argv[i];
    if (step == "open:local" || step == "open:global") {
      ok = probe.open(step.substr(5)) && ok;
    } else if (step.rfind("nccl:", 0) == 0) {
      ok = probe.nccl(step.substr(5)) && ok;
    } else if (step.rfind("other:", 0) == 0) {
      void* other = dlopen(step.c_str() + 6, RTLD_NOW | RTLD_LOCAL);
      std::printf("other ncclAllReduce in %s\n",
                  other != nullptr ? objectOf(dlsym(other, "ncclAllReduce")).c_str() : dlerror());
    } else if (step == "missing") {
      ok = probe.missing() && ok;
    } else if (step == "same") {
      ok = probe.same() && ok;
    } else if (step == "next") {
      ok = probe.next() && ok;
    } else if (step == "hook") {
      std::printf("hook dlsym in %s\n", objectOf(reinterpret_cast<void*>(&dlsym)).c_str());
    } else {
      std::fprintf(stderr, "dlsym_probe: unknown step '%s'\n", step.c_str());
      return 2;
    }
    std::fflush(stdout);
  }
  return ok ? 0 : 1;
}
