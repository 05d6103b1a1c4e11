// Two small libraries for the RTLD_NEXT case of the dlsym tests, built from this file:
// libncclrec_next_probe_a.so (NCCLREC_NEXT_PROBE_CALLER) and _b.so. dlsym_probe links a before b,
// so dlsym(RTLD_NEXT, "probeTwin") made inside a answers b's probeTwin. A dlsym that forwarded
// with an ordinary call from libncclrec.so (preloaded, so ahead of both) would answer a's own.
#include <dlfcn.h>

#define NCCLREC_NEXT_PROBE_EXPORT extern "C" __attribute__((visibility("default")))

#ifdef NCCLREC_NEXT_PROBE_CALLER
NCCLREC_NEXT_PROBE_EXPORT int probeTwin() { return 'a'; }

// noinline and not a tail call: dlsym must see a return address inside this library.
NCCLREC_NEXT_PROBE_EXPORT __attribute__((noinline)) void* nextProbeLookup(const char* name) {
  void* volatile p = dlsym(RTLD_NEXT, name);
  return p;
}

NCCLREC_NEXT_PROBE_EXPORT __attribute__((noinline)) void* nextProbeVersionedLookup(
    const char* name, const char* version) {
  void* volatile p = dlvsym(RTLD_NEXT, name, version);
  return p;
}
#else
NCCLREC_NEXT_PROBE_EXPORT int probeTwin() { return 'b'; }
#endif
