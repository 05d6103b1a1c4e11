// A collective skipped by a rank that then went into point-to-point: the rank is blocked in a
// send or receive its peers never post (they wait in the collective it skipped), so the p2p
// accounting sees an unmatched call; its history shows the call comes after that collective.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyzer/headlines.h"
#include "analyzer/rules.h"

namespace ncclrec::analyzer::engine {
namespace {

// The index of `e` in the rank's events; SIZE_MAX when it is not one of them.
size_t indexIn(const RankData& rd, const EventRecord* e) {
  if (rd.events.empty() || e < rd.events.data() || e >= rd.events.data() + rd.events.size()) {
    return SIZE_MAX;
  }
  return static_cast<size_t>(e - rd.events.data());
}

// Whether `pending` (the rank's pending send or receive, event index `at`) comes, by the rank's
// own history, after the next issue of the collective whose earlier issues are at `issued`
// (event indices, ascending): the rank issued as many calls of pending's kind before each of them
// every step (a steady count), and has now issued more than that count allows before the next.
bool pastTheNextIssue(const Engine& en, const RankData& rd, const EventRecord& pending, size_t at,
                      const std::vector<size_t>& issued) {
  if (issued.size() < 2) return false;
  const std::string function = en.siteAt(rd, pending).function;
  std::vector<size_t> calls;  // event indices of the calls like `pending` up to it
  for (size_t i = 0; i <= at; ++i) {
    const EventRecord& e = rd.events[i];
    if (e.op == pending.op && e.commId() == pending.commId() && e.peer() == pending.peer() &&
        en.siteAt(rd, e).function == function) {
      calls.push_back(i);
    }
  }
  const auto before = [&](size_t index) {
    return static_cast<size_t>(std::lower_bound(calls.begin(), calls.end(), index) - calls.begin());
  };
  const size_t step = before(issued[1]) - before(issued[0]);
  if (step == 0) return false;
  for (size_t k = 2; k < issued.size(); ++k) {
    if (before(issued[k]) - before(issued[k - 1]) != step) return false;
  }
  return calls.size() > before(issued.back()) + step;
}

}  // namespace

std::optional<Verdict> skippedBeforeP2p(const Engine& en, const Inferred& inferred) {
  for (const CommStreams& c : en.comms()) {
    // The ranks pending in one collective at slot p, and the one rank whose stream ends there.
    // A rank that issued it and saw it complete (its data came before the others') counts with
    // those pending there: a broadcast's non-root gets its data before the root's peers are done
    // (P2pBlameTest.CollectiveSkippedBeforeASendIsFoundWhenAPeerSawItComplete).
    std::vector<size_t> going, ended;
    size_t p = SIZE_MAX;
    for (size_t s = 0; s < c.streams.size(); ++s) {
      const auto& ops = c.streams[s].ops;
      if (!ops.empty() && isIncomplete(*ops.back().e)) {
        if (p != SIZE_MAX && ops.size() - 1 != p) return std::nullopt;
        p = ops.size() - 1;
        going.push_back(s);
      }
    }
    if (p == SIZE_MAX) continue;
    const Op& waited = c.streams[going.front()].ops[p];
    for (size_t s = 0; s < c.streams.size(); ++s) {
      const auto& ops = c.streams[s].ops;
      if (std::find(going.begin(), going.end(), s) != going.end()) continue;
      if (ops.size() == p + 1 && ops[p].key == waited.key) {
        going.push_back(s);
      } else {
        ended.push_back(s);
      }
    }
    if (ended.size() != 1 || c.streams[ended[0]].ops.size() != p) continue;
    const Stream& ds = c.streams[ended[0]];
    const RankData& rd = en.set().ranks[ds.rank];
    if (rd.exited || rd.fatal_signal != 0 || en.dead(ds.rank, inferred)) continue;
    const EventRecord* pending = newestPendingCommOp(rd);
    if (pending == nullptr || !format::isP2p(pending->op)) continue;
    std::vector<size_t> issued;
    for (const Op& o : ds.ops) {
      if (en.opSite(o) == en.opSite(waited)) issued.push_back(indexIn(rd, o.e));
    }
    const size_t at = indexIn(rd, pending);
    if (at == SIZE_MAX || std::find(issued.begin(), issued.end(), SIZE_MAX) != issued.end() ||
        !pastTheNextIssue(en, rd, *pending, at, issued)) {
      continue;
    }
    Verdict v;
    v.cls = VerdictClass::kSkippedCollective;
    v.ranks = {en.globalRank(ds.rank)};
    v.comm_id = c.comm_id;
    v.seq = waited.e->op_seq;
    v.op = waited.e->op;
    v.site = en.siteAt(en.set().ranks[c.streams[going.front()].rank], *waited.e);
    const CallSite then = en.siteAt(rd, *pending);
    v.stacks = {v.site, then};
    v.headline =
        skippedHeadline(v, Instead::of(Instead::Kind::kCulpritWentOnToP2p, en.ranksOf(c, going),
                                       evidenceOpOf(*pending, then), pending->peer()));
    en.addEvidence(c, p, v);
    return v;
  }
  return std::nullopt;
}

bool skipBehindP2pWait(const Engine& en, Inferred& inferred, Verdict& v) {
  std::optional<Verdict> skip = skippedBeforeP2p(en, inferred);
  if (!skip) return false;
  becomeCause(v, std::move(*skip));
  return true;
}

}  // namespace ncclrec::analyzer::engine
