#include "analyzer/rules/stuck_creating_comm.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/headlines_creation.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findStuckCreatingComm(const Engine& en) {
  // Stuck creating a communicator: no collective of it started, so no stream shows the wait. A
  // rank that never joins (not started, or started with another RANK, WORLD_SIZE or unique id)
  // usually left nothing recorded for it.
  if (en.firstPending() != nullptr) return std::nullopt;
  const format::LoadedSet& set = en.set();
  const EventRecord* creating = nullptr;
  for (const RankData& r : set.ranks) {
    for (const EventRecord& e : r.events) {
      if (format::isCommLifecycle(e.op) && isIncomplete(e) &&
          (creating == nullptr || e.enqueueNs() < creating->enqueueNs())) {
        creating = &e;
      }
    }
  }
  if (creating == nullptr) return std::nullopt;
  std::vector<int> waiting;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    for (const EventRecord& e : set.ranks[r].events) {
      if (e.commId() == creating->commId() && e.op == creating->op && isIncomplete(e)) {
        waiting.push_back(en.globalRank(r));
        break;
      }
    }
  }
  std::sort(waiting.begin(), waiting.end());
  Verdict v;
  v.cls = VerdictClass::kUndecided;
  v.comm_id = creating->commId();
  v.op = creating->op;
  const std::vector<int> no_data = en.ranksWithNoData();
  v.headline = stuckCreatingHeadline(v, waiting, creating->nranks(), no_data);
  if (!no_data.empty()) {
    v.missing.push_back("no data for " + ranksWord(no_data) +
                        ": a rank that was not started, or was started with another RANK, "
                        "WORLD_SIZE or unique id, never joins; its recording or the launcher's "
                        "log would show it");
  } else {
    v.missing.push_back(
        "the ranks that did not join were recorded elsewhere (see ranks:): "
        "their stacks show why they never reached " +
        std::string(format::opName(creating->op)));
  }
  return v;
}

}  // namespace ncclrec::analyzer::engine
