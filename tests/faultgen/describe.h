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
// communicator: the culprit blocks there, its next call in the skipped call's slot, and its stream
// records exactly what two collectives issued in swapped order (or a call of another shape)
// record, even where peers that only receive from a root went past the slot (they do after a
// swap too). The expectation is then the mismatch those records show, at either function
// (docs/accuracy.md, "Equivalent classes") — except for two collectives of one kind and another
// length from two functions, which the analyzer's history reads as the skip itself. Nothing for
// any other fault.
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
