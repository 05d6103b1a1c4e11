#include "analyzer/headlines.h"

#include "analyzer/phrases.h"
#include "analyzer/rank_ops.h"
#include "base/text.h"

namespace ncclrec::analyzer {
namespace {

using format::opName;

// "ncclAllReduce #7 on comm c0ffee00 from saveCheckpoint() train.cc:33": the verdict's own op.
std::string verdictOp(const Verdict& v) {
  EvidenceOp o;
  o.op = v.op;
  o.seq = v.seq;
  o.site = v.site;
  return callAtPhrase({o, v.comm_id});
}

// "ncclBroadcast from f() a.cc:3".
std::string opFrom(const EvidenceOp& o) {
  return std::string(opName(o.op)) + " from " + describeCallSite(o.site);
}

// "ncclBroadcast #3 on comm beef0000 from f() a.cc:3": an op the verdict does not name.
std::string otherOp(const Instead& i) { return callAtPhrase({i.op, i.comm_id}); }

// "waits in <waited> for ranks 1,2, which wait for it on comm beef0000": where a culprit of a wait
// cycle is, `waited` its own op, `missed_comm` the communicator of the op it did not issue.
std::string waitsIn(const std::string& waited, const Instead& i, uint64_t missed_comm) {
  std::string out = "waits in " + waited + " for " + ranksWord(i.waits_for);
  if (i.they_wait_for_it) {
    out += std::string(i.waits_for.size() == 1 ? ", which waits" : ", which wait") +
           " for it on comm " + shortCommId(missed_comm);
  }
  return out;
}

std::string aloneTail(const Verdict& v, const Instead& i) {
  const std::string others = ranksWord(i.others);
  switch (i.kind) {
    case Instead::Kind::kOthersIssued:
      return "; " + others + " issued " + opFrom(i.op) + " as their #" + std::to_string(i.op.seq);
    case Instead::Kind::kOthersWentNoFurther:
      return "; " + others + " issued no collective there after #" + std::to_string(v.seq - 1) +
             " and went no further on it";
    case Instead::Kind::kOthersNeverUsedIt:
      return "; " + others + " never issued a collective on it (one destroyed it when done)";
    case Instead::Kind::kBeforeTheirs:
      return " before " + otherOp(i) + " that " + others + " issued; there it " +
             waitsIn(verdictOp(v), i, i.comm_id);
    default:
      return "; " + others + " issued no collective there";
  }
}

std::string skippedTail(const Verdict& v, const Instead& i) {
  const std::string who = v.ranks.size() == 1 ? "it" : "they";
  if (i.kind == Instead::Kind::kOrPutOff) return who + " " + waitsIn(otherOp(i), i, v.comm_id);
  if (i.kind == Instead::Kind::kCulpritWentOnToP2p) {
    return who + " went on to " + std::string(opName(i.op.op)) + " #" + std::to_string(i.op.seq) +
           " with rank " + std::to_string(i.peer) + " from " + describeCallSite(i.op.site) +
           ", which its peers reach only after it";
  }
  return who + " issued " + opFrom(i.op) + " instead";
}

// "rank 3 passes count 64, ranks 0-2 pass 4096 (float32)": the argument that differs.
std::string difference(const Verdict& v, const EvidenceOp& a, const Instead& i) {
  const EvidenceOp& b = i.op;
  const std::string dev_who = ranksWord(v.ranks) + (v.ranks.size() == 1 ? " passes " : " pass ");
  const std::string norm_who = ranksWord(i.others) + " ";
  switch (v.cls) {
    case VerdictClass::kOpMismatch:
      return ranksWord(v.ranks) + " issued " + std::string(opName(a.op)) + ", " + norm_who +
             "issued " + std::string(opName(b.op));
    case VerdictClass::kSizeMismatch:
      return dev_who + "count " + std::to_string(a.count) + ", " + norm_who + "pass " +
             std::to_string(b.count) + " (" + std::string(format::dataTypeName(b.dtype)) + ")";
    case VerdictClass::kDtypeMismatch:
      return dev_who + std::string(format::dataTypeName(a.dtype)) + ", " + norm_who + "pass " +
             std::string(format::dataTypeName(b.dtype));
    case VerdictClass::kRedopMismatch:
      return dev_who + "redop " + std::string(format::redOpName(a.redop)) + ", " + norm_who +
             "pass " + std::string(format::redOpName(b.redop));
    default:
      return dev_who + "root " + std::to_string(a.root) + ", " + norm_who + "pass root " +
             std::to_string(b.root);
  }
}

// "64 float32".
std::string countOf(const EvidenceOp& o) {
  return std::to_string(o.count) + " " + std::string(format::dataTypeName(o.dtype));
}

// "ncclAllReduce #7 from f() a.py:3" for a collective or a send or receive; "ncclCommSplit on
// comm c0ffee00 from f() a.py:3" for a call without a number.
std::string opAt(const OpOn& o) {
  const bool numbered = format::isCollective(o.op.op) || format::isP2p(o.op.op);
  return std::string(opName(o.op.op)) +
         (numbered ? " #" + std::to_string(o.op.seq) : " on comm " + shortCommId(o.comm_id)) +
         " from " + describeCallSite(o.op.site);
}

// How the others stand in the op they issued past a communicator's end.
std::string standing(const EvidenceOp& o) {
  if (o.state == format::EventState::kFailed) {
    return "failed in it (NCCL error " + std::to_string(o.result) + ")";
  }
  return isIncomplete(o.state) ? "wait in it" : "completed it without that rank";
}

// "rank 1's ncclRecv #4 from rank 2 on comm c0ffee00 from f() a.cc:3": the verdict's waiting op.
std::string waitOf(const Verdict& v, int peer) {
  return "rank " + std::to_string(v.ranks.at(0)) + "'s " + std::string(opName(v.op)) + " #" +
         std::to_string(v.seq) + (v.op == format::OpType::kSend ? " to" : " from") + " rank " +
         std::to_string(peer) + " on comm " + shortCommId(v.comm_id) + " from " +
         describeCallSite(v.site);
}

// " (the last, #3, from f() a.cc:3)", or nothing when there was none.
std::string lastOf(const P2pTally& t) {
  if (t.n == 0) return "";
  return " (the last, #" + std::to_string(t.last_seq) + ", from " + describeCallSite(t.last_site) +
         ")";
}

// " (those for g() b.cc:9 from f() a.cc:3)": the calls from `site` that pair with `paired_with`'s.
std::string byRolePhrase(const CallSite& paired_with, const CallSite& site) {
  return " (those for " + describeCallSite(paired_with) + " from " + describeCallSite(site) + ")";
}

}  // namespace

std::string callAtPhrase(const OpOn& c) {
  return std::string(opName(c.op.op)) + " #" + std::to_string(c.op.seq) + " on comm " +
         shortCommId(c.comm_id) + " from " + describeCallSite(c.op.site);
}

std::string aloneHeadline(const Verdict& v, const std::vector<int>& all, const Instead& instead) {
  const std::string condition = all.empty() ? "" : " (" + subsetCondition(v.ranks, all) + ")";
  return ranksWord(v.ranks) + " alone" + condition + " issued " + verdictOp(v) +
         aloneTail(v, instead);
}

std::string skippedHeadline(const Verdict& v, const Instead& instead) {
  return ranksWord(v.ranks) + " skipped " + verdictOp(v) + " that " + ranksWord(instead.others) +
         (instead.kind == Instead::Kind::kOrPutOff ? " issued, or put it off: " : " issued; ") +
         skippedTail(v, instead);
}

std::string mismatchHeadline(const Verdict& v, const EvidenceOp& mine, const Instead& instead,
                             bool same_site) {
  return std::string(opName(instead.op.op)) + " #" + std::to_string(v.seq) + " on comm " +
         shortCommId(v.comm_id) + ": " + difference(v, mine, instead) + " (" +
         describeCallSite(mine.site) +
         (same_site ? "" : " vs " + describeCallSite(instead.op.site)) + ")";
}

std::string stopHeadline(const Verdict& v, const Stop& stop) {
  const std::string who = ranksWord(v.ranks);
  const std::string what =
      opNoun(v.op) + "s from " +
      (stop.waited_site.function.empty() ? describeCallSite(stop.waited_site)
                                         : siteFunctionName(stop.waited_site) + "()");
  const std::string after = std::to_string(stop.same) + " " + what;
  const std::string others_at =
      stop.others_failed ? ranksWord(stop.others) + " failed in their " + ordinal(stop.same + 1) +
                               " (NCCL error " + std::to_string(stop.result) + ")"
                         : ranksWord(stop.others) + (stop.others.size() == 1 ? " is" : " are") +
                               " in their " + ordinal(stop.same + 1);
  switch (stop.how) {
    case Stop::How::kCrashed:
      return who + " crashed (" + base::signalName(stop.signal) + ") after " + after + "; " +
             others_at;
    case Stop::How::kDiedUnseen:
      return who +
             " died without an exit mark (the connection to it broke: killed, e.g. SIGKILL or out "
             "of memory) after " +
             after + "; " + others_at;
    case Stop::How::kDiedSilent:
      return who + " died without an exit mark (heartbeat stopped " + seconds(stop.silent_ns) +
             " before the newest recording: killed, e.g. SIGKILL or out of memory) after " + after +
             "; " + others_at;
    case Stop::How::kNotRunning:
      return who + " stopped running between ops, after " + after + ": " +
             notRunningPhrase(stop.why) + "; " + others_at;
    default:
      return who + " exited after " + after + "; " + others_at;
  }
}

std::string p2pUnmatchedHeadline(const Verdict& v, int peer, const P2pTally& theirs) {
  const format::OpType other = counterpartOf(v.op);
  return waitOf(v, peer) + " has no matching " + std::string(opName(other)) + ": rank " +
         std::to_string(peer) + " posted " + std::to_string(theirs.n) + " " +
         std::string(opName(other)) + (other == format::OpType::kSend ? "s to" : "s from") +
         " rank " + std::to_string(v.ranks.at(0)) + lastOf(theirs);
}

std::string p2pCountHeadline(const Verdict& v, int peer, const EvidenceOp& mine,
                             const EvidenceOp& theirs) {
  return waitOf(v, peer) + " moves " + countOf(mine) + "; rank " + std::to_string(peer) +
         "'s matching " + std::string(opName(counterpartOf(v.op))) + " from " +
         describeCallSite(theirs.site) + " moves " + countOf(theirs);
}

std::string p2pShortRunHeadline(const Verdict& v, const OpOn& next, const OpOn& met) {
  return "rank " + std::to_string(v.ranks.at(0)) + " posted one " + std::string(opName(v.op)) +
         " fewer from " + describeCallSite(v.site) + " than its loop does, so its next, " +
         callAtPhrase(next) + " (" + countOf(next.op) + "), met " + callAtPhrase(met) + " (" +
         countOf(met.op) + ")";
}

std::string p2pRelayHeadline(const Verdict& v, uint64_t received, const std::vector<int>& sources,
                             int waiter, const P2pTally& sent,
                             const std::optional<CallSite>& paired_with) {
  return "rank " + std::to_string(v.ranks.at(0)) + " completed " + std::to_string(received) +
         " ncclRecvs from " + ranksWord(sources) + " but posted " + std::to_string(sent.n) +
         " ncclSends to rank " + std::to_string(waiter) + " on comm " + shortCommId(v.comm_id) +
         (paired_with ? byRolePhrase(*paired_with, v.site) : lastOf(sent));
}

std::string p2pShortfallHeadline(const Verdict& v, const P2pShortfall& s) {
  const bool sends = v.op == format::OpType::kSend;
  const std::string last = s.by_role ? byRolePhrase(s.paired_with, v.site) : lastOf(s.posted);
  std::string out =
      "rank " + std::to_string(v.ranks.at(0)) + " posted " + std::to_string(s.posted.n) + " " +
      std::string(opName(v.op)) + "s" + (sends ? " to" : " from") + " rank " +
      std::to_string(s.waiter) + " on comm " + shortCommId(v.comm_id) + last + " but rank " +
      std::to_string(s.waiter) + " posted " + std::to_string(s.waited) + " " +
      std::string(opName(counterpartOf(v.op))) + "s" + (sends ? " from it" : " to it");
  if (s.others_moved) {
    out += " (the other pairs of the communicator moved up to " + std::to_string(*s.others_moved) +
           ")";
  }
  return out;
}

std::string lastOpPhrase(const LastOp& last) {
  if (!last.any) return "its last NCCL op never came";
  return "its last NCCL op (" + std::string(opName(last.op.op)) + " #" +
         std::to_string(last.op.seq) + " from " + describeCallSite(last.op.site) + ")" +
         (last.completed ? " completed " + seconds(last.ago_ns) + " ago" : "");
}

std::string peerGoneHeadline(const Verdict& v, const Gone& gone, int waiter,
                             const CallSite& waited_site, bool failed, int result) {
  const std::string who = "rank " + std::to_string(v.ranks.at(0));
  const std::string waited = std::string(opName(v.op)) + " #" + std::to_string(v.seq) +
                             (v.op == format::OpType::kSend ? " to " : " from ") + who +
                             " on comm " + shortCommId(v.comm_id) + " from " +
                             describeCallSite(waited_site);
  const std::string then =
      "; rank " + std::to_string(waiter) +
      (failed ? " failed in its " + waited + " (NCCL error " + std::to_string(result) + ")"
              : " waits in its " + waited);
  const std::string last = lastOpPhrase(gone.last);
  switch (gone.how) {
    case Gone::How::kExited:
      return who + " exited without ending the communicator: " + last + then;
    case Gone::How::kCrashed:
      return who + " crashed (" + base::signalName(gone.signal) + "): " + last + then;
    case Gone::How::kDied:
      return who + " died without an exit mark (killed, e.g. SIGKILL or out of memory): " + last +
             then;
    default:
      return who + " is alive but stuck in host code: " + last + then;
  }
}

std::string leftFirstHeadline(const Verdict& v, const Gone& gone, const std::vector<int>& victims,
                              int result) {
  const std::string how = gone.how == Gone::How::kExited ? " exited"
                          : gone.how == Gone::How::kCrashed
                              ? " crashed (" + base::signalName(gone.signal) + ")"
                              : " died without an exit mark";
  return ranksWord(v.ranks) + how + " with nothing pending: " + lastOpPhrase(gone.last) + "; " +
         ranksWord(victims) + " then failed (NCCL error " + std::to_string(result) +
         ": the peer was gone), " + std::string(opName(v.op)) +
         (v.seq != 0 ? " #" + std::to_string(v.seq) : "") + " on comm " + shortCommId(v.comm_id) +
         " first";
}

std::string commEndHeadline(const Verdict& v, const CommEnd& end) {
  std::string out = "rank " + std::to_string(v.ranks.at(0)) +
                    (v.op == format::OpType::kCommAbort ? " aborted" : " destroyed") + " comm " +
                    shortCommId(v.comm_id) + " (" + std::string(opName(v.op)) + " from " +
                    describeCallSite(v.site) + ")";
  out += end.last ? " after its " + opAt(*end.last) : " before any collective on it";
  if (end.went_on) {
    out += " and went on (" + std::string(opName(end.went_on->op.op)) + " on comm " +
           shortCommId(end.went_on->comm_id) + " from " + describeCallSite(end.went_on->op.site) +
           ")";
  }
  return out + "; " + ranksWord(end.others) + " issued " + opAt(end.theirs) + " on it and " +
         standing(end.theirs.op);
}

std::string partialSplitHeadline(const Verdict& v, const SplitTaken& s) {
  const std::string split =
      "ncclCommSplit of comm " + shortCommId(v.comm_id) + " from " + describeCallSite(v.site);
  const std::string instead = " issued " + opAt(s.instead) + " instead";
  if (v.cls == VerdictClass::kSkippedCollective) {
    return ranksWord(s.skippers) + " skipped " + split + " that " + ranksWord(s.callers) +
           " called" +
           (s.after_seq > 0 ? " after collective #" + std::to_string(s.after_seq) : std::string()) +
           "; " + (s.skippers.size() == 1 ? "it" : "they") + instead;
  }
  return ranksWord(s.callers) + (s.callers.size() == 1 ? " alone (" : " (") +
         subsetCondition(s.callers, s.all) + ") called " + split + "; " + ranksWord(s.skippers) +
         instead;
}

std::string groupLeftOutHeadline(const Verdict& v, const GroupLeftOut& g) {
  const std::string culprit = std::to_string(v.ranks.at(0));
  std::string waiting;  // "ncclRecv #3 from rank 1 and ncclSend #3 to rank 1"
  for (const EvidenceOp& o : g.waits) {
    waiting += std::string(waiting.empty() ? "" : " and ") + std::string(opName(o.op)) + " #" +
               std::to_string(o.seq) + (o.op == format::OpType::kSend ? " to" : " from") +
               " rank " + culprit;
  }
  return "rank " + culprit + " left rank " + std::to_string(g.left) +
         " out of its grouped sends and receives #" + std::to_string(g.group) + " on comm " +
         shortCommId(v.comm_id) + " from " + describeCallSite(v.site) + ": that group posts to " +
         ranksWord(g.posts_to) + " only, while rank " + std::to_string(g.left) + "'s group #" +
         std::to_string(g.group) + " waits in " + waiting;
}

std::string deadlockHeadline(const Verdict& v, const std::vector<CycleStep>& cycle) {
  std::string out = ranksWord(v.ranks) + " deadlock across communicators: ";
  for (size_t k = 0; k < cycle.size(); ++k) {
    out += k == 0 ? "rank " + std::to_string(cycle[k].rank) + " waits in "
                  : std::string(", which waits in ");
    out += callAtPhrase(cycle[k].waits_in) + " for rank " + std::to_string(cycle[k].waits_for);
  }
  return out;
}

std::optional<VerdictClass> mismatchOf(const EvidenceOp& mine, const EvidenceOp& theirs) {
  if (mine.op != theirs.op) return VerdictClass::kOpMismatch;
  if (mine.count != theirs.count) return VerdictClass::kSizeMismatch;
  if (mine.dtype != theirs.dtype) return VerdictClass::kDtypeMismatch;
  if (mine.redop != theirs.redop) return VerdictClass::kRedopMismatch;
  if (mine.root != theirs.root) return VerdictClass::kRootMismatch;
  return std::nullopt;
}

}  // namespace ncclrec::analyzer
