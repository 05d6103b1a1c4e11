// The stuck_creating_comm rule: nothing pending but a communicator's creation (no collective of it
// started, so no stream shows the wait): undecided, naming the ranks that wait in the creation and
// the ranks with no data, which usually are the ones that never joined.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findStuckCreatingComm(const Engine& en);

}  // namespace ncclrec::analyzer::engine
