// The p2p_mismatch rule: point-to-point sends and receives matched by peer and per-peer sequence
// number (not by slot).
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

// A pending ncclSend/ncclRecv whose peer posted no counterpart with the same per-peer sequence
// number, or one with another count or datatype. Peers with no data are not judged. Who holds a
// peer's rank and whom a peer's collective waits for come from the wait-for graph
// (Engine::waits()).
std::optional<Verdict> findP2pMismatch(const Engine& en);

}  // namespace ncclrec::analyzer::engine
