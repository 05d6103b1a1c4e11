// The p2p_mismatch rule: point-to-point sends and receives matched by peer and per-peer sequence
// number (not by slot).
#pragma once

#include <optional>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// A pending ncclSend/ncclRecv whose peer posted no counterpart with the same per-peer sequence
// number, or one with another count or datatype. Peers with no data are not judged.
std::optional<Verdict> findP2pMismatch(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
