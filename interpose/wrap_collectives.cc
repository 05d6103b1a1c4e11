// Wrappers of the collectives and point-to-point calls: the record path.
#include "interpose/call.h"
#include "interpose/real_nccl.h"

using ncclrec::format::OpType;
using ncclrec::interpose::recordCall;
using ncclrec::recorder::OpArgs;

namespace {

inline OpArgs opArgs(OpType op, ncclComm_t comm, size_t count, ncclDataType_t dtype, int redop,
                     int peer, cudaStream_t stream) {
  OpArgs a;
  a.op = op;
  a.comm = comm;
  a.count = count;
  a.dtype = static_cast<int>(dtype);
  a.redop = redop;
  a.peer = peer;
  a.stream = stream;
  return a;
}

}  // namespace

NCCLREC_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclAllReduce);
  return recordCall(opArgs(OpType::kAllReduce, comm, count, datatype, op, -1, stream),
                    [&] { return real_fn(sendbuff, recvbuff, count, datatype, op, comm, stream); });
}

NCCLREC_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                          ncclDataType_t datatype, int root, ncclComm_t comm,
                                          cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclBroadcast);
  return recordCall(opArgs(OpType::kBroadcast, comm, count, datatype, -1, root, stream), [&] {
    return real_fn(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

NCCLREC_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                      ncclComm_t comm, cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclBcast);
  return recordCall(opArgs(OpType::kBcast, comm, count, datatype, -1, root, stream),
                    [&] { return real_fn(buff, count, datatype, root, comm, stream); });
}

NCCLREC_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, ncclRedOp_t op, int root,
                                       ncclComm_t comm, cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclReduce);
  return recordCall(opArgs(OpType::kReduce, comm, count, datatype, op, root, stream), [&] {
    return real_fn(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  });
}

NCCLREC_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                          ncclDataType_t datatype, ncclComm_t comm,
                                          cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclAllGather);
  return recordCall(opArgs(OpType::kAllGather, comm, sendcount, datatype, -1, -1, stream),
                    [&] { return real_fn(sendbuff, recvbuff, sendcount, datatype, comm, stream); });
}

NCCLREC_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff,
                                              size_t recvcount, ncclDataType_t datatype,
                                              ncclRedOp_t op, ncclComm_t comm,
                                              cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclReduceScatter);
  return recordCall(opArgs(OpType::kReduceScatter, comm, recvcount, datatype, op, -1, stream), [&] {
    return real_fn(sendbuff, recvbuff, recvcount, datatype, op, comm, stream);
  });
}

NCCLREC_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                         ncclDataType_t datatype, ncclComm_t comm,
                                         cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclAlltoAll);
  return recordCall(opArgs(OpType::kAlltoAll, comm, count, datatype, -1, -1, stream),
                    [&] { return real_fn(sendbuff, recvbuff, count, datatype, comm, stream); });
}

NCCLREC_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                       ncclDataType_t datatype, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclGather);
  return recordCall(opArgs(OpType::kGather, comm, count, datatype, -1, root, stream), [&] {
    return real_fn(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

NCCLREC_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                        ncclDataType_t datatype, int root, ncclComm_t comm,
                                        cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclScatter);
  return recordCall(opArgs(OpType::kScatter, comm, count, datatype, -1, root, stream), [&] {
    return real_fn(sendbuff, recvbuff, count, datatype, root, comm, stream);
  });
}

NCCLREC_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclSend);
  return recordCall(opArgs(OpType::kSend, comm, count, datatype, -1, peer, stream),
                    [&] { return real_fn(sendbuff, count, datatype, peer, comm, stream); });
}

NCCLREC_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype,
                                     int peer, ncclComm_t comm, cudaStream_t stream) {
  NCCLREC_REAL_OR_RETURN(ncclRecv);
  return recordCall(opArgs(OpType::kRecv, comm, count, datatype, -1, peer, stream),
                    [&] { return real_fn(recvbuff, count, datatype, peer, comm, stream); });
}
