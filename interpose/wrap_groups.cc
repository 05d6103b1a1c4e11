// Wrappers of ncclGroupStart/End: ops issued inside a group run at the outermost GroupEnd, so
// that is where their completion is decided (Recorder::groupEnding/groupEnded).
#include "interpose/call.h"
#include "interpose/real_nccl.h"

using ncclrec::format::OpType;
using ncclrec::interpose::recordCall;
using ncclrec::recorder::CallHandle;
using ncclrec::recorder::OpArgs;
using ncclrec::recorder::Recorder;

thread_local int ncclrec::interpose::ReentryGuard::depth_ = 0;
thread_local CallHandle* ncclrec::interpose::CurrentCall::current_ = nullptr;

namespace {

OpArgs groupOp(OpType op) {
  OpArgs a;
  a.op = op;
  return a;
}

// Not recordCall: groupEnding() must run between begin() and the real call, and only when this
// call is recorded (a nested GroupEnd from inside NCCL must leave our group depth alone).
template <class Forward>
__attribute__((always_inline)) inline ncclResult_t endGroup(OpType op, bool simulated,
                                                            Forward&& forward) {
  ncclrec::interpose::ReentryGuard guard;
  Recorder* r = guard.nested() ? nullptr : Recorder::get();
  if (r == nullptr) return forward();
  CallHandle call = r->begin(groupOp(op), ncclrec::interpose::kShimFrames);
  r->groupEnding();
  const ncclResult_t result = forward();
  r->groupEnded(result, simulated);
  r->end(call, result);
  return result;
}

}  // namespace

NCCLREC_EXPORT ncclResult_t ncclGroupStart() {
  NCCLREC_REAL_OR_RETURN(ncclGroupStart);
  return recordCall(
      groupOp(OpType::kGroupStart), [&] { return real_fn(); },
      [&](Recorder* r, CallHandle&, ncclResult_t result) {
        if (result == ncclSuccess) r->groupStarted();
      });
}

NCCLREC_EXPORT ncclResult_t ncclGroupEnd() {
  NCCLREC_REAL_OR_RETURN(ncclGroupEnd);
  return endGroup(OpType::kGroupEnd, false, [&] { return real_fn(); });
}

NCCLREC_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  NCCLREC_REAL_OR_RETURN(ncclGroupSimulateEnd);
  return endGroup(OpType::kGroupSimulateEnd, true, [&] { return real_fn(simInfo); });
}
