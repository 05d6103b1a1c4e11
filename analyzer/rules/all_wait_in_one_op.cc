#include "analyzer/rules/all_wait_in_one_op.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/headlines_outcomes.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findAllWaitInOneOp(const Engine& en) {
  const CommStreams* pending = en.firstPending();
  Verdict v;
  if (pending == nullptr) return v;  // unreachable after no_hang; undecided
  v.cls = VerdictClass::kUndecided;
  v.comm_id = pending->comm_id;
  // pendingSince() found an op, so some stream holds one.
  const Stream& s = *std::find_if(pending->streams.begin(), pending->streams.end(),
                                  [](const Stream& x) { return !x.ops.empty(); });
  const Op& last = s.ops.back();
  v.seq = last.e->op_seq;
  v.op = last.e->op;
  v.site = en.siteAt(en.set().ranks[s.rank], *last.e);
  std::vector<size_t> all(pending->streams.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const std::vector<int> present = en.ranksOf(*pending, all);
  const std::vector<int> no_data = en.ranksWithNoData();
  v.headline = allWaitHeadline(v, present, no_data);
  v.missing.push_back(allWaitMissing(no_data));
  en.addEvidence(*pending, s.ops.size() - 1, v);
  return v;
}

}  // namespace ncclrec::analyzer::engine
