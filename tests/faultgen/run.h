// One rank of a generated program, with real NCCL calls.
#pragma once

#include <string>

#include "tests/faultgen/program.h"

namespace ncclrec::faultgen {

// Runs global `rank`'s part of `p`: the world communicator from a unique id shared under
// `id_key` (samples/common/unique_id_file.h: cxxrun's store, else that file), the splits, the
// loop, the fault. Returns the exit code (0; 1 when an NCCL call failed); the exit, crash and
// stall faults do not return.
int runRank(const Program& p, int rank, const std::string& id_key);

}  // namespace ncclrec::faultgen
