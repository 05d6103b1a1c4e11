// The ABI facts of one nccl.h, as (key, value) text pairs, so that two headers that define the same
// names can be compared: abi_real.cc builds the table from NVIDIA's header, abi_ours.cc from
// third_party/nccl/nccl.h, each in its own translation unit, and abi_test.cc compares them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ncclrec::hostnccl {

// Keys are "<kind> <name>", kind one of enum, type, struct, field, init, macro, function; values
// are what must be equal (value and type, size/alignment/offset, demangled function type).
using AbiTable = std::vector<std::pair<std::string, std::string>>;

AbiTable realNcclAbiTable();
AbiTable ourNcclAbiTable();

}  // namespace ncclrec::hostnccl
