#include "tests/faultgen/describe.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ncclrec::faultgen {
namespace {

using nlohmann::json;

// A dry run of one rank: the call sites of the blocks it issues, in order, until it stops.
class DrySink : public Sink {
 public:
  void split(int, int) override {}
  void init(const Joining&, int) override {}
  void block(const Block& b) override {
    last_site = b.site;
    for (const Call& c : b.calls) {
      const bool p2p = c.op == Op::kSend || c.op == Op::kRecv;
      (p2p ? last_p2p_on_comm : last_coll_on_comm)[c.comm] = b.site;
    }
  }
  void abortComm(int, int) override {}
  void exitNow() override {}
  void crash() override {}
  void stall() override {}
  void finish() override {}

  int last_site = -1;
  std::map<int, int> last_coll_on_comm, last_p2p_on_comm;
};

// Every call one rank issues, in order, with its function.
struct Issued {
  Call call;
  int site = -1;
  bool grouped = false;
};

class CallSink : public Sink {
 public:
  void split(int, int) override {}
  void init(const Joining&, int) override {}
  void block(const Block& b) override {
    for (const Call& c : b.calls) calls.push_back({c, b.site, b.grouped});
  }
  void abortComm(int, int) override {}
  void exitNow() override {}
  void crash() override {}
  void stall() override {}
  void finish() override {}

  std::vector<Issued> calls;
};

std::vector<Issued> issuedBy(const Program& p, int rank) {
  CallSink sink;
  walk(p, rank, sink);
  return sink.calls;
}

bool sameCall(const Issued& a, const Issued& b) {
  const Call &x = a.call, &y = b.call;
  return x.op == y.op && x.comm == y.comm && x.count == y.count && x.dtype == y.dtype &&
         x.redop == y.redop && x.root == y.root && x.peer == y.peer && a.site == b.site &&
         a.grouped == b.grouped;
}

bool isP2pOp(Op op) { return op == Op::kSend || op == Op::kRecv; }

// The class of two collectives that meet at one slot: the first argument that differs.
const char* mismatchClass(const Call& culprit, const Call& others) {
  if (culprit.op != others.op) return "op_mismatch";
  if (culprit.count != others.count) return "size_mismatch";
  if (culprit.dtype != others.dtype) return "dtype_mismatch";
  if (culprit.redop != others.redop) return "redop_mismatch";
  if (culprit.root != others.root) return "root_mismatch";
  return nullptr;
}

json callJson(const Call& c) {
  json j = {
      {"op", opName(c.op)}, {"comm", c.comm}, {"count", c.count}, {"dtype", dtypeName(c.dtype)}};
  if (c.op == Op::kAllReduce || c.op == Op::kReduce || c.op == Op::kReduceScatter) {
    j["redop"] = redopName(c.redop);
  }
  if (c.op == Op::kBroadcast || c.op == Op::kReduce) j["root"] = c.root;
  if (c.op == Op::kSend || c.op == Op::kRecv) j["peer"] = c.peer > 0 ? "next" : "previous";
  return j;
}

json blockJson(const Block& b) {
  json calls = json::array();
  for (const Call& c : b.calls) calls.push_back(callJson(c));
  return {{"function", siteName(b.site)}, {"grouped", b.grouped}, {"calls", calls}};
}

const char* actionName(ActionKind k) {
  switch (k) {
    case ActionKind::kCollective:
      return "collective";
    case ActionKind::kGroupedCollectives:
      return "grouped_collectives";
    case ActionKind::kRing:
      return "ring";
    case ActionKind::kPipeline:
      return "pipeline";
  }
  return "?";
}

// The functions the verdict may name as its call site. For a rank that stops (exit, crash,
// stall, abort) the analyzer names the last op it issued on the communicator it looked at, which
// the generator cannot predict: the last function overall, then the last that issued a collective
// on each communicator, and the last that issued a send or receive on each; the abort's own
// function too.
std::vector<std::string> expectedSites(const Program& p) {
  const Fault& f = p.fault;
  switch (f.kind) {
    case FaultKind::kNone:
      return {};
    case FaultKind::kExit:
    case FaultKind::kCrash:
    case FaultKind::kStall:
    case FaultKind::kAbort:
      break;
    default:
      return {siteName(f.site)};
  }
  DrySink dry;
  walk(p, f.rank, dry);
  std::vector<std::string> out;
  if (dry.last_site >= 0) out.push_back(siteName(dry.last_site));
  for (const auto* last : {&dry.last_coll_on_comm, &dry.last_p2p_on_comm}) {
    for (const auto& [comm, site] : *last) {
      if (std::find(out.begin(), out.end(), siteName(site)) == out.end()) {
        out.push_back(siteName(site));
      }
    }
  }
  if (f.kind == FaultKind::kAbort) out.push_back(siteName(f.site));
  return out;
}

}  // namespace

std::optional<SkipSeenAsMismatch> skipSeenAsMismatch(const Program& p) {
  const Fault& f = p.fault;
  if (f.kind != FaultKind::kSkipped || f.comm < 0 || f.comm >= static_cast<int>(p.comms.size()))
    return std::nullopt;
  // The culprit's calls against what it issues without the fault.
  Program healthy = p;
  healthy.fault = Fault{};
  const std::vector<Issued> mine = issuedBy(p, f.rank), planned = issuedBy(healthy, f.rank);
  size_t i = 0;
  while (i < mine.size() && i < planned.size() && sameCall(mine[i], planned[i])) ++i;
  if (i >= mine.size() || i >= planned.size()) return std::nullopt;
  const Issued &next = mine[i], &skipped = planned[i];
  // Only the culprit's very next call, a lone collective on the skipped call's communicator,
  // takes the skipped call's slot there.
  if (next.call.comm != skipped.call.comm || isP2pOp(next.call.op) || next.grouped ||
      skipped.grouped || isP2pOp(skipped.call.op))
    return std::nullopt;
  // Two collectives of one kind and another length from two functions: the analyzer's history
  // says the culprit's call is the one that follows the skipped one (every fault comes after two
  // steps of history), and reads the slot as the skip (docs/analyzer.md, "deletion").
  if (next.call.op == skipped.call.op && next.call.count != skipped.call.count &&
      next.site != skipped.site) {
    return std::nullopt;
  }
  const char* cls = mismatchClass(next.call, skipped.call);
  if (cls == nullptr) return std::nullopt;
  SkipSeenAsMismatch out;
  out.cls = cls;
  out.sites = {siteName(next.site), siteName(skipped.site)};
  out.why = std::string("the culprit's next call, ") + opName(next.call.op) + " from " +
            siteName(next.site) + ", takes the skipped " + opName(skipped.call.op) +
            "'s place on the communicator: recorded as " + cls;
  return out;
}

const char* expectedClass(FaultKind k) {
  switch (k) {
    case FaultKind::kNone:
      return "no_hang";
    case FaultKind::kGated:
      return "rank_gated_collective";
    case FaultKind::kSkipped:
      return "skipped_collective";
    case FaultKind::kSize:
      return "size_mismatch";
    case FaultKind::kDtype:
      return "dtype_mismatch";
    case FaultKind::kRedop:
      return "redop_mismatch";
    case FaultKind::kRoot:
      return "root_mismatch";
    case FaultKind::kOp:
      return "op_mismatch";
    case FaultKind::kMissingSend:
    case FaultKind::kMissingRecv:
      return "p2p_mismatch";
    case FaultKind::kExit:
      return "rank_exited";
    case FaultKind::kCrash:
      return "rank_crashed";
    case FaultKind::kStall:
      return "rank_stuck_in_host";
    // A split some ranks skip is a collective on the parent that they skipped.
    case FaultKind::kSplitSubset:
      return "skipped_collective";
    // The rank aborts a communicator the others still use (then exits): comm_aborted names it.
    case FaultKind::kAbort:
      return "comm_aborted";
    // The creation faults: the member that never joined; the id of its own; the size or rank
    // that disagrees with its group's.
    case FaultKind::kInitSkip:
      return "comm_member_missing";
    case FaultKind::kInitTwoIds:
      return "comm_id_mismatch";
    case FaultKind::kInitNranks:
    case FaultKind::kInitDupRank:
      return "comm_init_mismatch";
  }
  return "?";
}

json describe(const Program& p) {
  json comms = json::array();
  for (size_t k = 0; k < p.comms.size(); ++k) {
    const Comm& c = p.comms[k];
    json j = {{"id", k}, {"groups", c.groups}};
    if (c.parent >= 0) {
      j["parent"] = c.parent;
      j["split"] =
          std::string(c.strided ? "strided" : "blocks") + " into " + std::to_string(c.ngroups);
      j["make"] = c.make == Make::kSplit  ? "ncclCommSplit"
                  : c.make == Make::kInit ? "ncclCommInitRank"
                                          : "ncclCommInitRank at its first use";
      if (c.make != Make::kLazy) j["function"] = siteName(c.site);
    }
    comms.push_back(j);
  }
  json body = json::array();
  for (const Action& a : p.body) {
    json j = {{"kind", actionName(a.kind)}, {"block", blockJson(a.block)}};
    if (a.kind == ActionKind::kPipeline) {
      j["send"] = blockJson(a.send);
      j["micro_batches"] = a.micro;
    }
    body.push_back(j);
  }
  const Fault& f = p.fault;
  json fault = {{"kind", faultName(f.kind)}};
  json expected = {
      {"class", expectedClass(f.kind)}, {"ranks", json::array()}, {"callsites", expectedSites(p)}};
  if (const auto seen = skipSeenAsMismatch(p)) {
    expected["class"] = seen->cls;
    expected["callsites"] = seen->sites;
    expected["because"] = seen->why;
  }
  if (f.kind != FaultKind::kNone) {
    fault.update({{"rank", f.rank},
                  {"step", f.step},
                  {"action", f.action},
                  {"call", f.call},
                  {"comm", f.comm},
                  {"function", siteName(f.site)},
                  {"detail", f.detail}});
    expected["ranks"] = {f.rank};
  }
  return {{"seed", p.seed}, {"world", p.world}, {"steps", p.steps},    {"comms", comms},
          {"body", body},   {"fault", fault},   {"expected", expected}};
}

}  // namespace ncclrec::faultgen
