#pragma once
// One stack, printed or written the same way wherever a verdict shows one: the stacks of the
// differing call sites (report.cc) and where a stopped rank's threads are now (whereabouts.cc).

#include <nlohmann/json_fwd.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "format/model.h"

namespace ncclrec::analyzer {

// "/usr/lib/libfoo.so" -> "libfoo.so".
std::string moduleBaseName(const std::string& path);

// "libfoo.so+0x1a2b": a native frame's module (its base name, "?" when unknown) and offset.
std::string moduleAndOffset(const format::Frame& f);

// One line per frame, innermost first, each after `indent`: "#i  function  file:line  [module+
// 0xoff]", or, for a Python frame, as a traceback reads: "#i  file:line  function  [py]". '>'
// marks frame `marked` (the call site) when it is not the innermost one.
void printFrames(const std::vector<format::Frame>& frames, int marked, const char* indent,
                 std::ostream& out);

// The frames as a JSON array of {function, file, line, module, module_offset, python}.
nlohmann::ordered_json framesJson(const std::vector<format::Frame>& frames);

}  // namespace ncclrec::analyzer
