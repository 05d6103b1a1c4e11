// PyTorch Flight Recorder (FR) dumps, read into the model (model.h) so every tool treats them as
// ncclrec's own dumps. ProcessGroupNCCL writes one file per rank, "<prefix><global rank>"
// (TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE, default /tmp/nccl_trace_rank_),
// as a pickle (pickle_reader.h); its debug server answers the same content as JSON. docs/
// analyzer.md, "From PyTorch Flight Recorder dumps", says what is read and what FR cannot tell.
//
// The mapping: a process group is a communicator (comm id: a hash of the group's name, equal on
// every rank; members: pg_config's "ranks", comm-local rank = position there); an entry is an
// event (op from profiling_name, op_seq = collective_seq_id for collectives and a per-peer,
// per-direction count for send/recv, count from the first input (output for reduce-scatter),
// dtype from the first input, state scheduled -> enqueued, started, completed); `frames` become
// Python frames of the event's stack, innermost first, so the analyzer's call-site rule applies
// unchanged. `nccl:coalesced` end markers are
// dropped and the ops they close get group depth 1. The file holds no process identity: pid is 0
// and host "", and the global rank is the number that ends the file's name.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/model.h"

namespace ncclrec::format {

// True when a file starting with `prefix` may be an FR dump: a pickle of protocol 2-5, or JSON
// whose first non-blank byte opens an object. The content decides; the name does not.
bool looksLikeFlightRecorder(std::string_view prefix);

// The rank that ends a file name ("nccl_trace_rank_12" -> 12), -1 when the name ends otherwise.
int rankFromFileName(const std::string& path);

// Parses an FR dump (pickle or JSON, told apart by content) of rank `global_rank`. "PATH: why"
// on failure: a refused pickle opcode, bad JSON, or a value of the wrong type for a known field.
base::StatusOr<RankData> parseFlightRecorder(const void* data, size_t size, const std::string& path,
                                             int global_rank);

// The JSON form's document (nesting over 64 deep refused): "PATH: offset N: why" on failure.
base::StatusOr<nlohmann::json> parseFlightRecorderJson(std::string_view bytes,
                                                       const std::string& path);

// The conversion alone, from the decoded dump (the pickle's value or the JSON document).
base::StatusOr<RankData> flightRecorderToModel(const nlohmann::json& dump, const std::string& path,
                                               int global_rank);

}  // namespace ncclrec::format
