// --describe: a generated program and its fault as one JSON document, with what the analyzer is
// expected to say about it (class, culprit ranks, call site).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/faultgen/program.h"

namespace ncclrec::faultgen {

// The expected verdict class of a fault kind (docs/accuracy.md explains each choice).
const char* expectedClass(FaultKind k);

// A skipped collective that the culprit follows at once with another lone collective on the same
// communicator, where every peer blocks at the slot (not a broadcast or reduce rooted at another
// rank): its stream records exactly what two collectives issued in swapped order (or a call of
// another shape) record, the next call in the skipped call's slot. The expectation is
// then the mismatch those records show, at either function (docs/accuracy.md, "Equivalent
// classes"). Nothing for any other fault.
struct SkipSeenAsMismatch {
  std::string cls;                 // op_mismatch, size_mismatch, ...
  std::vector<std::string> sites;  // the culprit's next call's function, the skipped call's
  std::string why;                 // one line, in the description's "because"
};
std::optional<SkipSeenAsMismatch> skipSeenAsMismatch(const Program& p);

// The program, its fault and the expected verdict ("class", "ranks", "callsites", and
// "because" when the class is not the fault kind's own).
nlohmann::json describe(const Program& p);

}  // namespace ncclrec::faultgen
