// Classifying the first slot where ranks issued different ops: insertion, deletion, substitution.
#include <algorithm>
#include <set>
#include <tuple>

#include "analyzer/engine.h"
#include "analyzer/headlines.h"

namespace ncclrec::analyzer::engine {

// Whether the collective (op, call site) `site` is one the job issues anyway: seen before p on any
// rank, or at or after p in the other streams.
bool Engine::knownSite(const CommStreams& c, size_t p, uint32_t site,
                       const std::vector<size_t>& other_streams) const {
  const Stream& any = c.streams.front();
  for (size_t i = 0; i < p && i < any.ops.size(); ++i) {
    if (opSite(any.ops[i]) == site) return true;
  }
  for (size_t s : other_streams) {
    const auto& ops = c.streams[s].ops;
    for (size_t i = p; i < ops.size(); ++i) {
      if (opSite(ops[i]) == site) return true;
    }
  }
  return false;
}

namespace {

// The op that usually follows `of` in the first `p` ops of `s` (the most frequent successor).
std::optional<uint32_t> usuallyAfter(const Stream& s, size_t p, uint32_t of) {
  std::optional<uint32_t> after;
  std::unordered_map<uint32_t, size_t> next;
  for (size_t i = 0; i + 1 < p; ++i) {
    if (s.ops[i].key == of) ++next[s.ops[i + 1].key];
  }
  size_t best = 0;
  for (const auto& [key, count] : next) {
    if (count > best || (count == best && after && key < *after)) {
      best = count;
      after = key;
    }
  }
  return after;
}

// The op that usually follows the op before p in the first p ops of `s`; nullopt at p == 0.
std::optional<uint32_t> predictNext(const Stream& s, size_t p) {
  if (p == 0) return std::nullopt;
  return usuallyAfter(s, p, s.ops[p - 1].key);
}

// Whether the rank of `ds`, between its op before slot p and the op at p, issued an op on another
// communicator that its history places only after an op keyed `skipped` (in the gap that follows
// it on this communicator, never in the gap before it): the rank went past that op's place
// without issuing it. After a swap it would have issued its slot's op first.
bool wentPastOnOtherComms(const Stream& ds, const std::vector<EventRecord>& events, size_t p,
                          uint32_t skipped) {
  if (p == 0 || p >= ds.ops.size()) return false;
  using Sig = std::tuple<uint64_t, OpType, uint64_t, int, uint32_t>;  // comm, op, shape, site
  const auto pos = [&](size_t i) { return static_cast<size_t>(ds.ops[i].e - events.data()); };
  const auto gap = [&](size_t a, std::set<Sig>& into) {
    for (size_t k = pos(a) + 1; k < pos(a + 1) && k < events.size(); ++k) {
      const EventRecord& e = events[k];
      if (e.commId() == 0 || e.commId() == ds.ops[a].e->commId()) continue;
      if (format::isCollective(e.op) || format::isP2p(e.op)) {
        into.insert(Sig{e.commId(), e.op, e.count, e.dtype, e.stackId()});
      }
    }
  };
  std::set<Sig> before, after;
  for (size_t i = 1; i + 1 < p; ++i) {
    if (ds.ops[i].key != skipped) continue;
    gap(i - 1, before);
    gap(i, after);
  }
  std::set<Sig> now;
  gap(p - 1, now);
  return std::any_of(now.begin(), now.end(),
                     [&](const Sig& s) { return after.contains(s) && !before.contains(s); });
}

using Sigs = std::multiset<std::tuple<uint64_t, OpType, uint64_t, int, uint32_t>>;

// The ops of the outermost group around events[k] (ncclGroupStart to its ncclGroupEnd, at most
// kDiffWindow events each way), but events[skip], as (comm, op, shape, call site); empty when
// events[k] is not in a complete group.
Sigs groupAround(const std::vector<EventRecord>& events, size_t k, size_t skip) {
  Sigs out;
  size_t start = k, depth = 0;
  bool found = false;
  for (size_t j = k; j-- > 0 && k - j <= kDiffWindow;) {
    if (events[j].op == OpType::kGroupEnd) ++depth;
    if (events[j].op != OpType::kGroupStart) continue;
    if (depth == 0) {
      start = j;
      found = true;
      break;
    }
    --depth;
  }
  if (!found) return out;
  depth = 0;
  for (size_t j = start + 1; j < events.size() && j - start <= 2 * kDiffWindow; ++j) {
    const EventRecord& e = events[j];
    if (e.op == OpType::kGroupStart) ++depth;
    if (e.op == OpType::kGroupEnd && depth-- == 0) return out;
    if (j != skip && (format::isCollective(e.op) || format::isP2p(e.op))) {
      out.insert({e.commId(), e.op, e.count, e.dtype, e.stackId()});
    }
  }
  return {};
}

// Whether the rank of `ds`, after its op before slot p, ended a group holding exactly what its
// history's group with an op keyed `skipped` held besides it (a group before the op at p, or the
// one that holds it): it closed the group the op belongs to without issuing it. After a swap the
// op would still be in the group.
bool closedGroupWithout(const Stream& ds, const std::vector<EventRecord>& events, size_t p,
                        uint32_t skipped) {
  if (p == 0 || p >= ds.ops.size()) return false;
  const auto pos = [&](size_t i) { return static_cast<size_t>(ds.ops[i].e - events.data()); };
  std::set<Sigs> with;  // each group of the history that held the op, without it
  for (size_t i = 0; i + 1 < p; ++i) {
    if (ds.ops[i].key != skipped || !(ds.ops[i].e->flags & format::kEventInGroup)) continue;
    if (Sigs g = groupAround(events, pos(i), pos(i)); !g.empty()) with.insert(std::move(g));
  }
  if (with.empty()) return false;
  for (size_t k = pos(p - 1) + 1; k < pos(p) && k < events.size(); ++k) {
    if (events[k].op != OpType::kGroupEnd) continue;
    if (with.contains(groupAround(events, k, SIZE_MAX))) return true;
  }
  return (ds.ops[p].e->flags & format::kEventInGroup) &&
         with.contains(groupAround(events, pos(p), SIZE_MAX));
}

// Whether the op at slot p of `ds` is in a complete group that also holds an op on another
// communicator, and its history issued that same group (ops, shapes, call sites) right after an op
// keyed `skipped`: the rank went on to the step after that op's. The calls inside a group are one
// unit, not an order of operations: this is wentPastOnOtherComms() for the group's ops issued
// after the slot's.
bool wentOnWithItsGroup(const Stream& ds, const std::vector<EventRecord>& events, size_t p,
                        uint32_t skipped) {
  if (p == 0 || p >= ds.ops.size() || !(ds.ops[p].e->flags & format::kEventInGroup)) return false;
  const auto pos = [&](size_t i) { return static_cast<size_t>(ds.ops[i].e - events.data()); };
  const Sigs now = groupAround(events, pos(p), SIZE_MAX);
  const uint64_t comm = ds.ops[p].e->commId();
  if (std::none_of(now.begin(), now.end(), [&](const auto& s) { return std::get<0>(s) != comm; })) {
    return false;
  }
  for (size_t i = 1; i < p; ++i) {
    if (ds.ops[i].key != ds.ops[p].key || ds.ops[i - 1].key != skipped) continue;
    if ((ds.ops[i].e->flags & format::kEventInGroup) &&
        groupAround(events, pos(i), SIZE_MAX) == now) {
      return true;
    }
  }
  return false;
}

}  // namespace

// The streams stop too soon to line up again (a hang stops them): judge the slot by the history.
Edit Engine::judgeByHistory(const Stream& ns, const Stream& ds, size_t p, bool d_known,
                            bool other_args, bool same_function) const {
  const Op& n = ns.ops[p];
  const Op& d = ds.ops[p];
  const auto& events = set_.ranks[ds.rank].events;
  // The rank closed the group that holds n without it: it skipped n, whatever took its place.
  if (closedGroupWithout(ds, events, p, n.key)) return Edit::kDeletion;
  if (other_args) return Edit::kSubstitution;
  // Another collective of the same length from the same function: the call was changed, not
  // added (an extra, gated op is rarely the length of the one it meets, nor issued beside it).
  if (d.e->op != n.e->op && d.e->count == n.e->count && same_function) return Edit::kSubstitution;
  if (!d_known) return Edit::kInsertion;
  // Whether d's op would follow n's op in the history, at once or after a few more ops that d
  // skipped as well (a step's gradient buckets).
  std::optional<uint32_t> key = usuallyAfter(ns, p, n.key);
  for (size_t hop = 1; hop < kSkippedRun && key && *key != d.key; ++hop) {
    key = usuallyAfter(ns, p, *key);
  }
  const bool follows = key == d.key;
  if (d.e->op != n.e->op) {
    // Another collective where the others issued theirs: skipped, or two collectives swapped.
    // Only a stream that went on tells: after a skip the rank goes on as the history does, after a
    // swap it issues the op it swapped. A stream that stops here is left a mismatch, even where
    // the others went past the slot to the op it issued (they do after a swap too:
    // samples/op_order). Or what the rank did besides: before the slot, an op on another
    // communicator that the history places after n (or the group above); or the group that
    // holds d, with ops on other communicators, as the history issues it after n.
    const bool went_on = (p + 1 < ds.ops.size() && ds.ops[p + 1].key != n.key &&
                          usuallyAfter(ns, p, d.key) == ds.ops[p + 1].key) ||
                         wentPastOnOtherComms(ds, events, p, n.key) ||
                         wentOnWithItsGroup(ds, events, p, n.key);
    return follows && went_on ? Edit::kDeletion : Edit::kSubstitution;
  }
  if (predictNext(ns, p + 1) == d.key || (p + 1 < ns.ops.size() && ns.ops[p + 1].key == d.key)) {
    return Edit::kDeletion;
  }
  return follows ? Edit::kDeletion : Edit::kSubstitution;
}

namespace {

// How many ops of `ds` from `d_from` equal (by key) those of `ns` from `n_from`, up to
// kDiffWindow; 0 when one differs first.
size_t lineUp(const Stream& ds, size_t d_from, const Stream& ns, size_t n_from) {
  size_t overlap = 0;
  while (overlap < kDiffWindow && d_from + overlap < ds.ops.size() &&
         n_from + overlap < ns.ops.size()) {
    if (ds.ops[d_from + overlap].key != ns.ops[n_from + overlap].key) return 0;
    ++overlap;
  }
  return overlap;
}

// The diff: the single edit of `ds` at slot `p` that makes the following ops line up with `ns`
// again; kNone when none or more than one does.
Edit diffEdit(const Stream& ns, const Stream& ds, size_t p) {
  const size_t ins = lineUp(ds, p + 1, ns, p);
  const size_t del = lineUp(ds, p, ns, p + 1);
  const size_t sub = lineUp(ds, p + 1, ns, p + 1);
  if ((ins > 0) + (del > 0) + (sub > 0) != 1) return Edit::kNone;
  return ins > 0 ? Edit::kInsertion : del > 0 ? Edit::kDeletion : Edit::kSubstitution;
}

// A divergence at one slot as the verdict words it: the deviant ranks' op `d` against the op `n`
// of the normal ranks.
struct Divergence {
  std::vector<int> dev_ranks;
  std::vector<int> normal_ranks;
  std::vector<int> all;  // every rank of the communicator
  const EventRecord& d;
  const EventRecord& n;
  CallSite d_site;
  CallSite n_site;
  bool same_site = false;
};

// What the ranks that did not deviate issued in the slot, as the headlines name it.
Instead theirs(const Divergence& x, Instead::Kind kind) {
  return Instead::of(kind, x.normal_ranks, evidenceOpOf(x.n, x.n_site));
}

void gatedVerdict(const Divergence& x, Verdict& v) {
  v.cls = VerdictClass::kRankGatedCollective;
  v.seq = x.d.op_seq;
  v.op = x.d.op;
  v.site = x.d_site;
  v.headline = aloneHeadline(v, x.all, theirs(x, Instead::Kind::kOthersIssued));
  v.stacks = {x.d_site, x.n_site};
}

void skippedVerdict(const Divergence& x, Verdict& v) {
  v.cls = VerdictClass::kSkippedCollective;
  v.seq = x.n.op_seq;
  v.op = x.n.op;
  v.site = x.n_site;
  Instead instead = theirs(x, Instead::Kind::kCulpritsIssued);
  instead.op = evidenceOpOf(x.d, x.d_site);
  v.headline = skippedHeadline(v, instead);
  v.stacks = {x.n_site, x.d_site};
}

// Substitution: the same slot with different arguments. False when only the call sites differ,
// and NCCL pairs such ops cleanly.
bool substitutionVerdict(const Divergence& x, Verdict& v) {
  const EvidenceOp mine = evidenceOpOf(x.d, x.d_site);
  const Instead instead = theirs(x, Instead::Kind::kOthersPassed);
  const std::optional<VerdictClass> cls = mismatchOf(mine, instead.op);
  if (!cls) return false;
  v.cls = *cls;
  v.seq = x.d.op_seq;
  v.op = x.d.op;
  v.site = x.d_site;
  v.headline = mismatchHeadline(v, mine, instead, x.same_site);
  v.stacks =
      x.same_site ? std::vector<CallSite>{x.d_site} : std::vector<CallSite>{x.d_site, x.n_site};
  return true;
}

}  // namespace

std::pair<size_t, size_t> Engine::normalAndDeviant(const CommStreams& c, size_t p,
                                                   const std::vector<Group>& groups,
                                                   std::vector<bool>* known) const {
  // Which group behaves as the history predicts (the normal one) and which deviates.
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const std::optional<uint32_t> predicted = predictNext(c.streams[groups[0].streams[0]], p);
  known->assign(groups.size(), false);
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<size_t> others;
    for (size_t h = 0; h < groups.size(); ++h) {
      if (h != g) others.insert(others.end(), groups[h].streams.begin(), groups[h].streams.end());
    }
    const Op& op = c.streams[groups[g].streams[0]].ops[p];
    (*known)[g] = knownSite(c, p, opSite(op), others);
  }
  const auto normality = [&](size_t g) {
    return std::make_tuple(predicted && groups[g].key == *predicted, (*known)[g] ? 1 : 0,
                           groups[g].streams.size(), -groups[g].ranks.front());
  };
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return normality(a) > normality(b); });
  // The deviating group: the smallest, then the one with the lowest rank.
  size_t dev_index = order[1];
  for (size_t i = 2; i < order.size(); ++i) {
    const Group& g = groups[order[i]];
    const Group& d = groups[dev_index];
    if (g.ranks.size() < d.ranks.size() ||
        (g.ranks.size() == d.ranks.size() && g.ranks.front() < d.ranks.front())) {
      dev_index = order[i];
    }
  }
  return {order[0], dev_index};
}

bool Engine::classifyKeyDivergence(const CommStreams& c, size_t p, const std::vector<Group>& groups,
                                   Verdict& v) const {
  std::vector<bool> known;
  const auto [normal_index, dev_index] = normalAndDeviant(c, p, groups, &known);
  const Group& dev = groups[dev_index];
  // The normal group's rank that went furthest past the slot (the ranks of a rooted op that only
  // receive may have gone on while its root waits), so that the judgement does not depend on
  // which rank the root is.
  size_t normal_stream = groups[normal_index].streams[0];
  for (size_t s : groups[normal_index].streams) {
    if (c.streams[s].ops.size() > c.streams[normal_stream].ops.size()) normal_stream = s;
  }
  const Stream& ns = c.streams[normal_stream];
  const Stream& ds = c.streams[dev.streams[0]];
  const Op& n = ns.ops[p];
  const Op& d = ds.ops[p];
  Divergence x{dev.ranks,
               {},
               {},
               *d.e,
               *n.e,
               siteAt(set_.ranks[ds.rank], *d.e),
               siteAt(set_.ranks[ns.rank], *n.e),
               false};
  x.same_site = loc_of_site_[opSite(n)] == loc_of_site_[opSite(d)];
  Edit edit = diffEdit(ns, ds, p);
  // A deviant that stopped at the slot lines up with the others' next op after a skip and after
  // a swap alike: the history decides (judgeByHistory).
  if (edit == Edit::kDeletion && ds.ops.size() == p + 1) edit = Edit::kNone;
  // The same collective on a buffer of the same length with another datatype, reduction or root:
  // the same call with other arguments, even when a branch inside the caller issued it from
  // another line (an extra, gated op is rarely the same length as the one it meets).
  const bool other_args = d.e->op == n.e->op && d.e->count == n.e->count &&
                          (d.e->dtype != n.e->dtype || d.e->redop != n.e->redop ||
                           (hasRoot(d.e->op) && d.e->peer() != n.e->peer()));
  if (edit == Edit::kNone) {
    edit = judgeByHistory(ns, ds, p, known[dev_index], x.same_site || other_args,
                          x.n_site.function == x.d_site.function);
  }
  for (const Stream& s : c.streams) x.all.push_back(globalRank(s.rank));
  std::sort(x.all.begin(), x.all.end());
  for (const Group& g : groups) {
    if (&g != &dev) x.normal_ranks.insert(x.normal_ranks.end(), g.ranks.begin(), g.ranks.end());
  }
  std::sort(x.normal_ranks.begin(), x.normal_ranks.end());
  v.comm_id = c.comm_id;
  v.ranks = dev.ranks;
  if (edit == Edit::kInsertion) {
    gatedVerdict(x, v);
    return true;
  }
  if (edit == Edit::kDeletion) {
    skippedVerdict(x, v);
    return true;
  }
  return substitutionVerdict(x, v);
}

}  // namespace ncclrec::analyzer::engine
