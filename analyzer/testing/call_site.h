// A known call site for the tests that word a headline: function, file and line, one frame.
#pragma once

#include <string>

#include "analyzer/callsite.h"

namespace ncclrec::analyzer::testing {

inline CallSite knownSite(const std::string& function, const std::string& file, int line) {
  CallSite s;
  s.function = function;
  s.file = file;
  s.line = line;
  s.frames.resize(1);  // known
  return s;
}

}  // namespace ncclrec::analyzer::testing
