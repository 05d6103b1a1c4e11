// The texts inside a Flight Recorder dump that name things: process-group ids, rank lists,
// dtypes and profiling names (flight_recorder.cc's conversion; internal to the format library).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "format/model.h"

namespace ncclrec::format::fr {

// FNV-1a of the group's name: the comm id every rank of the group computes alike. Never 0 (the
// model's "no communicator").
uint64_t commIdOf(const std::string& pg_name);

// "[0, 1, 2]" -> {0, 1, 2}; nullopt when the text is not such a list.
std::optional<std::vector<int>> parseRanks(std::string_view text);

// ncclDataType_t of a c10 ScalarType name, as ProcessGroupNCCL maps them; -1 when unknown.
int dtypeCode(std::string_view name);

struct ParsedName {
  OpType op = OpType::kUnknown;
  bool coalesced_marker = false;
  int peer = -1;  // send/recv: the group-local peer
};

// "nccl:all_reduce", "gloo:broadcast", "nccl:send 0->1", "nccl:recv 1<-0", "nccl:coalesced".
ParsedName parseProfilingName(std::string_view profiling);

}  // namespace ncclrec::format::fr
