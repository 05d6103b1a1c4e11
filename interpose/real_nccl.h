// The real NCCL entry points the shim forwards to: NCCL's pnccl* aliases first (they bypass any
// other interposer), the nccl* names only for a library without the alias. A symbol the loaded
// NCCL lacks stays nullptr and its wrapper says so once.
//
// One library per process, the first seen: the one the first wrapped call finds (linked, preloaded
// or dlopen'ed as libnccl.so.2), or the one a dlsym on a handle found first (interpose/dl_hook.cc),
// whichever comes first. A library adopted through dlsym also replaces a first resolution that
// found none.
#pragma once

#include <nccl.h>

namespace ncclrec::interpose {

// clang-format off
#define NCCLREC_WRAPPED_FUNCTIONS(X) \
  X(ncclAllReduce)                   \
  X(ncclBroadcast)                   \
  X(ncclBcast)                       \
  X(ncclReduce)                      \
  X(ncclAllGather)                   \
  X(ncclReduceScatter)               \
  X(ncclAlltoAll)                    \
  X(ncclGather)                      \
  X(ncclScatter)                     \
  X(ncclSend)                        \
  X(ncclRecv)                        \
  X(ncclGroupStart)                  \
  X(ncclGroupEnd)                    \
  X(ncclGroupSimulateEnd)            \
  X(ncclGetUniqueId)                 \
  X(ncclCommInitRank)                \
  X(ncclCommInitRankConfig)          \
  X(ncclCommInitAll)                 \
  X(ncclCommInitRankScalable)        \
  X(ncclCommSplit)                   \
  X(ncclCommShrink)                  \
  X(ncclCommFinalize)                \
  X(ncclCommDestroy)                 \
  X(ncclCommAbort)                   \
  X(ncclCommRevoke)                  \
  X(ncclCommGetAsyncError)           \
  X(ncclRedOpCreatePreMulSum)        \
  X(ncclRedOpDestroy)

// Queried by the shim, never wrapped.
#define NCCLREC_QUERY_FUNCTIONS(X) \
  X(ncclCommCuDevice)              \
  X(ncclCommUserRank)              \
  X(ncclCommCount)
// clang-format on

struct RealNccl {
#define NCCLREC_REAL_FIELD(name) decltype(&::name) name = nullptr;
  NCCLREC_WRAPPED_FUNCTIONS(NCCLREC_REAL_FIELD)
  NCCLREC_QUERY_FUNCTIONS(NCCLREC_REAL_FIELD)
#undef NCCLREC_REAL_FIELD
  // hostnccl's emulated current device (docs/hostnccl.md). Present only in hostnccl, so it also
  // says the devices are emulated; nullptr with NVIDIA's NCCL, which is fine.
  int (*hostncclGetDevice)(int* device) = nullptr;
  // The link map of the library the functions come from; nullptr when none was found.
  const void* library = nullptr;
};

// The functions, resolved at the first call (one acquire load after that).
const RealNccl& realNccl();

// Whether the wrappers forward to the library that defines `symbol`, a dlsym answer for a wrapped
// name. While they forward to none (nothing resolved yet, or nothing found), that library becomes
// theirs; `*adopted` then says it was resolved now, with calls to the dynamic linker that may have
// left an error for dlerror(). Never for the main program or for a library it cannot hold open.
bool forwardsTo(const void* symbol, bool* adopted);

// Says once per entry point, on stderr, that the loaded NCCL lacks it; returns the code the
// wrapper gives back (ncclInvalidUsage).
ncclResult_t missingFunction(const char* name);

}  // namespace ncclrec::interpose
