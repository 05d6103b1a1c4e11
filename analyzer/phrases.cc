#include "analyzer/phrases.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "analyzer/verdict.h"
#include "base/text.h"

namespace ncclrec::analyzer {

std::string seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1fs", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string spacedSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

std::string opNoun(format::OpType op) {
  using format::OpType;
  switch (op) {
    case OpType::kAllReduce:
      return "all-reduce";
    case OpType::kBroadcast:
    case OpType::kBcast:
      return "broadcast";
    case OpType::kReduce:
      return "reduce";
    case OpType::kAllGather:
      return "all-gather";
    case OpType::kReduceScatter:
      return "reduce-scatter";
    case OpType::kAlltoAll:
      return "all-to-all";
    case OpType::kGather:
      return "gather";
    case OpType::kScatter:
      return "scatter";
    default:
      return std::string(format::opName(op));
  }
}

std::string ordinal(uint64_t n) {
  const uint64_t mod100 = n % 100;
  const char* suffix = "th";
  if (mod100 < 11 || mod100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return std::to_string(n) + suffix;
}

std::string subsetCondition(const std::vector<int>& subset, const std::vector<int>& all) {
  if (subset.size() == 1) return "rank == " + std::to_string(subset[0]);
  std::vector<int> rest;
  std::set_difference(all.begin(), all.end(), subset.begin(), subset.end(),
                      std::back_inserter(rest));
  if (rest.size() == 1) return "rank != " + std::to_string(rest[0]);
  return "rank in {" + formatRanks(subset) + "}";
}

std::string clockTime(int64_t ns) { return ns <= 0 ? "-" : base::timeOfDay(ns, true) + " UTC"; }

}  // namespace ncclrec::analyzer
