// The version every binary and the shim report: project(VERSION) of CMakeLists.txt and the git
// commit the build was made from (cmake/version_gen.cmake writes the definitions at build time).
#pragma once

namespace ncclrec::format {

// "0.1.0 (git 1951f0c1a2b3)"; "-dirty" after the commit when tracked files had changed, "unknown"
// in place of the commit when the source was not a git checkout.
const char* versionString();
const char* versionNumber();  // "0.1.0"
const char* gitCommit();      // "1951f0c1a2b3", "1951f0c1a2b3-dirty" or "unknown"

}  // namespace ncclrec::format
