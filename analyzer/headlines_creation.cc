#include "analyzer/headlines_creation.h"

#include "analyzer/phrases.h"
#include "base/text.h"

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

std::string lazyPhrase(const LazyCreation& l) {
  if (!l.lazy) return "";
  const std::string caller = l.has_caller ? ", called from " + describeCallSite(l.caller) : "";
  if (l.by_this_call) return " (created lazily, by this first collective on it" + caller + ")";
  return " (created lazily, by the first collective on it: " + describeCallSite(l.trigger) +
         caller + ")";
}

std::string whereaboutsPhrase(const Whereabouts& w) {
  switch (w.kind) {
    case Whereabouts::Kind::kBlocked:
      return "is blocked in " + std::string(format::opName(w.in.op.op)) +
             (w.in.op.seq != 0 ? " #" + std::to_string(w.in.op.seq) : "") +
             (format::joinsById(w.in.op.op) ? " of comm " : " on comm ") +
             shortCommId(w.in.comm_id) + " from " + describeCallSite(w.in.op.site);
    case Whereabouts::Kind::kHost:
      return "is in host code: " + lastOpPhrase(w.last);
    case Whereabouts::Kind::kExited:
      return "exited; " + lastOpPhrase(w.last);
    case Whereabouts::Kind::kCrashed:
      return "crashed (" + base::signalName(w.signal) + "); " + lastOpPhrase(w.last);
    case Whereabouts::Kind::kDead:
      return "died without an exit mark (killed from outside); " + lastOpPhrase(w.last);
    default:
      return "has no recording (it never started, or started without the recorder)";
  }
}

std::string creationAloneHeadline(const Verdict& v, const CreationRef& c, const LazyCreation& l) {
  return ranksWord(v.ranks) + " alone began " + creationPhrase(c) + lazyPhrase(l) +
         "; every member of a communicator must create it, and " + ranksWord(v.waiting) +
         " never did";
}

std::string neverJoinedHeadline(const Verdict& v, const CreationRef& c, const LazyCreation& l,
                                const std::vector<std::pair<int, Whereabouts>>& away) {
  std::string where;
  for (const auto& [rank, w] : away) {
    where += (where.empty() ? "" : "; ") + std::string("rank ") + std::to_string(rank) + " " +
             whereaboutsPhrase(w);
  }
  return ranksWord(v.ranks) + " never joined " + creationPhrase(c) + lazyPhrase(l) + ": " + where +
         "; " + ranksWord(v.waiting) + (v.waiting.size() == 1 ? " waits" : " wait") +
         " in the creation for " + (away.size() == 1 ? "it" : "them") +
         "; every member of a communicator must create it";
}

std::string severalIdsHeadline(const CreationRef& c,
                               const std::vector<std::pair<std::vector<int>, IdMaker>>& ids,
                               bool majority) {
  std::string groups;
  for (const auto& [ranks, maker] : ids) {
    groups +=
        (groups.empty() ? "" : "; ") + ranksWord(ranks) + " joined the id " + madeByPhrase(maker);
  }
  return "one communicator of " + std::to_string(c.size) + " ranks (" + creationPhrase(c) +
         ") was given " + std::to_string(ids.size()) + " unique ids, and none can fill: " + groups +
         (majority ? "" : "; no id is shared by a majority of its members") +
         ": one rank must make the id and every member use that one";
}

std::string stuckCreatingHeadline(const Verdict& v, const std::vector<int>& waiting, int nranks,
                                  const std::vector<int>& no_data) {
  return ranksWord(waiting) + (waiting.size() == 1 ? " waits" : " wait") + " in " +
         std::string(format::opName(v.op)) + " on comm " + shortCommId(v.comm_id) +
         " for a communicator of " + std::to_string(nranks) + " ranks" +
         (no_data.empty() ? "" : "; no data for " + ranksWord(no_data));
}

}  // namespace ncclrec::analyzer
