// Helpers for the exported C API (api_comm.cc, api_coll.cc).
//
// Each entry point is defined once as nccl* (weak, like NCCL's) with pnccl* as an alias of the
// same code, so tools such as libncclrec.so can forward to pnccl* exactly as with real NCCL.
// Nothing escapes an entry point as an exception: guarded() turns any into a result code.
#pragma once

#include <gloo/common/logging.h>

#include <exception>
#include <new>

#include "hostnccl/comm.h"
#include "hostnccl/errors.h"
#include "third_party/nccl/nccl.h"

#define HOSTNCCL_API(ret, name, ...)                                         \
  extern "C" __attribute__((visibility("default"))) ret p##name(__VA_ARGS__) \
      __attribute__((alias(#name)));                                         \
  extern "C" __attribute__((visibility("default"), weak)) ret name(__VA_ARGS__)

namespace ncclrec::hostnccl {

template <typename F>
ncclResult_t guarded(const char* name, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(ncclSystemError, "%s: out of memory", name);
  } catch (const gloo::EnforceNotMet& e) {
    return fail(ncclInternalError, "%s: transport: %s", name, e.what());
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "%s: %s", name, e.what());
  } catch (...) {
    return fail(ncclInternalError, "%s: unknown exception", name);
  }
}

// ncclInvalidArgument unless `comm` is a live communicator of this library.
ncclResult_t checkComm(const Comm* comm, const char* name);

}  // namespace ncclrec::hostnccl
