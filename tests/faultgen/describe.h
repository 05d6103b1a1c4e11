// --describe: a generated program and its fault as one JSON document, with what the analyzer is
// expected to say about it (class, culprit ranks, call site).
#pragma once

#include <nlohmann/json.hpp>

#include "tests/faultgen/program.h"

namespace ncclrec::faultgen {

// The expected verdict class of a fault kind (docs/accuracy.md explains each choice).
const char* expectedClass(FaultKind k);

nlohmann::json describe(const Program& p);

}  // namespace ncclrec::faultgen
