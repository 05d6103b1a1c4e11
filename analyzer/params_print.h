// `ncclrec-analyze --print-params`: the table of NCCLREC_* knobs (format/params_table.h).
#pragma once

#include <ostream>

namespace ncclrec::analyzer {

// One row per knob: name, type (with its choices), default, description; or a JSON array of
// {name, type, default, choices, description}.
void printParams(bool json, std::ostream& out);

}  // namespace ncclrec::analyzer
