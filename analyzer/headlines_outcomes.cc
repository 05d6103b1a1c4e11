#include "analyzer/headlines_outcomes.h"

#include <cstdio>

namespace ncclrec::analyzer {

std::string noHangHeadline(const Completed& c) {
  return "no hang: every recorded collective completed (" + std::to_string(c.ops) + " ops on " +
         std::to_string(c.comms) + " communicator" + (c.comms == 1 ? "" : "s") + " across " +
         std::to_string(c.ranks) + " ranks)";
}

std::string slowRankHeadline(const Verdict& v, const SlowShare& l) {
  char share[16];
  std::snprintf(share, sizeof(share), "%.0f%%",
                100.0 * static_cast<double>(l.last) / static_cast<double>(l.full));
  std::string h = "no hang, but rank " + std::to_string(v.ranks.at(0)) + " was the last to issue " +
                  std::to_string(l.last) + " of " + std::to_string(l.full) + " collectives (" +
                  share + ") on comm " + shortCommId(v.comm_id) + ": the others wait for it";
  if (l.span > 0) {
    char wait[96];
    std::snprintf(wait, sizeof(wait), " (%.2f s, %.0f%% of all their waiting, %.0f%% of %.2f s)",
                  l.waited / 1e9, 100.0 * l.waited / l.total, 100.0 * l.waited / l.span,
                  l.span / 1e9);
    h += wait;
  }
  return h;
}

std::string failedCallHeadline(const Verdict& v, int result) {
  return ranksWord(v.ranks) + ": " + std::string(format::opName(v.op)) +
         (v.seq != 0 ? " #" + std::to_string(v.seq) : "") +
         (v.comm_id != 0 ? " on comm " + shortCommId(v.comm_id) : "") + " from " +
         describeCallSite(v.site) + " returned NCCL error " + std::to_string(result);
}

std::string allWaitHeadline(const Verdict& v, const std::vector<int>& present,
                            const std::vector<int>& no_data) {
  return ranksWord(present) + (present.size() == 1 ? " waits" : " wait") + " in " +
         std::string(format::opName(v.op)) + " #" + std::to_string(v.seq) + " on comm " +
         shortCommId(v.comm_id) + " and agree on every op before it" +
         (no_data.empty() ? "" : "; no data for " + ranksWord(no_data));
}

std::string allWaitMissing(const std::vector<int>& no_data) {
  if (!no_data.empty()) {
    return "no data for " + ranksWord(no_data) +
           ": their black boxes or dumps would show where they are";
  }
  return "every rank waits in the same op: the transport or the device is stuck, not the "
         "program's order; the NCCL log (NCCL_DEBUG=INFO) would tell more";
}

}  // namespace ncclrec::analyzer
