#include "analyzer/rules/gated_at_the_end.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/rank_ops.h"

namespace ncclrec::analyzer::engine {
namespace {

// The op the minority issued past the others' end: incomplete, or failed because the peers left.
bool waitsOrLostItsPeers(const EventRecord& e) { return isIncomplete(e) || lostPeer(e); }

// Whether the rank behind stream `s` of `c` will not come back to `c`: every op it issued there
// completed, and it ended `c`, exited, or its newest call to peers (elsewhere) never completed.
bool doneWith(const Engine& en, const CommStreams& c, const Stream& s) {
  for (const Op& o : s.ops)
    if (o.e->state != format::EventState::kCompleted) return false;
  const format::RankData& rd = en.set().ranks[s.rank];
  if (rd.exited) return true;
  for (const EventRecord& e : rd.events) {
    if (e.commId() == c.comm_id && format::isCommLifecycle(e.op) && !format::isCommCreation(e.op))
      return true;  // destroyed, finalized or aborted it
  }
  const EventRecord* newest = newestPeerCall(rd);
  return newest != nullptr && newest->commId() != c.comm_id && unfinished(*newest);
}

// The finding on `c`, if any.
std::optional<Verdict> gatedOn(const Engine& en, const CommStreams& c) {
  size_t p = SIZE_MAX;
  for (const Stream& s : c.streams) p = std::min(p, s.ops.size());
  std::vector<size_t> extra, ended;
  for (size_t s = 0; s < c.streams.size(); ++s) {
    const size_t n = c.streams[s].ops.size();
    if (n != p && n != p + 1) return std::nullopt;
    (n == p ? ended : extra).push_back(s);
  }
  // Deviant before victim: the smaller group deviates.
  if (extra.empty() || extra.size() >= ended.size()) return std::nullopt;
  const Op& op = c.streams[extra.front()].ops[p];
  for (size_t s : extra) {
    const Op& o = c.streams[s].ops[p];
    if (o.key != op.key || !waitsOrLostItsPeers(*o.e)) return std::nullopt;
  }
  // A call site the communicator never saw before: not an op the others skipped.
  for (const Stream& s : c.streams) {
    for (size_t i = 0; i < p; ++i)
      if (en.opSite(s.ops[i]) == en.opSite(op)) return std::nullopt;
  }
  for (size_t s : ended)
    if (!doneWith(en, c, c.streams[s])) return std::nullopt;
  Verdict v;
  v.cls = VerdictClass::kRankGatedCollective;
  v.ranks = en.ranksOf(c, extra);
  v.comm_id = c.comm_id;
  v.seq = op.e->op_seq;
  v.op = op.e->op;
  v.site = en.siteAt(en.set().ranks[c.streams[extra.front()].rank], *op.e);
  v.stacks = {v.site};
  std::vector<size_t> all(c.streams.size());
  for (size_t s = 0; s < all.size(); ++s) all[s] = s;
  v.headline =
      aloneHeadline(v, en.ranksOf(c, all),
                    Instead::of(Instead::Kind::kOthersWentNoFurther, en.ranksOf(c, ended)));
  en.addEvidence(c, p, v);
  return v;
}

}  // namespace

std::optional<Verdict> findGatedAtTheEnd(const Engine& en) {
  for (const CommStreams& c : en.comms()) {
    if (c.streams.size() < 2) continue;
    if (std::optional<Verdict> v = gatedOn(en, c)) return v;
  }
  return std::nullopt;
}

}  // namespace ncclrec::analyzer::engine
