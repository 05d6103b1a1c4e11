// The call-site functions. Each is its own noinline function with its own counter (so that no
// pass folds identical bodies into one); issue() is inlined into each, so the NCCL call is made
// from the named frame. Build with frame pointers and no sibling calls (CMakeLists.txt).
#include "tests/faultgen/sites.h"

#include <iterator>

// The site functions are in the global anonymous namespace, so that their names in stacks and
// headlines are the bare function names, as in a training script.
namespace {

using ncclrec::faultgen::NcclBlock;
using ncclrec::faultgen::NcclCall;
using ncclrec::faultgen::Op;
using ncclrec::faultgen::SiteFn;

inline __attribute__((always_inline)) ncclResult_t issueOne(NcclCall c) {
  if (c.made_comm != nullptr) c.comm = *c.made_comm;
  switch (c.op) {
    case Op::kAllReduce:
      return ncclAllReduce(c.send, c.recv, c.count, c.dtype, c.redop, c.comm, nullptr);
    case Op::kBroadcast:
      return ncclBroadcast(c.send, c.recv, c.count, c.dtype, c.root, c.comm, nullptr);
    case Op::kReduce:
      return ncclReduce(c.send, c.recv, c.count, c.dtype, c.redop, c.root, c.comm, nullptr);
    case Op::kAllGather:
      return ncclAllGather(c.send, c.recv, c.count, c.dtype, c.comm, nullptr);
    case Op::kReduceScatter:
      return ncclReduceScatter(c.send, c.recv, c.count, c.dtype, c.redop, c.comm, nullptr);
    case Op::kSend:
      return ncclSend(c.send, c.count, c.dtype, c.peer, c.comm, nullptr);
    case Op::kRecv:
      return ncclRecv(c.recv, c.count, c.dtype, c.peer, c.comm, nullptr);
    case Op::kSplit:
      return ncclCommSplit(c.comm, c.color, c.key, c.made, nullptr);
    case Op::kAbort:
      return ncclCommAbort(c.comm);
    case Op::kInit:
      return ncclCommInitRank(c.made, c.nranks, c.id, c.rank);
  }
  return ncclInvalidArgument;
}

// The first error of the block's calls (all are issued, as a program that ignores errors would
// not; the caller exits on an error).
inline __attribute__((always_inline)) ncclResult_t issue(const NcclBlock& b) {
  for (const NcclCall& c : b.creates) {
    if (const ncclResult_t r = issueOne(c); r != ncclSuccess) return r;
  }
  ncclResult_t first = b.grouped ? ncclGroupStart() : ncclSuccess;
  for (const NcclCall& c : b.calls) {
    const ncclResult_t r = issueOne(c);
    if (first == ncclSuccess) first = r;
  }
  if (b.grouped) {
    const ncclResult_t r = ncclGroupEnd();
    if (first == ncclSuccess) first = r;
  }
  return first;
}

#define FAULTGEN_SITE(name)                                         \
  volatile int name##_calls = 0;                                    \
  __attribute__((noinline)) ncclResult_t name(const NcclBlock& b) { \
    name##_calls = name##_calls + 1;                                \
    const ncclResult_t r = issue(b);                                \
    name##_calls = name##_calls + 1;                                \
    return r;                                                       \
  }

// The sites by kind, in the order of SiteKind (program.h). A kind's names are used in order, one
// per action of that kind, so a body of up to 7 actions never runs out.
#define FAULTGEN_SITES(X)                                                                          \
  /* kSplit */ X(makeDataParallelGroup) X(makeTensorParallelGroup) X(makeExpertGroup) X(           \
      makeEvalGroup) /* kGated */ X(saveCheckpoint) X(evalBarrier) X(logOnRankZero)                \
      X(dumpDebugStats) /* kAbort */ X(abortOnError) /* kAllReduce */ X(allReduceGradients) X(     \
          reduceGradNorm) X(averageMetrics) X(syncBatchNorm) X(allReduceMoments)                   \
          X(allReduceBuckets) X(syncScaler) X(countTokens) /* kBroadcast */ X(broadcastParameters) \
              X(broadcastRngState) X(broadcastVocab) X(broadcastSchedule) X(syncLearningRate) X(   \
                  broadcastMask) X(shareEpochSeed) /* kReduce */ X(reduceLoss) X(reducePerplexity) \
                  X(computeAccuracy) X(aggregateHistogram) X(reduceToLogger) X(sumValidLoss)       \
                      X(collectStats) /* kAllGather */ X(gatherEmbeddings) X(allGatherWeights) X(  \
                          gatherLogits) X(gatherPredictions) X(gatherCheckpointShards)             \
                          X(gatherSeqLengths) X(gatherTopK) /* kReduceScatter */ X(                \
                              reduceScatterGrads) X(shardOptimizerState) X(scatterShards)          \
                              X(reduceAttentionStats) X(reduceScatterExperts) X(partitionGrads) X( \
                                  zeroReduceGrads) /* kGrouped */ X(syncEmaWeights)                \
                                  X(mergeExpertOutputs) X(syncDataloaderEpoch) X(                  \
                                      syncProfilerTicks) X(fusedOptimizerStep) X(bucketedSync)     \
                                      X(syncNormStats) /* kRing */ X(exchangeHalo) X(              \
                                          exchangeKvCache) X(routeTokens) X(ringAttention)         \
                                          X(rotateShards) X(passTokensAround) X(                   \
                                              shiftContext) /* kPipelineRecv */ X(recvActivations) \
                                              X(recvGradients) X(recvBoundary) X(recvKvCache) X(   \
                                                  recvHidden) X(recvMicroBatch)                    \
                                                  X(receiveFromPrevStage) /* kPipelineSend */ X(   \
                                                      sendActivations) X(sendGradients)            \
                                                      X(sendBoundary) X(sendKvCache) X(sendHidden) \
                                                          X(sendMicroBatch) X(forwardToNextStage)

// How many sites each SiteKind has, in its order.
constexpr int kPerKind[] = {4, 4, 1, 8, 7, 7, 7, 7, 7, 7, 7, 7};

FAULTGEN_SITES(FAULTGEN_SITE)

#define FAULTGEN_FN(name) &name,
#define FAULTGEN_NAME(name) #name,
constexpr SiteFn kFns[] = {FAULTGEN_SITES(FAULTGEN_FN)};
constexpr const char* kNames[] = {FAULTGEN_SITES(FAULTGEN_NAME)};
static_assert(std::size(kFns) == std::size(kNames));

constexpr int sumKinds() {
  int n = 0;
  for (int k : kPerKind) n += k;
  return n;
}
static_assert(sumKinds() == std::size(kFns));

}  // namespace

namespace ncclrec::faultgen {

int siteCount() { return static_cast<int>(std::size(kFns)); }
int sitesOf(SiteKind kind) { return kPerKind[static_cast<int>(kind)]; }
int siteOf(SiteKind kind, int i) {
  int base = 0;
  for (int k = 0; k < static_cast<int>(kind); ++k) base += kPerKind[k];
  return base + i;
}
const char* siteName(int site) { return kNames[site]; }
SiteFn siteFn(int site) { return kFns[site]; }

}  // namespace ncclrec::faultgen
