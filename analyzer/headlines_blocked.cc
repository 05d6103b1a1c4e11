#include "analyzer/headlines_blocked.h"

#include "analyzer/phrases.h"
#include "base/text.h"
#include "format/nccl_result.h"

namespace ncclrec::analyzer {
namespace {

using format::opName;

// "ranks 0-2 wait", "rank 1 waits".
std::string waitVerb(const std::vector<int>& ranks) {
  return ranksWord(ranks) + (ranks.size() == 1 ? " waits" : " wait");
}

// "ncclAllReduce #6".
std::string opSeq(format::OpType op, uint64_t seq) {
  return std::string(opName(op)) + " #" + std::to_string(seq);
}

}  // namespace

std::string ownErrorHeadline(const Verdict& v, const OwnError& e, const Waiters& w) {
  const char* why = e.result == format::kNcclInvalidArgument ? " (invalid argument)"
                    : e.result == format::kNcclInvalidUsage  ? " (invalid usage)"
                                                             : "";
  const char* then = e.then == OwnError::Then::kExited       ? ", then it exited"
                     : e.then == OwnError::Then::kDied       ? ", then it died"
                     : e.then == OwnError::Then::kNotRunning ? ", then it stopped running"
                                                             : ", and it issued nothing since";
  return ranksWord(v.ranks) + ": " + std::string(opName(v.op)) +
         (e.comm_id != 0 ? " on comm " + shortCommId(e.comm_id) : "") + " from " +
         describeCallSite(v.site) + " returned NCCL error " + std::to_string(e.result) + why +
         then + "; " + ranksWord(w.ranks) +
         (w.failed ? " failed in "
                   : (w.ranks.size() == 1 ? " waits" : " wait") + std::string(" for it in ")) +
         opSeq(w.op, w.seq);
}

std::string stillInsideHeadline(const Verdict& v, const std::vector<int>& inside,
                                const Waiters& w) {
  return waitVerb(inside) + " in " + opSeq(v.op, v.seq) + " on comm " + shortCommId(v.comm_id) +
         " from " + describeCallSite(v.site) + ", which " + ranksWord(w.ranks) +
         " got through: " + (w.ranks.size() == 1 ? "it waits" : "they wait") + " in " +
         opSeq(w.op, w.seq) + "; the ranks agree on every op before it";
}

std::string stillInsideMissing(const Verdict& v, const std::vector<int>& inside) {
  return ranksWord(inside) + (inside.size() == 1 ? " is" : " are") + " inside " +
         opSeq(v.op, v.seq) +
         ", not in host code, and its peers finished it: the transport or the device is stuck, "
         "not the program's order; NCCL's profiler plugin (NCCLREC_COMPLETION=profiler) would "
         "name the connection from its transport counters";
}

std::string thereWaitsForPhrase(const ThereWaitsFor& t) {
  if (t.how == ThereWaitsFor::How::kNone) return "";
  const std::string out = "; there it waits for " + ranksWord(t.ranks);
  switch (t.how) {
    case ThereWaitsFor::How::kExited:
      return out + ", which exited";
    case ThereWaitsFor::How::kCrashed:
      return out + ", which crashed (" + base::signalName(t.signal) + ")";
    case ThereWaitsFor::How::kDied:
      return out + ", which died without an exit mark";
    case ThereWaitsFor::How::kBlocked:
      return out + ", itself blocked in " + opSeq(t.blocked_in.op.op, t.blocked_in.op.seq) +
             " on comm " + shortCommId(t.blocked_in.comm_id);
    case ThereWaitsFor::How::kInHost:
      return out + ", in host code: " + lastOpPhrase(t.last);
    default:
      return out;
  }
}

std::string blockedElsewhereHeadline(const Verdict& v, const OpOn& blocked_in, const Waiters& w,
                                     const ThereWaitsFor& there) {
  const bool one = v.ranks.size() == 1;
  return ranksWord(v.ranks) + (one ? " is" : " are") + " blocked in " +
         opSeq(blocked_in.op.op, blocked_in.op.seq) + " on comm " +
         shortCommId(blocked_in.comm_id) + " from " + describeCallSite(v.site) + " while " +
         waitVerb(w.ranks) + (one ? " for it in " : " for them in ") + opSeq(w.op, w.seq) +
         " on comm " + shortCommId(v.comm_id) + thereWaitsForPhrase(there);
}

std::string stuckInHostHeadline(const Verdict& v, const LastOp& last, const Waiters& w) {
  return ranksWord(v.ranks) + (v.ranks.size() == 1 ? " is" : " are") +
         " alive but stuck in host code: " + lastOpPhrase(last) + "; " + waitVerb(w.ranks) +
         " in " + opSeq(w.op, w.seq);
}

std::string chainPhrase(const std::vector<ChainStep>& outermost_first, size_t culprit,
                        const std::vector<int>& waiters, const std::vector<int>& waited,
                        const OpOn& outer) {
  std::string text;
  for (auto it = outermost_first.rbegin(); it != outermost_first.rend(); ++it) {
    text += "; rank " + std::to_string(it->rank) + " waits for " +
            (it->waits_for == culprit ? "it" : "rank " + std::to_string(it->waits_for_rank)) +
            " in " + callAtPhrase(it->in);
  }
  return text + "; " + waitVerb(waiters) + " for " + ranksWord(waited) + " in " +
         callAtPhrase(outer);
}

std::string chainEndHeadline(const Verdict& v, const ChainEnd& end, const std::string& chain) {
  const std::string who = "rank " + std::to_string(v.ranks.at(0));
  std::string head;
  switch (end.how) {
    case ChainEnd::How::kExited:
      head = who + " exited: ";
      break;
    case ChainEnd::How::kNotRunning:
      head = who + " stopped running (" + notRunningPhrase(end.why) + "): ";
      break;
    case ChainEnd::How::kCrashed:
      head = who + " crashed (" + base::signalName(end.signal) + "): ";
      break;
    case ChainEnd::How::kDied:
      head = who + " died without an exit mark (killed, e.g. SIGKILL or out of memory): ";
      break;
    case ChainEnd::How::kInHost:
      head = who + " is alive but stuck in host code: ";
      break;
  }
  return head + lastOpPhrase(end.last) + chain;
}

}  // namespace ncclrec::analyzer
