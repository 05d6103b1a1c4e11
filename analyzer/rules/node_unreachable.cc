#include "analyzer/rules/node_unreachable.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "analyzer/rank_ops.h"
#include "analyzer/rules/inside_one_op.h"

namespace ncclrec::analyzer::engine {
namespace {

// "3.0 s"
std::string secondsWord(double s) {
  char text[32];
  snprintf(text, sizeof(text), "%.1f s", s);
  return text;
}

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
  std::string nodes;
  for (const auto& [node, ranks] : silent) {
    v.ranks.insert(v.ranks.end(), ranks.begin(), ranks.end());
    nodes += std::string(nodes.empty() ? "" : ", ") + "node " + std::to_string(node->node) +
             " (host " + node->host + ", " + ranksWord(ranks) + ") not heard from for " +
             secondsWord(node->silent_s);
  }
  std::sort(v.ranks.begin(), v.ranks.end());
  // A ring's ranks that got all their data of the op wait in the next one.
  std::vector<size_t> ahead;
  for (size_t i = 0; i < c->streams.size(); ++i)
    if (c->streams[i].ops.back().e->op_seq != op->op_seq) ahead.push_back(i);
  std::string through;
  if (!ahead.empty()) {
    through = " (" + ranksWord(en.ranksOf(*c, ahead)) + " got through it and " +
              (ahead.size() == 1 ? "waits" : "wait") + " in #" + std::to_string(op->op_seq + 1) +
              ")";
  }
  const bool one = silent.size() == 1;
  v.headline = nodes + "; " + ranksWord(v.waiting) + (v.waiting.size() == 1 ? " waits" : " wait") +
               (one && v.ranks.size() == 1 ? " for it" : " for them") + " in " +
               std::string(format::opName(v.op)) + " #" + std::to_string(v.seq) + " on comm " +
               shortCommId(v.comm_id) + through +
               " and agree on every op before it: the network between " +
               (one ? "node " + std::to_string(silent.front().first->node) : "those nodes") +
               " and node 0 stopped, or " + (one ? "that node" : "those nodes") + " did";
  std::vector<int> other;  // no data, yet not on a silent node
  std::set_difference(no_data.begin(), no_data.end(), v.ranks.begin(), v.ranks.end(),
                      std::back_inserter(other));
  if (!other.empty()) v.headline += "; no data for " + ranksWord(other);
  v.missing.push_back(
      "node 0 could neither hear nor read " + std::string(one ? "that node" : "those nodes") +
      ": the black boxes there (NCCLREC_DIR on " + (one ? "that host" : "each host") +
      ") show whether " + ranksWord(v.ranks) + " still ran; if they did, the network between the " +
      "nodes stopped (the hosts' kernel logs and NCCL_DEBUG=INFO say more)");
  en.addEvidence(*c, at, v);
  return v;
}

}  // namespace ncclrec::analyzer::engine
