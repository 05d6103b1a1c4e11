// Frames for tests that build stacks by hand (analyzer, tui). Test-only.
#pragma once

#include "format/model.h"

namespace ncclrec::format::testing {

// A Python frame as the readers make it (model.h): qualified name, file, line; no address.
inline Frame pythonFrame(const char* file, const char* qualname, int line) {
  Frame f;
  f.function = qualname;
  f.file = file;
  f.line = line;
  f.python = true;
  return f;
}

}  // namespace ncclrec::format::testing
