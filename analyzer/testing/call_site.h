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

// A known call site in the headline tests' training program, /src/train.cc.
inline CallSite trainAt(const std::string& function, int line) {
  return knownSite(function, "/src/train.cc", line);
}

}  // namespace ncclrec::analyzer::testing
