// What a recorded event is: the NCCL entry point, its state and the reason a dump was written.
// Values are stored in black boxes and dumps: append only, never renumber.
#pragma once

#include <cstdint>
#include <string_view>

namespace ncclrec::format {

enum class OpType : uint16_t {
  kUnknown = 0,
  // Collectives: they take a per-communicator sequence number.
  kAllReduce = 1,
  kBroadcast = 2,
  kBcast = 3,
  kReduce = 4,
  kAllGather = 5,
  kReduceScatter = 6,
  kAlltoAll = 7,
  kGather = 8,
  kScatter = 9,
  // Point to point: they take a per-peer, per-direction sequence number.
  kSend = 10,
  kRecv = 11,
  // Groups.
  kGroupStart = 12,
  kGroupEnd = 13,
  kGroupSimulateEnd = 14,
  // Communicator life cycle and the rest.
  kGetUniqueId = 15,
  kCommInitRank = 16,
  kCommInitRankConfig = 17,
  kCommInitAll = 18,
  kCommInitRankScalable = 19,
  kCommSplit = 20,
  kCommShrink = 21,
  kCommFinalize = 22,
  kCommDestroy = 23,
  kCommAbort = 24,
  kCommRevoke = 25,
  kCommGetAsyncError = 26,
  kRedOpCreatePreMulSum = 27,
  kRedOpDestroy = 28,
  kCount = 29,
};

// "ncclAllReduce", ... ; "unknown" for values this build does not know.
std::string_view opName(OpType op);
// Inverse of opName; kUnknown when the name is not an op.
OpType opFromName(std::string_view name);
// Inline: every rule of the analyzer asks them of every event (2 million at fleet scale).
inline bool isCollective(OpType op) { return op >= OpType::kAllReduce && op <= OpType::kScatter; }
inline bool isP2p(OpType op) { return op == OpType::kSend || op == OpType::kRecv; }
// A collective with a root rank (broadcast, bcast, reduce, gather, scatter): the event's peer.
inline bool hasRoot(OpType op) {
  return op == OpType::kBroadcast || op == OpType::kBcast || op == OpType::kReduce ||
         op == OpType::kGather || op == OpType::kScatter;
}
// Creates, splits, shrinks, finalizes, destroys, aborts or revokes a communicator.
bool isCommLifecycle(OpType op);
// Creates one: ncclCommInitRank, ncclCommInitRankConfig, ncclCommInitAll,
// ncclCommInitRankScalable, ncclCommSplit, ncclCommShrink.
inline bool isCommCreation(OpType op) {
  return op >= OpType::kCommInitRank && op <= OpType::kCommShrink;
}
// Creates one from unique ids that the ranks share (not from a parent, not all in one process):
// ncclCommInitRank, ncclCommInitRankConfig, ncclCommInitRankScalable. Its members join by the id.
inline bool joinsById(OpType op) {
  return op == OpType::kCommInitRank || op == OpType::kCommInitRankConfig ||
         op == OpType::kCommInitRankScalable;
}

// Life of one event. Host backends go kEnqueued -> kCompleted when the call returns; CUDA streams
// go kEnqueued -> kStarted -> kCompleted as the watchdog observes the pooled CUDA events.
enum class EventState : uint8_t {
  kEmpty = 0,
  kEnqueued = 1,
  kStarted = 2,
  kCompleted = 3,
  kFailed = 4,  // the call returned an error; `result` holds it
};
std::string_view stateName(EventState state);

enum class DumpReason : uint32_t {
  kNone = 0,
  kHang = 1,
  kSignal = 2,
  kNcclError = 3,
  kAbort = 4,
  kTrigger = 5,
  kExit = 6,
  kManual = 7,
  // A thread snapshot taken without a dump (ncclrec-top's request, recording_files.h): only ever
  // the reason of a black box's thread snapshot (BboxHeader::threads_reason), never of a dump.
  kSnapshot = 8,
};
std::string_view dumpReasonName(DumpReason reason);

// NCCL datatypes and reduction operators by their ABI value ("float32", "sum", "premulsum#5").
std::string_view dataTypeName(int dtype);
// Size in bytes of one element of an NCCL datatype, 0 when unknown.
int dataTypeSize(int dtype);
std::string_view redOpName(int redop);

}  // namespace ncclrec::format
