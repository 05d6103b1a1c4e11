// The all_wait_in_one_op rule, the last of the table: every present rank waits in the same op and
// agrees on every op before it (undecided): the transport or the device is stuck, or the ranks with
// no data hold the answer. Always a verdict.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findAllWaitInOneOp(const Engine& en);

}  // namespace ncclrec::analyzer::engine
