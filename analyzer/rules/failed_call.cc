#include "analyzer/rules/failed_call.h"

#include <optional>
#include <string>

#include "analyzer/headlines_outcomes.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findFailedCall(const Engine& en) {
  // A call that returned an error: the job may stop there without anything left pending.
  const format::LoadedSet& set = en.set();
  const EventRecord* failed = nullptr;
  size_t failed_rank = 0;
  for (size_t r = 0; r < set.ranks.size(); ++r) {
    for (const EventRecord& e : set.ranks[r].events) {
      if (e.state == EventState::kFailed && talksToPeers(e) &&
          (failed == nullptr || e.enqueueNs() < failed->enqueueNs())) {
        failed = &e;
        failed_rank = r;
      }
    }
  }
  if (failed == nullptr) return std::nullopt;
  Verdict v;
  if (en.leaverExplains(*failed, v, Inferred{})) return v;  // a rule: nothing inferred yet
  v.cls = VerdictClass::kNcclError;
  v.ranks = {en.globalRank(failed_rank)};
  v.comm_id = failed->commId();
  v.seq = failed->op_seq;
  v.op = failed->op;
  v.site = en.siteAt(set.ranks[failed_rank], *failed);
  v.headline = failedCallHeadline(v, failed->result);
  v.stacks = {v.site};
  return v;
}

}  // namespace ncclrec::analyzer::engine
