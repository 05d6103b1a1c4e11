// Internal to the analyzer (waits.cc, p2p_stop.cc): who is at fault for a send or receive that
// waits for a counterpart its peer never posted. Point-to-point ops pair by (communicator, pair,
// direction, per-peer seq); the pair's two sides posted different counts, and the side whose count
// falls short of what the other pairs of the communicator moved (a ring's or pipeline's other
// links) skipped one, while a side above them posted one too many (docs/analyzer.md, "p2p
// accounting per pair and per role").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "analyzer/wait_graph.h"
#include "format/reader.h"

namespace ncclrec::analyzer::p2p {

struct Located {
  const format::RankData* rank = nullptr;
  const format::EventRecord* event = nullptr;
};

// (comm, op, my comm rank, peer comm rank) -> the calls by per-peer seq.
using Posted =
    std::map<std::tuple<uint64_t, format::OpType, int, int>, std::map<uint64_t, Located>>;
// Whether the rank ended communicator `comm` (ncclCommDestroy or ncclCommFinalize): it finished
// its work there.
bool finishedComm(const format::RankData& r, uint64_t comm);

// Whether the rank left NCCL before posting what a peer waits for on `comm`: it has no op
// pending, did not end the communicator, did not abort any, and its own last op did not fail
// because another peer vanished (then it is a victim of that one). A rank stopped in host code,
// killed or exited early: a truncation, not a mismatch.
bool stoppedIn(const format::RankData& r, uint64_t comm);

// Whether the rank aborted a communicator (ncclCommAbort): a verdict of its own (comm_aborted).
bool aborted(const format::RankData& r);

// Whether process `r` (an index into set.ranks), when blocked in collectives, waits in one of them
// for process `waiter` (WaitGraph::owes: a member of that communicator that has not issued it),
// or is not blocked in one at all. False when it waits for others only: then it is held up by
// something else (a mismatch, another rank), and its missing send or receive is a symptom, not a
// skip (findP2pMismatch leaves that wait to the alignment).
bool freeOrWaitsFor(const format::LoadedSet& set, const WaitGraph& g, size_t r, size_t waiter);

// Whether the collective process `r` is blocked in (its newest pending one) waits only for
// processes that are themselves blocked in a send or receive on `comm` (`waits_in_p2p(their comm
// rank)`): it is held up by that communicator's chain of waits, which `r` may have started by not
// posting its part (a pipeline head that skipped a send and went on to a collective with the
// stages it starved).
bool heldByChainOn(const format::LoadedSet& set, const WaitGraph& g, size_t r, uint64_t comm,
                   const std::function<bool(int)>& waits_in_p2p);

// Where a rank blocked in a send or receive on another communicator stands, by its own history,
// towards the ops (`owed`) a waiting peer needs from it. Its history is cut at each earlier call
// like the one it is blocked in (same communicator, op, peer and call site) into stretches, each
// counted for `owed` ops; a loop repeats those counts with some period. kBehind: the stretch that
// ends at its blocked call holds as many as the same stretch one period before (the ops it owes
// come after the call it is blocked in: a symptom). kPast: fewer, with the period seen repeat at
// least once, or with one earlier stretch when `one_stretch_will_do` (a caller with other
// evidence): it closed the run short and went on, it left one out. kUnknown: no history, no
// period, or more than expected.
enum class Standing { kBehind, kPast, kUnknown };
Standing standing(const format::RankData& r, const format::EventRecord& blocked,
                  const std::function<bool(const format::EventRecord&)>& owed,
                  const CallSites& sites, bool one_stretch_will_do = false);

// A send and a receive paired by seq that move different sizes, from call sites that did not pair
// before: the side that closed a run short (`standing` kPast for the calls from the site that
// paired with the other side's site before) while the other side did not, and that site: it left
// a call out, and its next call paired with the other side's call from another role
// (P2pStandingTest.SendThatMetAnotherRolesReceiveNamesTheRankThatClosedItsRunShort).
struct ShortRun {
  Located culprit;
  CallSite site;  // where the left-out call comes from
};
std::optional<ShortRun> shortRunOf(const Posted& posted, const Located& a, const Located& b,
                                   const CallSites& sites);

// The first call of `calls` (before seq `before`) whose counterpart in `counterparts`, at the same
// seq, came from call site `site` (describeCallSite): the call that pairs with that site's calls,
// whose call site is the role that owes them.
std::optional<Located> pairedBefore(const std::map<uint64_t, Located>& calls,
                                    const std::map<uint64_t, Located>& counterparts,
                                    uint64_t before, const std::string& site,
                                    const CallSites& sites);

// The role a peer dropped: the site of its calls `theirs` that paired with the waiter's calls
// `mine` from the waiting call's site (`waiter_site`) before seq `before`, when that differs from
// `last`, the site of the peer's last such call. nullopt when they never paired, or it is the
// same site (the last call is of that role).
std::optional<CallSite> roleSite(const std::map<uint64_t, Located>& theirs,
                                 const std::map<uint64_t, Located>& mine, uint64_t before,
                                 const CallSite& waiter_site, const CallSite& last,
                                 const CallSites& sites);

// Whether the side of the pair from -> to on `comm` that posted fewer ops is the deviant one: its
// count is below what another pair of the communicator moved. Else (the communicator's only pair,
// or other pairs that may play another role) the pair's history decides: at the first step (the
// collectives of the communicators both ranks hold, issued before) where the two sides differ,
// the side whose count changed from the step before. False when nothing says the shorter side
// deviated: the longer side posted an extra op.
bool shortSideDeviates(const Posted& posted, uint64_t comm, int from, int to);

// The verdict for wait `w` (a send or receive with no counterpart) blaming the peer that did not
// post the counterpart; its call site is the peer's last call of that kind to `w`'s rank.
Verdict missingCounterpart(const Posted& posted, const WaitGraph& g, const Located& w,
                           const CallSites& sites);

}  // namespace ncclrec::analyzer::p2p
