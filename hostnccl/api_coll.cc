// Exported C API: collectives and point-to-point. Each entry point validates its arguments the
// way NCCL does (same result codes) and hands a validated OpArgs to the group machinery.
#include <cstdint>

#include "hostnccl/api.h"
#include "hostnccl/group.h"
#include "hostnccl/reduce_ops.h"

using namespace ncclrec::hostnccl;

namespace {

// Where each buffer is required: NCCL only reads a root-only buffer on the root.
enum Need : unsigned { kSendAll = 1, kRecvAll = 2, kSendRoot = 4, kRecvRoot = 8 };

struct Check {
  const char* name;
  OpKind kind;
  unsigned need;
  size_t sendElems;  // multiples of count the send / receive buffers must hold
  size_t recvElems;
  bool hasOp;
  bool hasRoot;
};

ncclResult_t validate(const Check& k, const OpArgs& a) {
  if (ncclResult_t rc = checkComm(a.comm, k.name); rc != ncclSuccess) return rc;
  const Comm& c = *a.comm;
  size_t es = dtypeSize(a.dtype);
  if (es == 0) {
    return fail(ncclInvalidArgument, "%s: invalid data type %d", k.name, static_cast<int>(a.dtype));
  }
  if (k.hasOp) {
    int op = static_cast<int>(a.op);
    if (op < 0 ||
        (op >= ncclNumOps && (static_cast<size_t>(op - ncclNumOps) >= c.preMulSumOps.size() ||
                              !c.preMulSumOps[op - ncclNumOps].inUse))) {
      return fail(ncclInvalidArgument, "%s: invalid reduction operation %d", k.name, op);
    }
    if (op >= ncclNumOps && c.preMulSumOps[op - ncclNumOps].dtype != a.dtype) {
      return fail(ncclInvalidArgument, "%s: reduction operation %d was created for %s, not %s",
                  k.name, op, dtypeName(c.preMulSumOps[op - ncclNumOps].dtype), dtypeName(a.dtype));
    }
    // NCCL builds no fp8 kernels for avg or premulsum: it refuses them at the call (2.28.9,
    // measured on an H100; ncclRedOpCreatePreMulSum itself succeeds).
    if ((a.dtype == ncclFloat8e4m3 || a.dtype == ncclFloat8e5m2) &&
        (op == ncclAvg || op >= ncclNumOps)) {
      return fail(ncclInvalidArgument, "%s: %s is not supported for %s", k.name,
                  op == ncclAvg ? "ncclAvg" : "a premulsum reduction", dtypeName(a.dtype));
    }
  }
  if (k.hasRoot && (a.root < 0 || a.root >= c.nranks)) {
    return fail(ncclInvalidArgument, "%s: %s %d out of range for nranks %d", k.name,
                (a.kind == OpKind::kSend || a.kind == OpKind::kRecv) ? "peer" : "root", a.root,
                c.nranks);
  }
  size_t most = std::max(k.sendElems, k.recvElems);
  if (a.count > SIZE_MAX / es / most) {
    return fail(ncclInvalidArgument, "%s: count %zu overflows the buffer size", k.name, a.count);
  }
  if (a.count == 0) return ncclSuccess;
  bool isRoot = c.rank == a.root;
  if ((k.need & kSendAll || (k.need & kSendRoot && isRoot)) && a.sendbuff == nullptr) {
    return fail(ncclInvalidArgument, "%s: sendbuff is NULL", k.name);
  }
  if ((k.need & kRecvAll || (k.need & kRecvRoot && isRoot)) && a.recvbuff == nullptr) {
    return fail(ncclInvalidArgument, "%s: recvbuff is NULL", k.name);
  }
  return ncclSuccess;
}

ncclResult_t issue(const Check& k, const OpArgs& a) {
  return guarded(k.name, [&] {
    if (ncclResult_t rc = validate(k, a); rc != ncclSuccess) return rc;
    return submit(a);
  });
}

size_t ranksOf(ncclComm_t comm) { return isLiveComm(comm) ? static_cast<size_t>(comm->nranks) : 1; }

}  // namespace

HOSTNCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclAllReduce", OpKind::kAllReduce, kSendAll | kRecvAll, 1, 1, true, false};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, count, datatype, op, -1, stream});
}

HOSTNCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclBroadcast", OpKind::kBroadcast, kSendRoot | kRecvAll, 1, 1, false, true};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, count, datatype, ncclSum, root, stream});
}

HOSTNCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root,
             ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclBcast", OpKind::kBroadcast, kSendRoot | kRecvAll, 1, 1, false, true};
  return issue(k, {k.kind, comm, buff, buff, count, datatype, ncclSum, root, stream});
}

HOSTNCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
             cudaStream_t stream) {
  Check k{"ncclReduce", OpKind::kReduce, kSendAll | kRecvRoot, 1, 1, true, true};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, count, datatype, op, root, stream});
}

HOSTNCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
             ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclAllGather", OpKind::kAllGather, kSendAll | kRecvAll, 1, ranksOf(comm), false, false};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, sendcount, datatype, ncclSum, -1, stream});
}

HOSTNCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff,
             size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
             cudaStream_t stream) {
  Check k{"ncclReduceScatter",
          OpKind::kReduceScatter,
          kSendAll | kRecvAll,
          ranksOf(comm),
          1,
          true,
          false};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, recvcount, datatype, op, -1, stream});
}

HOSTNCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclAlltoAll", OpKind::kAlltoAll, kSendAll | kRecvAll,
          ranksOf(comm),  ranksOf(comm),     false,
          false};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, count, datatype, ncclSum, -1, stream});
}

HOSTNCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclGather", OpKind::kGather, kSendAll | kRecvRoot, 1, ranksOf(comm), false, true};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, count, datatype, ncclSum, root, stream});
}

HOSTNCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
             ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclScatter", OpKind::kScatter, kSendRoot | kRecvAll, ranksOf(comm), 1, false, true};
  return issue(k, {k.kind, comm, sendbuff, recvbuff, count, datatype, ncclSum, root, stream});
}

HOSTNCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype,
             int peer, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclSend", OpKind::kSend, kSendAll, 1, 1, false, true};
  return issue(k, {k.kind, comm, sendbuff, nullptr, count, datatype, ncclSum, peer, stream});
}

HOSTNCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype,
             int peer, ncclComm_t comm, cudaStream_t stream) {
  Check k{"ncclRecv", OpKind::kRecv, kRecvAll, 1, 1, false, true};
  return issue(k, {k.kind, comm, nullptr, recvbuff, count, datatype, ncclSum, peer, stream});
}
