// Shared by the conformance worker's scenario files: the rank's identity, failure reporting and
// the helpers every scenario uses.
#pragma once

#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ncclrec::hostnccl::testing {

extern int gRank, gN, gFailures;
extern std::string gDir;
extern cudaStream_t gStream;

#define CHECK(cond, ...)                                                 \
  do {                                                                   \
    if (!(cond)) {                                                       \
      std::fprintf(stderr, "rank %d: check failed: %s: ", gRank, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                 \
      std::fprintf(stderr, "\n");                                        \
      ++gFailures;                                                       \
    }                                                                    \
  } while (0)

#define NCCL_OK(call)                                                                              \
  do {                                                                                             \
    ncclResult_t rc_ = (call);                                                                     \
    if (rc_ != ncclSuccess) {                                                                      \
      std::fprintf(stderr, "rank %d: %s failed: %s (%s)\n", gRank, #call, ncclGetErrorString(rc_), \
                   ncclGetLastError(nullptr));                                                     \
      std::exit(3);                                                                                \
    }                                                                                              \
  } while (0)

// Rank 0 makes the id and writes it to <dir>/id<index>; the others read it.
ncclUniqueId shareId(int index);
ncclComm_t initComm(int index = 0);
// Sums each member's parent rank over `comm` and checks the result is `expected`.
void checkSum(ncclComm_t comm, double expected, const char* what);

// The hostnccl-only scenarios (faults.cc).
int timeout();
int mismatch();
int killedPeer();
int killedWhileWriting();
int badInput();
int initAll();
int forkedRanks();
// The ranks disagree at init: one passes another nranks, or claims a rank another holds.
int initNranksMismatch();
int initRankTwice();
// Nonblocking communicators (nonblocking.cc).
int nonblocking();

// Device placement (devices.cc): every rank on device 0 is refused as NCCL refuses it (both
// builds); how hostnccl picks its emulated device (hostnccl only).
int duplicateDevice();
int placement();

}  // namespace ncclrec::hostnccl::testing
