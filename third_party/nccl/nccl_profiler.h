// NCCL's profiler plugin interface, versions 5 and 6 (NCCL 2.28.9 asks for v5; later releases
// ask for v6 first, then v5), declared for ncclrec without NCCL's headers.
//
// hostnccl drives plugins through these declarations and libncclrec.so serves as one. The layout
// must equal NCCL's byte for byte: the static_asserts below pin every offset either side reads.
// v6 only adds copy-engine members to the descriptor union, which leaves its size unchanged on
// LP64; a v5 plugin handed a v6 descriptor therefore reads the same bytes.
//
// Event tree (parentObj links): GroupApi > CollApi > Coll > KernelCh, and GroupApi > P2pApi >
// P2p > KernelCh. The *Api events start and stop on the calling thread, inside the API call;
// Coll/P2p and KernelCh events come from the library's progress (in NCCL, Coll/P2p stop once the
// kernel is enqueued, KernelCh stop when the channel's work is done; in hostnccl, when the data
// has moved).
#ifndef NCCLREC_NCCL_PROFILER_H_
#define NCCLREC_NCCL_PROFILER_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "third_party/nccl/nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

// Event type bits: the `type` of a descriptor and the activation mask a plugin returns from init.
enum {
  ncclProfGroup = 1 << 0,
  ncclProfColl = 1 << 1,
  ncclProfP2p = 1 << 2,
  ncclProfProxyOp = 1 << 3,
  ncclProfProxyStep = 1 << 4,
  ncclProfProxyCtrl = 1 << 5,
  ncclProfKernelCh = 1 << 6,
  ncclProfNetPlugin = 1 << 7,
  ncclProfGroupApi = 1 << 8,
  ncclProfCollApi = 1 << 9,
  ncclProfP2pApi = 1 << 10,
  ncclProfKernelLaunch = 1 << 11,
  ncclProfCeColl = 1 << 12,   // v6
  ncclProfCeSync = 1 << 13,   // v6
  ncclProfCeBatch = 1 << 14,  // v6
};

// The state transitions hostnccl and libncclrec use (NCCL numbers them in one enum with the
// proxy states; only these values matter here).
typedef int ncclProfState;
enum {
  ncclProfStateKernelChStop = 22,
  ncclProfStateGroupStartApiStop = 23,  // ncclGroupStart returned (or the implicit group began)
  ncclProfStateGroupEndApiStart = 24,   // the outermost ncclGroupEnd was entered
};

typedef enum {
  ncclProfLogNone = 0,
  ncclProfLogVersion = 1,
  ncclProfLogWarn = 2,
  ncclProfLogInfo = 3,
  ncclProfLogAbort = 4,
  ncclProfLogTrace = 5
} ncclProfLogLevel;
typedef void (*ncclProfLogFn)(ncclProfLogLevel level, unsigned long flags, const char* file,
                              int line, const char* fmt, ...);

// What startEvent is told. One descriptor type serves v5 and v6 (see the file comment).
typedef struct {
  uint64_t type;    // one ncclProf* bit
  void* parentObj;  // the parent event's handle, as the plugin returned it
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;  // 1: the group NCCL opens around a lone call; more: a user group
    } groupApi;
    struct {
      const char* func;  // "AllReduce", "Broadcast", ...
      size_t count;
      const char* datatype;  // "ncclFloat32", ...
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;  // "Send" or "Recv"
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      uint64_t seqNumber;  // per communicator and collective type, from 0
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;  // the v4 Group event, if any
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
      uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      uint8_t channelId;
      uint64_t pTimer;  // GPU global timer at the channel's start (ns)
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
    struct {  // v6 only
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
  };
} ncclProfDescr;

typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // GPU global timer at the channel's stop (ns)
  } kernelCh;
} ncclProfStateArgs;

// The exported symbols ncclProfiler_v5 and ncclProfiler_v6 are objects of this type.
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclProfLogFn logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfDescr* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfState eState,
                                   ncclProfStateArgs* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfPlugin;

#ifdef __cplusplus
}  // extern "C"

// NCCL's layout (LP64), checked member by member.
static_assert(sizeof(ncclProfDescr) == 112, "descriptor size");
static_assert(offsetof(ncclProfDescr, parentObj) == 8 && offsetof(ncclProfDescr, rank) == 16);
static_assert(offsetof(ncclProfDescr, groupApi.graphCaptured) == 24 &&
              offsetof(ncclProfDescr, groupApi.groupDepth) == 28);
static_assert(offsetof(ncclProfDescr, collApi.count) == 32 &&
              offsetof(ncclProfDescr, collApi.datatype) == 40 &&
              offsetof(ncclProfDescr, collApi.root) == 48 &&
              offsetof(ncclProfDescr, collApi.stream) == 56 &&
              offsetof(ncclProfDescr, collApi.graphCaptured) == 64);
static_assert(offsetof(ncclProfDescr, p2pApi.stream) == 48 &&
              offsetof(ncclProfDescr, p2pApi.graphCaptured) == 56);
static_assert(
    offsetof(ncclProfDescr, coll.seqNumber) == 24 && offsetof(ncclProfDescr, coll.func) == 32 &&
    offsetof(ncclProfDescr, coll.count) == 56 && offsetof(ncclProfDescr, coll.root) == 64 &&
    offsetof(ncclProfDescr, coll.datatype) == 72 && offsetof(ncclProfDescr, coll.nChannels) == 80 &&
    offsetof(ncclProfDescr, coll.nWarps) == 81 && offsetof(ncclProfDescr, coll.algo) == 88 &&
    offsetof(ncclProfDescr, coll.parentGroup) == 104);
static_assert(offsetof(ncclProfDescr, p2p.buff) == 32 &&
              offsetof(ncclProfDescr, p2p.datatype) == 40 &&
              offsetof(ncclProfDescr, p2p.count) == 48 && offsetof(ncclProfDescr, p2p.peer) == 56 &&
              offsetof(ncclProfDescr, p2p.nChannels) == 60 &&
              offsetof(ncclProfDescr, p2p.parentGroup) == 64);
static_assert(offsetof(ncclProfDescr, kernelCh.channelId) == 24 &&
              offsetof(ncclProfDescr, kernelCh.pTimer) == 32);
static_assert(offsetof(ncclProfDescr, ceColl.stream) == 104);
static_assert(sizeof(ncclProfStateArgs) == 8);
static_assert(offsetof(ncclProfPlugin, init) == 8 && offsetof(ncclProfPlugin, finalize) == 40);
#endif

#endif  // NCCLREC_NCCL_PROFILER_H_
