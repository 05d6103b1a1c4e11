// --trace FILE: the recordings as a Chrome/Perfetto trace (JSON "traceEvents"), one process track
// per rank and one thread track per communicator, each NCCL call a slice; the verdict's op is
// colored and marked with an instant event. Opens in ui.perfetto.dev and chrome://tracing.
#pragma once

#include <ostream>

#include "analyzer/site_rule.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// Call sites by `rule`, which has learnt from every rank of `set` (site_rule.h).
void writeTrace(const format::LoadedSet& set, const Verdict& verdict, const SiteRule& rule,
                std::ostream& out);

}  // namespace ncclrec::analyzer
