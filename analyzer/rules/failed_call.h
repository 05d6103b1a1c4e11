// The failed_call rule, when no stream shows a divergence or a stop: the job's first call that
// returned an error to a rank that talks to peers. The rank that left on its own, when a peer's
// departure failed the call (Engine::leaverExplains), else nccl_error naming the failing rank.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findFailedCall(const Engine& en);

}  // namespace ncclrec::analyzer::engine
