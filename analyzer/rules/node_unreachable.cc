#include "analyzer/rules/node_unreachable.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analyzer/headlines_liveness.h"
#include "analyzer/rank_ops.h"
#include "analyzer/rules/inside_one_op.h"

namespace ncclrec::analyzer::engine {
namespace {

// The silent nodes some of whose ranks have no data, each with those ranks.
std::vector<std::pair<const format::SilentNode*, std::vector<int>>> silentWithoutData(
    const Engine& en, const std::vector<int>& no_data) {
  std::vector<std::pair<const format::SilentNode*, std::vector<int>>> out;
  for (const format::SilentNode& n : en.set().silent_nodes) {
    std::vector<int> missing;
    for (int r : n.ranks)
      if (std::binary_search(no_data.begin(), no_data.end(), r)) missing.push_back(r);
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    if (!missing.empty()) out.emplace_back(&n, std::move(missing));
  }
  return out;
}

}  // namespace

std::optional<Verdict> findNodeUnreachable(const Engine& en) {
  if (en.set().silent_nodes.empty()) return std::nullopt;
  const CommStreams* c = en.firstPending();
  if (c == nullptr) return std::nullopt;
  const EventRecord* op = opEveryRunningRankIsIn(en, *c);
  // The communicator's own ranks all recorded here: they do not wait for another node.
  if (op == nullptr || static_cast<size_t>(op->nranks()) <= c->streams.size()) return std::nullopt;
  const std::vector<int> no_data = en.ranksWithNoData();
  const auto silent = silentWithoutData(en, no_data);
  if (silent.empty()) return std::nullopt;

  Verdict v;
  v.cls = VerdictClass::kNodeUnreachable;
  std::vector<size_t> all(c->streams.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  v.waiting = en.ranksOf(*c, all);
  v.comm_id = c->comm_id;
  v.seq = op->op_seq;
  v.op = op->op;
  // The op's place in the first stream (its newest op, or the one before when it went on).
  const Stream& first = c->streams.front();
  size_t at = first.ops.size() - 1;
  while (at > 0 && first.ops[at].e->op_seq != op->op_seq) --at;
  v.site = en.siteAt(en.set().ranks[first.rank], *first.ops[at].e);
  Unreachable u;
  for (const auto& [node, ranks] : silent) {
    v.ranks.insert(v.ranks.end(), ranks.begin(), ranks.end());
    u.nodes.push_back({node->node, node->host, ranks, node->silent_s});
  }
  std::sort(v.ranks.begin(), v.ranks.end());
  // A ring's ranks that got all their data of the op wait in the next one.
  std::vector<size_t> ahead;
  for (size_t i = 0; i < c->streams.size(); ++i)
    if (c->streams[i].ops.back().e->op_seq != op->op_seq) ahead.push_back(i);
  if (!ahead.empty()) u.ahead = en.ranksOf(*c, ahead);
  // No data, yet not on a silent node.
  std::set_difference(no_data.begin(), no_data.end(), v.ranks.begin(), v.ranks.end(),
                      std::back_inserter(u.no_data));
  v.headline = nodeUnreachableHeadline(v, u);
  v.missing.push_back(nodeUnreachableMissing(v, u));
  en.addEvidence(*c, at, v);
  return v;
}

}  // namespace ncclrec::analyzer::engine
