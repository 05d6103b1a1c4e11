// The operations of the NCCL API on host memory, expressed as Gloo point-to-point messages.
//
// Algorithms: ring reduce-scatter + ring all-gather for AllReduce, Reduce, ReduceScatter and
// AllGather (bandwidth-optimal, the same shape as NCCL's and Gloo's rings); direct messages for
// Broadcast, Gather, Scatter and AlltoAll. Every call blocks until its data is in place.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hostnccl/comm.h"
#include "third_party/nccl/nccl.h"

namespace ncclrec::hostnccl {

class Transfer;

enum class OpKind : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSend,
  kRecv,
  kSplit,  // the (color, key) exchange of ncclCommSplit
};

const char* opKindName(OpKind kind);

// One queued or immediate operation, already validated by the API layer. `count` is per rank as
// in the NCCL signature (recvcount for ReduceScatter, sendcount for AllGather); `root` is the
// peer for Send/Recv and -1 where unused; `op` is ncclSum where unused.
struct OpArgs {
  OpKind kind;
  Comm* comm;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ncclDataType_t dtype;
  ncclRedOp_t op;
  int root;
  void* stream = nullptr;   // as the caller passed it, for the profiler's API events
  void* profApi = nullptr;  // the profiler's CollApi/P2pApi event (profiler.h), parent of Coll/P2p
};

// Runs a collective to completion on the calling thread, consuming the next collective sequence
// number of the communicator.
ncclResult_t runCollective(const OpArgs& a);

// Posts a Send or Recv into `t` (waited for by the caller), consuming the next p2p sequence
// number towards that peer. Self-sends are not posted here (see group.cc).
void postP2p(const OpArgs& a, Transfer& t);

// The 23-bit signature carried in every message slot: equal on two ranks only if they issued
// the same kind of operation with the same count, datatype, redop and root.
uint32_t opSignature(OpKind kind, size_t count, ncclDataType_t dtype, int op, int root);

}  // namespace ncclrec::hostnccl
