// The group_peer_skip rule: a peer left out of a grouped exchange of sends and receives.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// A pending send or receive of a ncclGroupStart/End exchange whose peer's group at the same
// position (the n-th group with point-to-point ops on that communicator, on both ranks) posted
// sends and receives to other ranks but none with this one: the peer skipped it (p2p_mismatch,
// culprit the peer).
std::optional<Verdict> findGroupPeerSkip(const Engine& en);

}  // namespace ncclrec::analyzer::engine
