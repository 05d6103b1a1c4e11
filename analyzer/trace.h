// --trace FILE: the recordings as a Chrome/Perfetto trace (JSON "traceEvents"), one process track
// per rank and one thread track per communicator, each NCCL call a slice; the verdict's op is
// colored and marked with an instant event. Opens in ui.perfetto.dev and chrome://tracing.
#pragma once

#include <ostream>

#include "analyzer/verdict.h"
#include "recorder/format/reader.h"

namespace ncclrec::analyzer {

void writeTrace(const format::LoadedSet& set, const Verdict& verdict, std::ostream& out);

}  // namespace ncclrec::analyzer
