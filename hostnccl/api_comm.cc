// Exported C API: versions, ids, communicator lifetime and queries, custom reduction ops.
#include <cstdlib>
#include <cstring>

#include "hostnccl/api.h"
#include "hostnccl/async.h"
#include "hostnccl/group.h"
#include "hostnccl/lifecycle.h"
#include "hostnccl/reduce_ops.h"

using namespace ncclrec::hostnccl;

// What ncclCommWindowRegister hands out: host memory needs no registration, but the handle must
// be distinct and freeable.
struct ncclWindow_vidmem {
  void* base;
  size_t size;
};

namespace ncclrec::hostnccl {

ncclResult_t checkComm(const Comm* comm, const char* name) {
  if (comm == nullptr) return fail(ncclInvalidArgument, "%s: comm argument is NULL", name);
  if (!isLiveComm(comm)) {
    return fail(ncclInvalidArgument, "%s: comm %p is not a live communicator (destroyed?)", name,
                static_cast<const void*>(comm));
  }
  return ncclSuccess;
}

namespace {

ncclResult_t checkNotNull(const void* p, const char* what, const char* name) {
  if (p == nullptr) return fail(ncclInvalidArgument, "%s: %s argument is NULL", name, what);
  return ncclSuccess;
}

ncclResult_t checkConfig(const ncclConfig_t* config, const char* name) {
  if (config == nullptr) return ncclSuccess;
  if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, cgaClusterSize)) {
    return fail(ncclInvalidArgument, "%s: config is not initialized with NCCL_CONFIG_INITIALIZER",
                name);
  }
  return ncclSuccess;
}

ncclResult_t initChecked(ncclComm_t* comm, int nranks, const ncclUniqueId& id, int rank,
                         const ncclConfig_t* config, const char* name) {
  if (ncclResult_t rc = checkNotNull(comm, "newcomm", name); rc != ncclSuccess) return rc;
  *comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return fail(ncclInvalidArgument, "%s: rank %d / nranks %d out of range", name, rank, nranks);
  }
  if (ncclResult_t rc = checkConfig(config, name); rc != ncclSuccess) return rc;
  if (config != nullptr && config->blocking == 0) {
    return initRankNonblocking(comm, nranks, id, rank, currentPlacement());
  }
  return initRank(comm, nranks, id, rank, currentPlacement());
}

#define RETURN_IF_ERROR(expr)                                      \
  do {                                                             \
    if (ncclResult_t rc_ = (expr); rc_ != ncclSuccess) return rc_; \
  } while (0)

}  // namespace
}  // namespace ncclrec::hostnccl

HOSTNCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == nullptr) return fail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

HOSTNCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return guarded("ncclGetUniqueId", [&] {
    RETURN_IF_ERROR(checkNotNull(uniqueId, "uniqueId", "ncclGetUniqueId"));
    return getUniqueId(uniqueId);
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks,
             ncclUniqueId commId, int rank, ncclConfig_t* config) {
  return guarded("ncclCommInitRankConfig", [&] {
    return initChecked(comm, nranks, commId, rank, config, "ncclCommInitRankConfig");
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
             int rank) {
  return guarded("ncclCommInitRank", [&] {
    return initChecked(comm, nranks, commId, rank, nullptr, "ncclCommInitRank");
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
             int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  return guarded("ncclCommInitRankScalable", [&] {
    if (nId < 1 || commIds == nullptr) {
      return fail(ncclInvalidArgument, "ncclCommInitRankScalable: need nId >= 1 unique ids");
    }
    // Every rank passes the same ids; one rendezvous root is enough on a host transport.
    return initChecked(newcomm, nranks, commIds[0], myrank, config, "ncclCommInitRankScalable");
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return guarded("ncclCommInitAll", [&] {
    RETURN_IF_ERROR(checkNotNull(comms, "comms", "ncclCommInitAll"));
    if (ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll: ndev %d < 1", ndev);
    return initAll(comms, ndev, devlist);
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  return guarded("ncclCommFinalize", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommFinalize"));
    // A blocking call completes before it returns: nothing is left to flush. A nonblocking
    // communicator reports the flush through ncclCommGetAsyncError, as NCCL's does.
    if (comm->blocking) return ncclSuccess;
    return launchAsync(
        {comm}, [] { return ncclSuccess; }, "ncclCommFinalize");
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return guarded("ncclCommDestroy", [&] {
    if (comm == nullptr) return ncclSuccess;  // NCCL accepts a null communicator here
    RETURN_IF_ERROR(checkComm(comm, "ncclCommDestroy"));
    // Like NCCL's, waits for what the communicator still runs (a nonblocking call).
    comm->waitWork();
    unregisterComm(comm);
    delete comm;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return guarded("ncclCommAbort", [&] {
    if (comm == nullptr) return ncclSuccess;
    RETURN_IF_ERROR(checkComm(comm, "ncclCommAbort"));
    // Unregister first so new calls are refused, then interrupt and wait out the running ones. A
    // nonblocking init still joining is waited for (until the join ends, or HOSTNCCL_TIMEOUT).
    unregisterComm(comm);
    if (!comm->joined) comm->waitWork();
    comm->abortAll("ncclCommAbort");
    comm->waitWork();  // an interrupted nonblocking call ends promptly
    delete comm;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return guarded("ncclCommRevoke", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommRevoke"));
    if (revokeFlags != NCCL_REVOKE_DEFAULT) {
      return fail(ncclInvalidArgument, "ncclCommRevoke: unknown flags 0x%x", revokeFlags);
    }
    comm->abortAll("ncclCommRevoke");
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
             ncclConfig_t* config) {
  return guarded("ncclCommSplit", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommSplit"));
    RETURN_IF_ERROR(checkNotNull(newcomm, "newcomm", "ncclCommSplit"));
    RETURN_IF_ERROR(checkConfig(config, "ncclCommSplit"));
    if (comm->busy()) {
      return fail(ncclInvalidUsage,
                  "ncclCommSplit: communicator %016llx still runs a nonblocking call",
                  static_cast<unsigned long long>(comm->hash));
    }
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
      return fail(ncclInvalidArgument, "ncclCommSplit: color %d must be >= 0 or NCCL_SPLIT_NOCOLOR",
                  color);
    }
    return split(*comm, color, key, newcomm);
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
             int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return guarded("ncclCommShrink", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommShrink"));
    RETURN_IF_ERROR(checkNotNull(newcomm, "newcomm", "ncclCommShrink"));
    RETURN_IF_ERROR(checkConfig(config, "ncclCommShrink"));
    if (excludeRanksCount < 0 || (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
      return fail(ncclInvalidArgument, "ncclCommShrink: bad exclude list (count %d)",
                  excludeRanksCount);
    }
    if ((shrinkFlags & ~NCCL_SHRINK_ABORT) != 0) {
      return fail(ncclInvalidArgument, "ncclCommShrink: unknown flags 0x%x", shrinkFlags);
    }
    std::vector<bool> seen(comm->nranks, false);
    for (int i = 0; i < excludeRanksCount; ++i) {
      int r = excludeRanksList[i];
      if (r < 0 || r >= comm->nranks || seen[r]) {
        return fail(ncclInvalidArgument,
                    "ncclCommShrink: excluded rank %d is out of range or "
                    "listed twice",
                    r);
      }
      if (r == comm->rank) {
        return fail(ncclInvalidArgument, "ncclCommShrink: rank %d excludes itself", r);
      }
      seen[r] = true;
    }
    if (excludeRanksCount >= comm->nranks) {
      return fail(ncclInvalidArgument, "ncclCommShrink: cannot exclude every rank");
    }
    return shrink(*comm, excludeRanksList, excludeRanksCount, newcomm, shrinkFlags);
  });
}

HOSTNCCL_API(const char*, ncclGetErrorString, ncclResult_t result) { return errorString(result); }

HOSTNCCL_API(const char*, ncclGetLastError, ncclComm_t /*comm*/) { return lastError(); }

// In NCCL's library but missing from third_party/nccl/nccl.h; exported for ABI parity.
extern "C" __attribute__((visibility("default"), weak)) void ncclResetDebugInit() {}
extern "C" __attribute__((visibility("default"))) void pncclResetDebugInit()
    __attribute__((alias("ncclResetDebugInit")));

HOSTNCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  return guarded("ncclCommGetAsyncError", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommGetAsyncError"));
    RETURN_IF_ERROR(checkNotNull(asyncError, "asyncError", "ncclCommGetAsyncError"));
    *asyncError = comm->asyncState();
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  return guarded("ncclCommCount", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommCount"));
    RETURN_IF_ERROR(checkNotNull(count, "count", "ncclCommCount"));
    *count = comm->nranks;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  return guarded("ncclCommCuDevice", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommCuDevice"));
    RETURN_IF_ERROR(checkNotNull(device, "device", "ncclCommCuDevice"));
    *device = comm->cudaDev;
    return ncclSuccess;
  });
}

// hostnccl's own (not NVIDIA's): the process's emulated current device, the one the next
// ncclCommInitRank will use (device.h). Tools look it up with dlsym; its presence also says that
// the NCCL in the process is hostnccl, whose devices are emulated.
extern "C" __attribute__((visibility("default"))) ncclResult_t hostncclGetDevice(int* device) {
  return guarded("hostncclGetDevice", [&] {
    RETURN_IF_ERROR(checkNotNull(device, "device", "hostncclGetDevice"));
    *device = currentPlacement().device;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  return guarded("ncclCommUserRank", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommUserRank"));
    RETURN_IF_ERROR(checkNotNull(rank, "rank", "ncclCommUserRank"));
    *rank = comm->rank;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  return guarded("ncclMemAlloc", [&] {
    RETURN_IF_ERROR(checkNotNull(ptr, "ptr", "ncclMemAlloc"));
    void* p = nullptr;
    if (posix_memalign(&p, 4096, size == 0 ? 1 : size) != 0) {
      return fail(ncclSystemError, "ncclMemAlloc: cannot allocate %zu bytes", size);
    }
    *ptr = p;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclMemFree, void* ptr) {
  std::free(ptr);
  return ncclSuccess;
}

HOSTNCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
             void** handle) {
  return guarded("ncclCommRegister", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommRegister"));
    RETURN_IF_ERROR(checkNotNull(handle, "handle", "ncclCommRegister"));
    // Host memory needs no registration; the handle only has to round-trip.
    *handle = buff;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* /*handle*/) {
  return guarded("ncclCommDeregister", [&] { return checkComm(comm, "ncclCommDeregister"); });
}

HOSTNCCL_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
             ncclWindow_t* win, int /*winFlags*/) {
  return guarded("ncclCommWindowRegister", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommWindowRegister"));
    RETURN_IF_ERROR(checkNotNull(win, "win", "ncclCommWindowRegister"));
    *win = new ncclWindow_vidmem{buff, size};
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  return guarded("ncclCommWindowDeregister", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclCommWindowDeregister"));
    delete win;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
             ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  return guarded("ncclRedOpCreatePreMulSum", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclRedOpCreatePreMulSum"));
    RETURN_IF_ERROR(checkNotNull(op, "op", "ncclRedOpCreatePreMulSum"));
    RETURN_IF_ERROR(checkNotNull(scalar, "scalar", "ncclRedOpCreatePreMulSum"));
    if (dtypeSize(datatype) == 0) {
      return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid datatype %d",
                  static_cast<int>(datatype));
    }
    if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
      return fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid residence %d",
                  static_cast<int>(residence));
    }
    PreMulSumOp p;
    p.inUse = true;
    p.dtype = datatype;
    p.residence = residence;
    // Host-immediate scalars are captured now; "device" scalars (host memory here) at each call.
    if (residence == ncclScalarHostImmediate) {
      std::memcpy(p.value, scalar, dtypeSize(datatype));
    } else {
      p.pointer = scalar;
    }
    size_t i = 0;
    while (i < comm->preMulSumOps.size() && comm->preMulSumOps[i].inUse) ++i;
    if (i == comm->preMulSumOps.size()) comm->preMulSumOps.emplace_back();
    comm->preMulSumOps[i] = p;
    *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(i));
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  return guarded("ncclRedOpDestroy", [&] {
    RETURN_IF_ERROR(checkComm(comm, "ncclRedOpDestroy"));
    long i = static_cast<long>(op) - ncclNumOps;
    if (i < 0 || i >= static_cast<long>(comm->preMulSumOps.size()) ||
        !comm->preMulSumOps[i].inUse) {
      return fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not created on this comm",
                  static_cast<int>(op));
    }
    comm->preMulSumOps[i].inUse = false;
    return ncclSuccess;
  });
}

HOSTNCCL_API(ncclResult_t, ncclGroupStart, void) {
  return guarded("ncclGroupStart", [&] { return groupStart(); });
}

HOSTNCCL_API(ncclResult_t, ncclGroupEnd, void) {
  return guarded("ncclGroupEnd", [&] { return groupEnd(); });
}

HOSTNCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  return guarded("ncclGroupSimulateEnd", [&] {
    RETURN_IF_ERROR(checkNotNull(simInfo, "simInfo", "ncclGroupSimulateEnd"));
    if (simInfo->magic != 0x74685283) {
      return fail(ncclInvalidArgument,
                  "ncclGroupSimulateEnd: simInfo not initialized with NCCL_SIM_INFO_INITIALIZER");
    }
    // No model of host TCP time is worth more than a guess; report zero and run nothing.
    simInfo->estimatedTime = 0.0f;
    return groupDiscard();
  });
}
