#include "format/op_type.h"

#include <array>
#include <map>
#include <mutex>
#include <string>

namespace ncclrec::format {
namespace {

constexpr std::array<std::string_view, static_cast<size_t>(OpType::kCount)> kOpNames = {
    "unknown",
    "ncclAllReduce",
    "ncclBroadcast",
    "ncclBcast",
    "ncclReduce",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclAlltoAll",
    "ncclGather",
    "ncclScatter",
    "ncclSend",
    "ncclRecv",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclGroupSimulateEnd",
    "ncclGetUniqueId",
    "ncclCommInitRank",
    "ncclCommInitRankConfig",
    "ncclCommInitAll",
    "ncclCommInitRankScalable",
    "ncclCommSplit",
    "ncclCommShrink",
    "ncclCommFinalize",
    "ncclCommDestroy",
    "ncclCommAbort",
    "ncclCommRevoke",
    "ncclCommGetAsyncError",
    "ncclRedOpCreatePreMulSum",
    "ncclRedOpDestroy",
};

// Indexed by ncclDataType_t (third_party/nccl/nccl.h).
constexpr std::array<std::string_view, 12> kDataTypeNames = {
    "int8",    "uint8",   "int32",   "uint32",   "int64",      "uint64",
    "float16", "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2",
};
constexpr std::array<int, 12> kDataTypeSizes = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

// Indexed by ncclRedOp_t; values from kNumBuiltinRedOps up are ncclRedOpCreatePreMulSum's.
constexpr std::array<std::string_view, 5> kRedOpNames = {"sum", "prod", "max", "min", "avg"};

}  // namespace

std::string_view opName(OpType op) {
  const auto i = static_cast<size_t>(op);
  return i < kOpNames.size() ? kOpNames[i] : "unknown";
}

OpType opFromName(std::string_view name) {
  for (size_t i = 1; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == name) return static_cast<OpType>(i);
  }
  return OpType::kUnknown;
}

bool isCommLifecycle(OpType op) {
  switch (op) {
    case OpType::kCommInitRank:
    case OpType::kCommInitRankConfig:
    case OpType::kCommInitAll:
    case OpType::kCommInitRankScalable:
    case OpType::kCommSplit:
    case OpType::kCommShrink:
    case OpType::kCommFinalize:
    case OpType::kCommDestroy:
    case OpType::kCommAbort:
    case OpType::kCommRevoke:
      return true;
    default:
      return false;
  }
}

std::string_view stateName(EventState state) {
  switch (state) {
    case EventState::kEmpty:
      return "empty";
    case EventState::kEnqueued:
      return "enqueued";
    case EventState::kStarted:
      return "started";
    case EventState::kCompleted:
      return "completed";
    case EventState::kFailed:
      return "failed";
  }
  return "unknown";
}

std::string_view dumpReasonName(DumpReason reason) {
  switch (reason) {
    case DumpReason::kNone:
      return "none";
    case DumpReason::kHang:
      return "hang";
    case DumpReason::kSignal:
      return "signal";
    case DumpReason::kNcclError:
      return "nccl_error";
    case DumpReason::kAbort:
      return "abort";
    case DumpReason::kTrigger:
      return "trigger";
    case DumpReason::kExit:
      return "exit";
    case DumpReason::kSnapshot:
      return "snapshot";
    case DumpReason::kManual:
      return "manual";
  }
  return "unknown";
}

std::string_view dataTypeName(int dtype) {
  if (dtype < 0) return "none";
  const auto i = static_cast<size_t>(dtype);
  return i < kDataTypeNames.size() ? kDataTypeNames[i] : "unknown";
}

int dataTypeSize(int dtype) {
  if (dtype < 0) return 0;
  const auto i = static_cast<size_t>(dtype);
  return i < kDataTypeSizes.size() ? kDataTypeSizes[i] : 0;
}

std::string_view redOpName(int redop) {
  if (redop < 0) return "none";
  const auto i = static_cast<size_t>(redop);
  if (i < kRedOpNames.size()) return kRedOpNames[i];
  // Run-time operators get an interned "premulsum#N" so the view outlives the call: the set of
  // values is small (NCCL numbers them from 5 per communicator). Tools only, never the record
  // path, so the lock is fine; the map's nodes never move, and are never freed.
  static std::mutex* mu = new std::mutex;
  static auto* names = new std::map<int, std::string>;
  std::lock_guard<std::mutex> lock(*mu);
  auto [it, inserted] = names->try_emplace(redop);
  if (inserted) it->second = "premulsum#" + std::to_string(redop);
  return it->second;
}

}  // namespace ncclrec::format
