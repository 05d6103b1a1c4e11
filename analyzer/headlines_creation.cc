#include "analyzer/headlines_creation.h"

#include "analyzer/phrases.h"

namespace ncclrec::analyzer {
namespace {

// "; ranks 0-2 wait in it", or nothing when no member waits.
std::string waitsIn(const std::vector<int>& ranks) {
  return ranks.empty()
             ? ""
             : "; " + ranksWord(ranks) + (ranks.size() == 1 ? " waits" : " wait") + " in it";
}

}  // namespace

std::string creationPhrase(const CreationRef& c) {
  return std::string(format::opName(c.op)) + " of comm " + shortCommId(c.comm_id) + " (" +
         std::to_string(c.size) + " ranks) from " + describeCallSite(c.site);
}

std::string madeByPhrase(const IdMaker& m) {
  if (!m.recorded) return "made by no recorded rank";
  return "made by rank " + std::to_string(m.rank) +
         (m.shared ? " (pid " + std::to_string(m.pid) + ")" : "") + " (ncclGetUniqueId from " +
         describeCallSite(m.site) + ")";
}

std::string rankOutOfRangeHeadline(const Verdict& v, const CreationRef& c, int asked, int nranks,
                                   bool refused) {
  return ranksWord(v.ranks) + " asked for rank " + std::to_string(asked) + " of " +
         std::to_string(nranks) + " in " + creationPhrase(c) +
         (refused ? ", which NCCL refused (invalid argument)" : "") + waitsIn(v.waiting) +
         ": a rank of a communicator is 0 to nranks-1";
}

std::string sizesDisagreeHeadline(const Verdict& v, const CreationRef& c,
                                  const std::vector<std::pair<std::vector<int>, int>>& sizes,
                                  bool majority) {
  std::string parts;
  for (const auto& [ranks, n] : sizes) {
    parts += (parts.empty() ? "" : ", ") + ranksWord(ranks) +
             (ranks.size() == 1 ? " passes " : " pass ") + "nranks " + std::to_string(n);
  }
  return creationPhrase(c) + ": " + parts + (majority ? "" : ", and no size has a majority") +
         "; the bootstrap stops at the first size that differs" + waitsIn(v.waiting) +
         ": pass the same nranks (the job's size) on every member";
}

std::string rankClaimedTwiceHeadline(const Verdict& v, const CreationRef& c,
                                     const std::vector<Claim>& odd, const std::vector<int>& free) {
  std::string who;
  for (const Claim& k : odd) {
    who += (who.empty() ? "" : ", ") + std::string("rank ") + std::to_string(k.rank) + " (pid " +
           std::to_string(k.pid) + " on " + k.host + ") as rank " + std::to_string(k.comm_rank);
  }
  return creationPhrase(c) + ": " + who + ", which another process joined as too" +
         (free.empty() ? "" : "; no process joined as " + ranksWord(free)) +
         "; the bootstrap stops at the second claim" + waitsIn(v.waiting) +
         ": each process needs its own rank (LOCAL_RANK where RANK was meant?)";
}

std::string sharedRankHeadline(const Verdict& v, size_t processes,
                               const std::vector<SharedRankClaim>& claims,
                               const std::vector<int>& absent) {
  std::string who;
  for (const SharedRankClaim& k : claims) {
    who += (who.empty() ? "" : "; ") + std::string("pid ") + std::to_string(k.pid) + " on " +
           k.host + " in " + creationPhrase(k.creation) + " as rank " +
           std::to_string(k.comm_rank) + " (id " + madeByPhrase(k.maker) + ")";
  }
  return std::to_string(processes) + " processes run as rank " + std::to_string(v.ranks.at(0)) +
         ": " + who + (absent.empty() ? "" : "; no process runs as " + ranksWord(absent)) +
         ": each process needs its own RANK (started by hand, or a launcher variable read where "
         "another was meant?)";
}

std::string bootstrapStuckHeadline(const Verdict& v, const CreationRef& c,
                                   const BootstrapStall& s) {
  std::string settings;
  for (const auto& [env, ranks] : s.settings) {
    settings += (settings.empty() ? "" : "; ") +
                (env.empty() ? std::string("no NCCL network setting") : env) + " on " +
                ranksWord(ranks);
  }
  return "every member joined " + creationPhrase(c) + " (" + ranksWord(v.waiting) + ", the last " +
         seconds(s.last_join_ago_ns) + " ago) and " +
         (s.calls_failed ? "their calls failed" : "it does not finish") +
         ": the bootstrap cannot connect to the id's root" + (s.root.empty() ? "" : " " + s.root) +
         " (" + madeByPhrase(s.maker) + "); network settings: " + settings +
         "; check that every member reaches that address and port (the interface "
         "NCCL_SOCKET_IFNAME picks, firewalls, the root process itself)";
}

}  // namespace ncclrec::analyzer
