// Wrappers of the communicator life cycle: creation (with the job-wide comm id every rank
// computes alike), split and shrink, finalize/destroy/abort/revoke, async errors, unique ids and
// user reduction operators.
#include <unistd.h>

#include <cstddef>

#include "format/bbox_layout.h"
#include "format/bbox_ring.h"
#include "format/nccl_result.h"
#include "format/root_address.h"
#include "interpose/call.h"
#include "interpose/real_nccl.h"

using ncclrec::format::OpType;
using ncclrec::interpose::realNccl;
using ncclrec::interpose::recordCall;
using ncclrec::recorder::CallHandle;
using ncclrec::recorder::CreationArgs;
using ncclrec::recorder::OpArgs;
using ncclrec::recorder::Recorder;

namespace {

bool succeeded(ncclResult_t r) { return ncclrec::format::acceptedResult(r); }

int queryDevice(ncclComm_t comm) {
  int device = -1;
  const auto fn = realNccl().ncclCommCuDevice;
  if (fn == nullptr || comm == nullptr || fn(comm, &device) != ncclSuccess) return -1;
  return device;
}

int queryRank(ncclComm_t comm) {
  int rank = -1;
  const auto fn = realNccl().ncclCommUserRank;
  if (fn == nullptr || comm == nullptr || fn(comm, &rank) != ncclSuccess) return -1;
  return rank;
}

int queryCount(ncclComm_t comm) {
  int count = 0;
  const auto fn = realNccl().ncclCommCount;
  if (fn == nullptr || comm == nullptr || fn(comm, &count) != ncclSuccess) return 0;
  return count;
}

// commName from a config, when the caller's struct is recent enough to have it.
const char* configName(const ncclConfig_t* config) {
  if (config == nullptr || config->magic != 0xcafebeef) return nullptr;
  if (config->size < offsetof(ncclConfig_t, commName) + sizeof(config->commName)) return nullptr;
  return config->commName;
}

// config->blocking as the caller set it: 1 or 0; -1 without a config (blocking, NCCL's default)
// or when left to NCCL's default (NCCL_CONFIG_UNDEF_INT).
int configBlocking(const ncclConfig_t* config) {
  if (config == nullptr || config->magic != 0xcafebeef) return -1;
  if (config->size < offsetof(ncclConfig_t, blocking) + sizeof(config->blocking)) return -1;
  return config->blocking == 0 || config->blocking == 1 ? config->blocking : -1;
}

CreationArgs creationArgs(const ncclConfig_t* config) {
  CreationArgs c;
  c.blocking = configBlocking(config);
  c.name = configName(config);
  return c;
}

// Records a call that creates a communicator: begin(a), then the record of what it creates
// (`made`: its id, and this rank's place where known before the call) claimed before the call
// (commCreating: a creation that never returns is on record), the call, `after(recorder, call,
// result, record)` and end(). Inlined: Recorder::begin counts exactly kShimFrames frames of the
// shim above the user.
template <class Forward, class After>
__attribute__((always_inline)) inline ncclResult_t recordCreation(
    const OpArgs& a, const OpArgs& made, const CreationArgs& c, Forward&& forward, After&& after) {
  ncclrec::interpose::ReentryGuard guard;
  Recorder* r = guard.nested() ? nullptr : Recorder::get();
  if (r == nullptr) return forward();
  CallHandle call = r->begin(a, ncclrec::interpose::kShimFrames);
  const uint32_t record = r->commCreating(made, call.index, c);
  ncclrec::interpose::CurrentCall current(&call);
  const ncclResult_t result = forward();
  after(r, call, result, record);
  r->end(call, result);
  return result;
}

// The device of the creating call's rank, known once the call returned (Event::device is live for
// the calls that create communicators).
ncclrec::recorder::DeviceIdentity deviceOf(Recorder* r, CallHandle& call, ncclComm_t comm) {
  const ncclrec::recorder::DeviceIdentity id =
      r->identifyDevice(queryDevice(comm), realNccl().hostncclGetDevice);
  Recorder::setEventDevice(call, id.device);
  return id;
}

OpArgs creator(OpType op, uint64_t comm_id, int rank, int nranks) {
  OpArgs a;
  a.op = op;
  a.comm_id = comm_id;
  a.aux64 = comm_id;
  a.rank = rank;
  a.nranks = nranks;
  return a;
}

// Inlined: Recorder::begin counts exactly kShimFrames frames of the shim above the user.
__attribute__((always_inline)) inline ncclResult_t initRank(OpType op, ncclComm_t* comm, int nranks,
                                                            const void* ids, size_t id_bytes,
                                                            int rank, const ncclConfig_t* config,
                                                            auto&& forward) {
  const uint64_t id = ncclrec::recorder::commIdFromUniqueIds(ids, id_bytes);
  const OpArgs a = creator(op, id, rank, nranks);
  CreationArgs c = creationArgs(config);
  // The first id's root: every rank of a scalable init reaches its own, all of the same job.
  c.root = ncclrec::format::rootOfUniqueId(
      ids, id_bytes >= sizeof(ncclUniqueId) ? sizeof(ncclUniqueId) : 0);
  return recordCreation(
      a, a, c, forward, [&](Recorder* r, CallHandle& call, ncclResult_t result, uint32_t record) {
        if (!succeeded(result) || comm == nullptr || *comm == nullptr) {
          // Refused (e.g. two ranks of one host on one GPU): which device this
          // rank was on is the evidence, so it is recorded although no
          // communicator exists.
          r->commInitFailed(a, call.index, result, deviceOf(r, call, nullptr), record);
          return;
        }
        r->commCreated(*comm, a, call, c, result, deviceOf(r, call, *comm), record);
      });
}

void commEnded(ncclComm_t comm, uint32_t bits) {
  if (Recorder* r = Recorder::get()) r->commEnded(comm, bits);
}

OpArgs onComm(OpType op, ncclComm_t comm) {
  OpArgs a;
  a.op = op;
  a.comm = comm;
  return a;
}

}  // namespace

NCCLREC_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) {
  NCCLREC_REAL_OR_RETURN(ncclGetUniqueId);
  OpArgs a;
  a.op = OpType::kGetUniqueId;
  return recordCall(
      a, [&] { return real_fn(uniqueId); },
      [&](Recorder*, CallHandle& call, ncclResult_t result) {
        if (succeeded(result) && uniqueId != nullptr)
          Recorder::setEventAux64(
              call, ncclrec::recorder::commIdFromUniqueIds(uniqueId, sizeof(*uniqueId)));
      });
}

NCCLREC_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                             int rank) {
  NCCLREC_REAL_OR_RETURN(ncclCommInitRank);
  ncclrec::interpose::selectProfilerPlugin();
  return initRank(OpType::kCommInitRank, comm, nranks, &commId, sizeof(commId), rank, nullptr,
                  [&] { return real_fn(comm, nranks, commId, rank); });
}

NCCLREC_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks,
                                                   ncclUniqueId commId, int rank,
                                                   ncclConfig_t* config) {
  NCCLREC_REAL_OR_RETURN(ncclCommInitRankConfig);
  ncclrec::interpose::selectProfilerPlugin();
  return initRank(OpType::kCommInitRankConfig, comm, nranks, &commId, sizeof(commId), rank, config,
                  [&] { return real_fn(comm, nranks, commId, rank, config); });
}

NCCLREC_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                     int nId, ncclUniqueId* commIds,
                                                     ncclConfig_t* config) {
  NCCLREC_REAL_OR_RETURN(ncclCommInitRankScalable);
  ncclrec::interpose::selectProfilerPlugin();
  const size_t bytes = commIds != nullptr && nId > 0 ? sizeof(ncclUniqueId) * nId : 0;
  return initRank(OpType::kCommInitRankScalable, newcomm, nranks, commIds, bytes, myrank, config,
                  [&] { return real_fn(newcomm, nranks, myrank, nId, commIds, config); });
}

NCCLREC_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  NCCLREC_REAL_OR_RETURN(ncclCommInitAll);
  ncclrec::interpose::selectProfilerPlugin();
  Recorder* r = Recorder::get();
  const uint32_t call_index = r != nullptr ? r->nextInitAllIndex() : 0;
  const uint64_t id = ncclrec::recorder::commIdForInitAll(getpid(), call_index, ndev);
  OpArgs a = creator(OpType::kCommInitAll, id, -1, ndev);
  return recordCall(
      a, [&] { return real_fn(comms, ndev, devlist); },
      [&](Recorder* rec, CallHandle& call, ncclResult_t result) {
        if (!succeeded(result) || comms == nullptr) return;
        for (int i = 0; i < ndev; ++i) {
          OpArgs member = creator(OpType::kCommInitAll, id, i, ndev);
          rec->commCreated(comms[i], member, call, CreationArgs{}, result,
                           rec->identifyDevice(queryDevice(comms[i]), realNccl().hostncclGetDevice),
                           ncclrec::format::kNoComm);
        }
      });
}

NCCLREC_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                          ncclConfig_t* config) {
  NCCLREC_REAL_OR_RETURN(ncclCommSplit);
  ncclrec::interpose::selectProfilerPlugin();
  Recorder* r = Recorder::get();
  ncclrec::recorder::CommState* parent = r != nullptr ? r->findComm(comm) : nullptr;
  const uint64_t parent_id = parent != nullptr ? parent->comm_id : 0;
  // Consumed by every split, NOCOLOR included, so that the counters agree across ranks.
  const uint32_t split_index = r != nullptr ? r->nextSplitIndex(comm) : 0;
  const uint64_t child_id = ncclrec::recorder::commIdForSplit(parent_id, split_index, color);
  OpArgs a = onComm(OpType::kCommSplit, comm);
  a.aux = color;
  a.aux2 = key;
  a.aux64 = color == NCCL_SPLIT_NOCOLOR ? 0 : child_id;
  CreationArgs c = creationArgs(config);
  c.parent_id = parent_id;
  c.color = color;
  c.key = key;
  const auto forward = [&] { return real_fn(comm, color, key, newcomm, config); };
  const auto after = [&](Recorder* rec, CallHandle& call, ncclResult_t result, uint32_t record) {
    if (!succeeded(result) || newcomm == nullptr || *newcomm == nullptr) {
      // The child was not made: its record ends failed.
      if (record != ncclrec::format::kNoComm)
        rec->commInitFailed(creator(OpType::kCommSplit, child_id, -1, 0), call.index, result, {},
                            record);
      return;
    }
    OpArgs child = creator(OpType::kCommSplit, child_id, queryRank(*newcomm), queryCount(*newcomm));
    rec->commCreated(*newcomm, child, call, c, result,
                     rec->identifyDevice(queryDevice(*newcomm), realNccl().hostncclGetDevice),
                     record);
  };
  // NCCL_SPLIT_NOCOLOR creates nothing for this rank: a plain call on the parent.
  if (color == NCCL_SPLIT_NOCOLOR)
    return recordCall(a, forward, [](Recorder*, CallHandle&, ncclResult_t) {});
  return recordCreation(a, creator(OpType::kCommSplit, child_id, -1, 0), c, forward, after);
}

NCCLREC_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList,
                                           int excludeRanksCount, ncclComm_t* newcomm,
                                           ncclConfig_t* config, int shrinkFlags) {
  NCCLREC_REAL_OR_RETURN(ncclCommShrink);
  ncclrec::interpose::selectProfilerPlugin();
  Recorder* r = Recorder::get();
  ncclrec::recorder::CommState* parent = r != nullptr ? r->findComm(comm) : nullptr;
  const uint64_t parent_id = parent != nullptr ? parent->comm_id : 0;
  const uint32_t split_index = r != nullptr ? r->nextSplitIndex(comm) : 0;
  const uint64_t child_id =
      ncclrec::recorder::commIdForShrink(parent_id, split_index, excludeRanksList,
                                         excludeRanksList != nullptr ? excludeRanksCount : 0);
  OpArgs a = onComm(OpType::kCommShrink, comm);
  a.aux = excludeRanksCount;
  a.aux2 = shrinkFlags;
  a.aux64 = child_id;
  CreationArgs c = creationArgs(config);
  c.parent_id = parent_id;
  return recordCreation(
      a, creator(OpType::kCommShrink, child_id, -1, 0), c,
      [&] {
        return real_fn(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
      },
      [&](Recorder* rec, CallHandle& call, ncclResult_t result, uint32_t record) {
        if (!succeeded(result) || newcomm == nullptr || *newcomm == nullptr) {
          // The child was not made: its record ends failed.
          if (record != ncclrec::format::kNoComm)
            rec->commInitFailed(creator(OpType::kCommShrink, child_id, -1, 0), call.index, result,
                                {}, record);
          return;
        }
        OpArgs child =
            creator(OpType::kCommShrink, child_id, queryRank(*newcomm), queryCount(*newcomm));
        rec->commCreated(*newcomm, child, call, c, result,
                         rec->identifyDevice(queryDevice(*newcomm), realNccl().hostncclGetDevice),
                         record);
      });
}

NCCLREC_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  NCCLREC_REAL_OR_RETURN(ncclCommFinalize);
  const ncclResult_t result =
      recordCall(onComm(OpType::kCommFinalize, comm), [&] { return real_fn(comm); });
  if (succeeded(result)) commEnded(comm, ncclrec::format::kCommFinalized);
  return result;
}

NCCLREC_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  NCCLREC_REAL_OR_RETURN(ncclCommDestroy);
  const ncclResult_t result =
      recordCall(onComm(OpType::kCommDestroy, comm), [&] { return real_fn(comm); });
  if (succeeded(result)) commEnded(comm, ncclrec::format::kCommDestroyed);
  return result;
}

NCCLREC_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  NCCLREC_REAL_OR_RETURN(ncclCommAbort);
  // Dump before forwarding: the abort is usually someone's reaction to a hang, and what the
  // process was doing is the evidence. The abort event itself shows as in progress.
  ncclrec::interpose::ReentryGuard guard;
  Recorder* r = guard.nested() ? nullptr : Recorder::get();
  if (r == nullptr) return real_fn(comm);
  CallHandle call = r->begin(onComm(OpType::kCommAbort, comm), ncclrec::interpose::kShimFrames);
  r->dumpNow(ncclrec::format::DumpReason::kAbort, "ncclCommAbort called");
  const ncclResult_t result = real_fn(comm);
  r->commEnded(comm, ncclrec::format::kCommAborted);
  r->end(call, result);
  return result;
}

NCCLREC_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  NCCLREC_REAL_OR_RETURN(ncclCommRevoke);
  OpArgs a = onComm(OpType::kCommRevoke, comm);
  a.aux = revokeFlags;
  const ncclResult_t result = recordCall(a, [&] { return real_fn(comm, revokeFlags); });
  if (succeeded(result)) commEnded(comm, ncclrec::format::kCommRevoked);
  return result;
}

NCCLREC_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  NCCLREC_REAL_OR_RETURN(ncclCommGetAsyncError);
  // Polled in tight loops by frameworks: recorded only the first time it reports an error.
  ncclrec::interpose::ReentryGuard guard;
  const ncclResult_t result = real_fn(comm, asyncError);
  if (guard.nested() || result != ncclSuccess || asyncError == nullptr) return result;
  Recorder* r = Recorder::get();
  // A nonblocking communicator settled: its ops that returned ncclInProgress are done (or failed).
  if (r != nullptr && *asyncError != ncclInProgress) r->asyncSettled(comm, *asyncError);
  if (succeeded(*asyncError)) return result;
  ncclrec::recorder::CommState* cs = r != nullptr ? r->findComm(comm) : nullptr;
  if (r == nullptr || cs == nullptr) return result;
  const uint32_t seen = ncclrec::format::atomicField(cs->record->state)
                            .fetch_or(ncclrec::format::kCommAsyncErrorSeen);
  if ((seen & ncclrec::format::kCommAsyncErrorSeen) != 0) return result;
  OpArgs a = onComm(OpType::kCommGetAsyncError, comm);
  a.aux = *asyncError;
  CallHandle call = r->begin(a, ncclrec::interpose::kShimFrames);
  Recorder::addEventFlags(call, ncclrec::format::kEventAsyncError);
  r->end(call, *asyncError);  // a failed event: asks the watchdog for an nccl_error dump
  return result;
}

NCCLREC_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                     ncclDataType_t datatype,
                                                     ncclScalarResidence_t residence,
                                                     ncclComm_t comm) {
  NCCLREC_REAL_OR_RETURN(ncclRedOpCreatePreMulSum);
  OpArgs a = onComm(OpType::kRedOpCreatePreMulSum, comm);
  a.dtype = datatype;
  a.aux = residence;
  return recordCall(
      a, [&] { return real_fn(op, scalar, datatype, residence, comm); },
      [&](Recorder*, CallHandle& call, ncclResult_t result) {
        if (succeeded(result) && op != nullptr)
          Recorder::setEventAux64(call, static_cast<uint64_t>(*op));
      });
}

NCCLREC_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  NCCLREC_REAL_OR_RETURN(ncclRedOpDestroy);
  OpArgs a = onComm(OpType::kRedOpDestroy, comm);
  a.redop = op;
  return recordCall(a, [&] { return real_fn(op, comm); });
}
