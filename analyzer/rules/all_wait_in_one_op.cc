#include "analyzer/rules/all_wait_in_one_op.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

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
  v.headline = ranksWord(present) + (present.size() == 1 ? " waits" : " wait") + " in " +
               std::string(format::opName(v.op)) + " #" + std::to_string(v.seq) + " on comm " +
               shortCommId(v.comm_id) + " and agree on every op before it";
  const std::vector<int> no_data = en.ranksWithNoData();
  if (!no_data.empty()) {
    v.missing.push_back("no data for " + ranksWord(no_data) +
                        ": their black boxes or dumps would show where they are");
    v.headline += "; no data for " + ranksWord(no_data);
  } else {
    v.missing.push_back(
        "every rank waits in the same op: the transport or the device is stuck, not the "
        "program's order; the NCCL log (NCCL_DEBUG=INFO) would tell more");
  }
  en.addEvidence(*pending, s.ops.size() - 1, v);
  return v;
}

}  // namespace ncclrec::analyzer::engine
