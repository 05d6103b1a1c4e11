// A stub libnccl.so.2 for unit tests: every entry point of third_party/nccl/nccl.h, exported as
// nccl<X> and as the pnccl<X> alias, exactly as NVIDIA's NCCL exports them. Arguments are checked
// the way NCCL checks them; on a one-rank communicator the collectives whose result is a copy of
// the input copy it, so a test can see that buffers were forwarded unchanged; with more ranks they
// only check. Test controls live in stub_state.cc (stub_control.h); see README.md.
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "format/op_type.h"
#include "nccl.h"
#include "tests/support/stub_state.h"

namespace stub = ncclrec::support::stub;

// As NCCL's NCCL_API: nccl<X> is a weak default-visibility definition and pnccl<X> a strong alias
// of it. Calls between entry points (ncclBcast -> ncclBroadcast) go to nccl<X> through the PLT, as
// in NCCL, so a preloaded library that defines nccl<X> sees them: the shim's re-entry guard is
// tested on that. Keep this library free of -Bsymbolic and -fno-semantic-interposition for that
// reason.
#define STUB_API(ret, func, ...)                                                            \
  extern "C" __attribute__((visibility("default"), alias(#func))) ret p##func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"), weak)) ret func(__VA_ARGS__)

#define STUB_ENTER(name, ...)                                                         \
  do {                                                                                \
    const int forced_ = stub::enter(stub::Entry::k##name __VA_OPT__(, ) __VA_ARGS__); \
    if (forced_ != stub::kNotForced) return static_cast<ncclResult_t>(forced_);       \
  } while (0)

#define STUB_CHECK(call)                \
  do {                                  \
    const ncclResult_t rc_ = (call);    \
    if (rc_ != ncclSuccess) return rc_; \
  } while (0)

namespace {

constexpr unsigned int kConfigMagic = 0xcafebeef;
constexpr unsigned int kSimInfoMagic = 0x74685283;

thread_local char tLastError[256];
thread_local int tGroupDepth = 0;
std::atomic<uint64_t> gUniqueIdCounter{0};

// Records the reason for ncclGetLastError and returns `result`.
__attribute__((format(printf, 3, 4))) ncclResult_t fail(ncclResult_t result, const char* func,
                                                        const char* format, ...) {
  const int n = std::snprintf(tLastError, sizeof(tLastError), "%s: ", func);
  va_list args;
  va_start(args, format);
  std::vsnprintf(tLastError + n, sizeof(tLastError) - static_cast<size_t>(n), format, args);
  va_end(args);
  return result;
}

uint64_t mix(uint64_t hash, uint64_t value) {
  for (int i = 0; i < 8; ++i) {
    hash ^= (value >> (8 * i)) & 0xff;
    hash *= 0x100000001b3ull;  // FNV-1a
  }
  return hash;
}

uint64_t hashId(const ncclUniqueId& id) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char byte : id.internal) hash = mix(hash, static_cast<unsigned char>(byte));
  return hash;
}

void fillUniqueId(ncclUniqueId* id) {
  const uint64_t counter = gUniqueIdCounter.fetch_add(1, std::memory_order_relaxed) + 1;
  std::memcpy(id->internal, "STUBNCCL", 8);
  std::memcpy(id->internal + 8, &counter, sizeof(counter));
  for (size_t i = 16; i < sizeof(id->internal); ++i) {
    id->internal[i] = static_cast<char>(0xa5 ^ i ^ (counter & 0xff));
  }
}

ncclResult_t makeComm(ncclComm_t* out, int nranks, int rank, int device, uint64_t id,
                      const char* func) {
  auto* comm = new (std::nothrow) ncclComm;
  if (comm == nullptr) return fail(ncclSystemError, func, "out of memory");
  comm->nranks = nranks;
  comm->rank = rank;
  comm->device = device;
  comm->id = id;
  stub::registerComm(comm);
  *out = comm;
  return ncclSuccess;
}

ncclResult_t checkComm(const ncclComm* comm, const char* func) {
  if (comm == nullptr) return fail(ncclInvalidArgument, func, "comm is NULL");
  if (comm->magic != ncclComm::kMagic) return fail(ncclInvalidArgument, func, "comm is invalid");
  if (comm->destroyed.load()) return fail(ncclInvalidUsage, func, "comm was destroyed");
  return ncclSuccess;
}

ncclResult_t checkNotNull(const void* pointer, const char* what, const char* func) {
  return pointer != nullptr ? ncclSuccess : fail(ncclInvalidArgument, func, "%s is NULL", what);
}

ncclResult_t checkConfig(const ncclConfig_t* config, const char* func) {
  if (config == nullptr || config->magic == kConfigMagic) return ncclSuccess;
  return fail(ncclInvalidArgument, func, "config not initialized with NCCL_CONFIG_INITIALIZER");
}

size_t typeSize(ncclDataType_t type) {
  return static_cast<size_t>(ncclrec::format::dataTypeSize(static_cast<int>(type)));
}

ncclResult_t checkType(ncclDataType_t type, const char* func) {
  if (typeSize(type) != 0) return ncclSuccess;
  return fail(ncclInvalidArgument, func, "invalid datatype %d", static_cast<int>(type));
}

ncclResult_t checkOp(ncclRedOp_t op, const ncclComm* comm, const char* func) {
  if (op >= 0 && op < ncclNumOps + comm->redOps.load()) return ncclSuccess;
  return fail(ncclInvalidArgument, func, "invalid reduction operation %d", static_cast<int>(op));
}

ncclResult_t checkRank(int value, const ncclComm* comm, const char* what, const char* func) {
  if (value >= 0 && value < comm->nranks) return ncclSuccess;
  return fail(ncclInvalidArgument, func, "%s %d out of range [0, %d)", what, value, comm->nranks);
}

ncclResult_t checkBuffer(const void* buffer, size_t count, const char* what, const char* func) {
  if (count == 0 || buffer != nullptr) return ncclSuccess;
  return fail(ncclInvalidArgument, func, "%s is NULL", what);
}

// The whole result of a one-rank collective whose reduction (if any) is the identity on one input.
void copyIfAlone(const ncclComm* comm, const void* sendbuff, void* recvbuff, size_t count,
                 ncclDataType_t type, ncclRedOp_t op = ncclSum) {
  if (comm->nranks != 1 || op >= ncclNumOps || count == 0 || sendbuff == recvbuff) return;
  std::memmove(recvbuff, sendbuff, count * typeSize(type));
}

ncclResult_t destroyComm(ncclComm_t comm, const char* func) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  STUB_CHECK(checkComm(comm, func));
  bool expected = false;
  if (!comm->destroyed.compare_exchange_strong(expected, true)) {
    return fail(ncclInvalidUsage, func, "comm was destroyed");
  }
  return ncclSuccess;
}

}  // namespace

STUB_API(ncclResult_t, ncclMemAlloc, void** ptr, size_t size) {
  STUB_ENTER(MemAlloc, ptr, size);
  STUB_CHECK(checkNotNull(ptr, "ptr", "ncclMemAlloc"));
  *ptr = std::malloc(size != 0 ? size : 1);
  return *ptr != nullptr ? ncclSuccess : fail(ncclSystemError, "ncclMemAlloc", "out of memory");
}

STUB_API(ncclResult_t, ncclMemFree, void* ptr) {
  STUB_ENTER(MemFree, ptr);
  std::free(ptr);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclGetVersion, int* version) {
  STUB_ENTER(GetVersion, version);
  STUB_CHECK(checkNotNull(version, "version", "ncclGetVersion"));
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  STUB_ENTER(GetUniqueId, uniqueId);
  STUB_CHECK(checkNotNull(uniqueId, "uniqueId", "ncclGetUniqueId"));
  fillUniqueId(uniqueId);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank, ncclConfig_t* config) {
  constexpr const char* kFunc = "ncclCommInitRankConfig";
  STUB_ENTER(CommInitRankConfig, comm, nranks, commId, rank, config);
  STUB_CHECK(checkNotNull(comm, "comm", kFunc));
  if (nranks < 1) return fail(ncclInvalidArgument, kFunc, "nranks %d < 1", nranks);
  if (rank < 0 || rank >= nranks) {
    return fail(ncclInvalidArgument, kFunc, "rank %d out of range [0, %d)", rank, nranks);
  }
  STUB_CHECK(checkConfig(config, kFunc));
  return makeComm(comm, nranks, rank, stub::deviceForRank(rank), hashId(commId), kFunc);
}

STUB_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId,
         int rank) {
  STUB_ENTER(CommInitRank, comm, nranks, commId, rank);
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);  // through the PLT
}

STUB_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist) {
  STUB_ENTER(CommInitAll, comm, ndev, devlist);
  STUB_CHECK(checkNotNull(comm, "comm", "ncclCommInitAll"));
  if (ndev < 1) return fail(ncclInvalidArgument, "ncclCommInitAll", "ndev %d < 1", ndev);
  ncclUniqueId id;
  fillUniqueId(&id);
  for (int i = 0; i < ndev; ++i) {
    const int device = devlist != nullptr ? devlist[i] : i;
    STUB_CHECK(makeComm(&comm[i], ndev, i, device, hashId(id), "ncclCommInitAll"));
  }
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank,
         int nId, ncclUniqueId* commIds, ncclConfig_t* config) {
  constexpr const char* kFunc = "ncclCommInitRankScalable";
  STUB_ENTER(CommInitRankScalable, newcomm, nranks, myrank, nId, commIds, config);
  STUB_CHECK(checkNotNull(newcomm, "newcomm", kFunc));
  STUB_CHECK(checkNotNull(commIds, "commIds", kFunc));
  if (nranks < 1 || myrank < 0 || myrank >= nranks || nId < 1) {
    return fail(ncclInvalidArgument, kFunc, "nranks %d, myrank %d, nId %d", nranks, myrank, nId);
  }
  STUB_CHECK(checkConfig(config, kFunc));
  return makeComm(newcomm, nranks, myrank, stub::deviceForRank(myrank), hashId(commIds[0]), kFunc);
}

STUB_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  STUB_ENTER(CommFinalize, comm);
  return checkComm(comm, "ncclCommFinalize");
}

STUB_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  STUB_ENTER(CommDestroy, comm);
  return destroyComm(comm, "ncclCommDestroy");
}

STUB_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  STUB_ENTER(CommAbort, comm);
  return destroyComm(comm, "ncclCommAbort");
}

STUB_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  STUB_ENTER(CommRevoke, comm, revokeFlags);
  STUB_CHECK(checkComm(comm, "ncclCommRevoke"));
  if (revokeFlags == NCCL_REVOKE_DEFAULT) return ncclSuccess;
  return fail(ncclInvalidArgument, "ncclCommRevoke", "revokeFlags %d", revokeFlags);
}

// Every rank is taken to pass the same color, so the child has the parent's size and rank order.
STUB_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
         ncclConfig_t* config) {
  constexpr const char* kFunc = "ncclCommSplit";
  STUB_ENTER(CommSplit, comm, color, key, newcomm, config);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkNotNull(newcomm, "newcomm", kFunc));
  STUB_CHECK(checkConfig(config, kFunc));
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return fail(ncclInvalidArgument, kFunc, "color %d", color);
  }
  const int split = comm->splits.fetch_add(1);
  if (color == NCCL_SPLIT_NOCOLOR) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  const uint64_t id = mix(mix(comm->id, static_cast<uint64_t>(color)), split);
  return makeComm(newcomm, comm->nranks, comm->rank, comm->device, id, kFunc);
}

STUB_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList,
         int excludeRanksCount, ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  constexpr const char* kFunc = "ncclCommShrink";
  STUB_ENTER(CommShrink, comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkNotNull(newcomm, "newcomm", kFunc));
  STUB_CHECK(checkConfig(config, kFunc));
  if (excludeRanksCount < 0 || excludeRanksCount >= comm->nranks ||
      (excludeRanksCount > 0 && excludeRanksList == nullptr)) {
    return fail(ncclInvalidArgument, kFunc, "excludeRanksCount %d", excludeRanksCount);
  }
  if (shrinkFlags != NCCL_SHRINK_DEFAULT && shrinkFlags != NCCL_SHRINK_ABORT) {
    return fail(ncclInvalidArgument, kFunc, "shrinkFlags %d", shrinkFlags);
  }
  int below = 0;
  uint64_t id = mix(comm->id, 0x5348524e4bull);  // "SHRNK"
  for (int i = 0; i < excludeRanksCount; ++i) {
    const int excluded = excludeRanksList[i];
    STUB_CHECK(checkRank(excluded, comm, "excluded rank", kFunc));
    if (excluded == comm->rank) {
      return fail(ncclInvalidArgument, kFunc, "rank %d excludes itself", comm->rank);
    }
    for (int j = 0; j < i; ++j) {
      if (excludeRanksList[j] == excluded) {
        return fail(ncclInvalidArgument, kFunc, "rank %d excluded twice", excluded);
      }
    }
    below += excluded < comm->rank ? 1 : 0;
    id = mix(id, static_cast<uint64_t>(excluded));
  }
  id = mix(id, comm->splits.fetch_add(1));
  return makeComm(newcomm, comm->nranks - excludeRanksCount, comm->rank - below, comm->device, id,
                  kFunc);
}

STUB_API(const char*, ncclGetErrorString, ncclResult_t result) {
  stub::enter(stub::Entry::kGetErrorString, result);
  switch (result) {  // NCCL's wording
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

STUB_API(const char*, ncclGetLastError, ncclComm_t comm) {
  stub::enter(stub::Entry::kGetLastError, comm);
  return tLastError;
}

STUB_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError) {
  STUB_ENTER(CommGetAsyncError, comm, asyncError);
  STUB_CHECK(checkComm(comm, "ncclCommGetAsyncError"));
  STUB_CHECK(checkNotNull(asyncError, "asyncError", "ncclCommGetAsyncError"));
  *asyncError = static_cast<ncclResult_t>(comm->asyncError.load());
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count) {
  STUB_ENTER(CommCount, comm, count);
  STUB_CHECK(checkComm(comm, "ncclCommCount"));
  STUB_CHECK(checkNotNull(count, "count", "ncclCommCount"));
  *count = comm->nranks;
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device) {
  STUB_ENTER(CommCuDevice, comm, device);
  STUB_CHECK(checkComm(comm, "ncclCommCuDevice"));
  STUB_CHECK(checkNotNull(device, "device", "ncclCommCuDevice"));
  *device = comm->device;
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank) {
  STUB_ENTER(CommUserRank, comm, rank);
  STUB_CHECK(checkComm(comm, "ncclCommUserRank"));
  STUB_CHECK(checkNotNull(rank, "rank", "ncclCommUserRank"));
  *rank = comm->rank;
  return ncclSuccess;
}

// Registration handles are the registered address itself: nothing is pinned on a host.
STUB_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size,
         void** handle) {
  STUB_ENTER(CommRegister, comm, buff, size, handle);
  STUB_CHECK(checkComm(comm, "ncclCommRegister"));
  STUB_CHECK(checkNotNull(handle, "handle", "ncclCommRegister"));
  *handle = buff;
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  STUB_ENTER(CommDeregister, comm, handle);
  return checkComm(comm, "ncclCommDeregister");
}

STUB_API(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size,
         ncclWindow_t* win, int winFlags) {
  STUB_ENTER(CommWindowRegister, comm, buff, size, win, winFlags);
  STUB_CHECK(checkComm(comm, "ncclCommWindowRegister"));
  STUB_CHECK(checkNotNull(win, "win", "ncclCommWindowRegister"));
  *win = reinterpret_cast<ncclWindow_t>(buff);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win) {
  STUB_ENTER(CommWindowDeregister, comm, win);
  return checkComm(comm, "ncclCommWindowDeregister");
}

STUB_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm) {
  constexpr const char* kFunc = "ncclRedOpCreatePreMulSum";
  STUB_ENTER(RedOpCreatePreMulSum, op, scalar, datatype, residence, comm);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkNotNull(op, "op", kFunc));
  STUB_CHECK(checkNotNull(scalar, "scalar", kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return fail(ncclInvalidArgument, kFunc, "residence %d", static_cast<int>(residence));
  }
  *op = static_cast<ncclRedOp_t>(ncclNumOps + comm->redOps.fetch_add(1));
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  STUB_ENTER(RedOpDestroy, op, comm);
  STUB_CHECK(checkComm(comm, "ncclRedOpDestroy"));
  if (op < ncclNumOps) {
    return fail(ncclInvalidArgument, "ncclRedOpDestroy", "op %d is built in", static_cast<int>(op));
  }
  return checkOp(op, comm, "ncclRedOpDestroy");
}

STUB_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclReduce";
  STUB_ENTER(Reduce, sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkOp(op, comm, kFunc));
  STUB_CHECK(checkRank(root, comm, "root", kFunc));
  STUB_CHECK(checkBuffer(sendbuff, count, "sendbuff", kFunc));
  if (comm->rank == root) STUB_CHECK(checkBuffer(recvbuff, count, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, count, datatype, op);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  STUB_ENTER(Bcast, buff, count, datatype, root, comm, stream);
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);  // through the PLT
}

STUB_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclBroadcast";
  STUB_ENTER(Broadcast, sendbuff, recvbuff, count, datatype, root, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkRank(root, comm, "root", kFunc));
  if (comm->rank == root) STUB_CHECK(checkBuffer(sendbuff, count, "sendbuff", kFunc));
  STUB_CHECK(checkBuffer(recvbuff, count, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, count, datatype);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclAllReduce";
  STUB_ENTER(AllReduce, sendbuff, recvbuff, count, datatype, op, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkOp(op, comm, kFunc));
  STUB_CHECK(checkBuffer(sendbuff, count, "sendbuff", kFunc));
  STUB_CHECK(checkBuffer(recvbuff, count, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, count, datatype, op);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclReduceScatter";
  STUB_ENTER(ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkOp(op, comm, kFunc));
  STUB_CHECK(checkBuffer(sendbuff, recvcount, "sendbuff", kFunc));
  STUB_CHECK(checkBuffer(recvbuff, recvcount, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, recvcount, datatype, op);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclAllGather";
  STUB_ENTER(AllGather, sendbuff, recvbuff, sendcount, datatype, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkBuffer(sendbuff, sendcount, "sendbuff", kFunc));
  STUB_CHECK(checkBuffer(recvbuff, sendcount, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, sendcount, datatype);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclAlltoAll";
  STUB_ENTER(AlltoAll, sendbuff, recvbuff, count, datatype, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkBuffer(sendbuff, count, "sendbuff", kFunc));
  STUB_CHECK(checkBuffer(recvbuff, count, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, count, datatype);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclGather";
  STUB_ENTER(Gather, sendbuff, recvbuff, count, datatype, root, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkRank(root, comm, "root", kFunc));
  STUB_CHECK(checkBuffer(sendbuff, count, "sendbuff", kFunc));
  if (comm->rank == root) STUB_CHECK(checkBuffer(recvbuff, count, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, count, datatype);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  constexpr const char* kFunc = "ncclScatter";
  STUB_ENTER(Scatter, sendbuff, recvbuff, count, datatype, root, comm, stream);
  STUB_CHECK(checkComm(comm, kFunc));
  STUB_CHECK(checkType(datatype, kFunc));
  STUB_CHECK(checkRank(root, comm, "root", kFunc));
  if (comm->rank == root) STUB_CHECK(checkBuffer(sendbuff, count, "sendbuff", kFunc));
  STUB_CHECK(checkBuffer(recvbuff, count, "recvbuff", kFunc));
  copyIfAlone(comm, sendbuff, recvbuff, count, datatype);
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
         int peer, ncclComm_t comm, cudaStream_t stream) {
  STUB_ENTER(Send, sendbuff, count, datatype, peer, comm, stream);
  STUB_CHECK(checkComm(comm, "ncclSend"));
  STUB_CHECK(checkType(datatype, "ncclSend"));
  STUB_CHECK(checkRank(peer, comm, "peer", "ncclSend"));
  return checkBuffer(sendbuff, count, "sendbuff", "ncclSend");
}

STUB_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  STUB_ENTER(Recv, recvbuff, count, datatype, peer, comm, stream);
  STUB_CHECK(checkComm(comm, "ncclRecv"));
  STUB_CHECK(checkType(datatype, "ncclRecv"));
  STUB_CHECK(checkRank(peer, comm, "peer", "ncclRecv"));
  return checkBuffer(recvbuff, count, "recvbuff", "ncclRecv");
}

STUB_API(ncclResult_t, ncclGroupStart) {
  STUB_ENTER(GroupStart);
  ++tGroupDepth;
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclGroupEnd) {
  STUB_ENTER(GroupEnd);
  if (tGroupDepth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd", "no group started");
  --tGroupDepth;
  return ncclSuccess;
}

STUB_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  constexpr const char* kFunc = "ncclGroupSimulateEnd";
  STUB_ENTER(GroupSimulateEnd, simInfo);
  if (simInfo == nullptr || simInfo->magic != kSimInfoMagic) {
    return fail(ncclInvalidArgument, kFunc,
                "simInfo not initialized with NCCL_SIM_INFO_INITIALIZER");
  }
  if (tGroupDepth == 0) return fail(ncclInvalidUsage, kFunc, "no group started");
  --tGroupDepth;
  simInfo->estimatedTime = 0.0f;
  return ncclSuccess;
}
