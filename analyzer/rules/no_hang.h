// The no_hang rule: nothing pending, every recorded collective completed; the ranks with no data
// are named as missing.
#pragma once

#include <optional>

#include "analyzer/engine.h"
#include "analyzer/verdict.h"

namespace ncclrec::analyzer::engine {

std::optional<Verdict> findNoHang(const Engine& en);

}  // namespace ncclrec::analyzer::engine
