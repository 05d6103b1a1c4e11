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

// "2.3 s": seconds with one decimal and a space, as the whereabouts and silent nodes say them.
std::string spacedSeconds(double s);

// "all-reduce", for "after 99 all-reduces".
std::string opNoun(format::OpType op);

// "1st", "2nd", "11th", "23rd".
std::string ordinal(uint64_t n);

// "12:35:48.828 UTC": a time of day in UTC, to the millisecond; "-" for 0.
std::string clockTime(int64_t ns);

// "rank == 0", "rank in {0,2}", "rank != 3": the condition that picks `subset` (ascending) out of
// `all` (ascending).
std::string subsetCondition(const std::vector<int>& subset, const std::vector<int>& all);

}  // namespace ncclrec::analyzer
