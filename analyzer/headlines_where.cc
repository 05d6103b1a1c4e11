#include "analyzer/headlines_where.h"

#include "analyzer/phrases.h"

namespace ncclrec::analyzer {

std::string waitingPhrase(const Verdict& v, const std::vector<WaitPlace>& places) {
  if (v.waiting.empty()) return "";
  const std::string it = v.ranks.size() > 1 ? "them" : "it";
  if (places.empty()) {
    return "; " + ranksWord(v.waiting) + (v.waiting.size() == 1 ? " waits for " : " wait for ") +
           it;
  }
  std::string out;
  for (const WaitPlace& p : places) {
    const bool first = out.empty();
    const bool single = p.ranks.size() == 1;
    out += first ? "; " + ranksWord(p.ranks) : ", " + ranksWord(p.ranks);
    out += p.failed ? " failed in "
           : !first ? " in "
           : single ? " waits for " + it + " in "
                    : " wait for " + it + " in ";
    // The verdict's own op goes without its name and communicator; another one is named (a
    // communicator's creation has no sequence number).
    if (p.comm_id == v.comm_id && p.op == v.op && p.seq != 0) {
      out += "#" + std::to_string(p.seq);
    } else {
      out += std::string(format::opName(p.op)) + (p.seq != 0 ? " #" + std::to_string(p.seq) : "");
      if (p.comm_id != v.comm_id) out += " on comm " + shortCommId(p.comm_id);
    }
    out += " from " + describeCallSite(p.site);
  }
  return out;
}

std::string nowPhrase(const RankNow& n) {
  const std::string where = n.where ? describeCallSite(*n.where) : "";
  std::string out = "; rank " + std::to_string(n.rank) + " is now " +
                    (where.empty() ? "at an unknown place" : "in " + where) + " (" + n.thread + ")";
  if (n.since_last_call_ns >= 0) {
    out += ", " + spacedSeconds(static_cast<double>(n.since_last_call_ns) / 1e9) +
           " after its last NCCL call";
  }
  return out;
}

}  // namespace ncclrec::analyzer
