// The English of the analyzer's headlines and status lines: the small words every rule puts
// together ("rank == 0", "the 3rd", "2.3s", "all-reduce"; a
// communicator id is shortCommId(), verdict.h). Pure functions, no state; used by the
// verdict rules (rules.h) and the listings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/op_type.h"

namespace ncclrec::analyzer {

// "2.3s": a duration in seconds with one decimal.
std::string seconds(int64_t ns);

// "all-reduce", for "after 99 all-reduces".
std::string opNoun(format::OpType op);

// "1st", "2nd", "11th", "23rd".
std::string ordinal(uint64_t n);

// Why a process runs none of its code, from what the launcher read of it (proc(5) state letter and
// kernel wait channel): "its process is stopped (SIGSTOP or a debugger)", "its process is in
// uninterruptible sleep in io_schedule"; "" for a state in which it runs (or an unknown one).
std::string notRunningPhrase(char process_state, const std::string& wchan);

// "rank == 0", "rank in {0,2}", "rank != 3": the condition that picks `subset` (ascending) out of
// `all` (ascending).
std::string subsetCondition(const std::vector<int>& subset, const std::vector<int>& all);

}  // namespace ncclrec::analyzer
