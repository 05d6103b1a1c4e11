// A safe reader for the data-only subset of Python's pickle format that PyTorch Flight Recorder
// dumps use: torch's jit Pickler writes protocol 2 with dicts, lists, tuples, strings, ints,
// floats, bools and None; a dump re-pickled by Python (protocols 2-5) adds a few opcodes for the
// same types (framing, MEMOIZE, short strings, TUPLE1/3, LONG4).
//
// Nothing is ever executed: an opcode that names a global, calls, builds or persists an object
// (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, PERSID, EXT*, ...) and every opcode
// outside the subset is refused with one error naming the file, the byte offset and the opcode.
// Memory is bounded: nesting depth, string length, memo size and the size of the value after
// shared references are expanded are all capped (limits below), so a crafted file cannot make
// the reader loop, recurse without end or allocate more than a small multiple of its size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "recorder/format/status.h"

namespace ncclrec::format {

struct PickleLimits {
  size_t max_depth = 64;                // nested containers
  size_t max_string_bytes = 64u << 20;  // one string
  size_t max_memo = 1u << 24;           // memo slots
  size_t min_value_nodes = 1u << 20;    // value nodes allowed whatever the input size...
  size_t value_nodes_per_byte = 32;     // ...plus this many per input byte
};

// Reads one pickled value: tuples become JSON arrays, dict keys must be strings, integers must
// fit in 64 bits, None becomes null. Errors: "PATH: offset N: why" (for a refused opcode,
// "opcode GLOBAL (0x63) ... refused"). Trailing bytes after STOP are ignored, as pickle does.
StatusOr<nlohmann::json> parsePickle(const void* data, size_t size, const std::string& path,
                                     const PickleLimits& limits = {});

// True when `bytes` starts like a pickle of protocol 2 to 5 (PROTO opcode).
bool looksLikePickle(std::string_view bytes);

}  // namespace ncclrec::format
