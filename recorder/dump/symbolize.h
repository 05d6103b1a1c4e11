// Dump-time symbolization of return addresses in the recorded process itself: module and offset
// and function name from the dynamic loader (dladdr), file:line (and names of functions the
// dynamic symbol table lacks) from DWARF through libdw when it was available at build time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "format/model.h"

namespace ncclrec::dump {

// Not thread-safe: one Symbolizer per dump, used by one thread. Off the record path: allocates,
// opens files, and may take the loader's lock. Not for signal handlers.
class Symbolizer {
 public:
  // use_debug_info: also read DWARF (file:line, static function names). Ignored without libdw.
  explicit Symbolizer(bool use_debug_info);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // `address` is a return address as captureStack records it: the lookup uses address - 1 so
  // that the call instruction's function and line are reported, not the next statement's.
  // Fields that cannot be found are left empty/0; `address` is always set. Results are cached.
  format::Frame symbolize(uint64_t address);

 private:
  struct DebugInfo;  // libdw session, opened on first use

  format::Frame lookUp(uint64_t address);

  bool use_debug_info_;
  std::unique_ptr<DebugInfo> debug_info_;
  std::string exe_path_;  // the main program's path, looked up on first need
  std::unordered_map<uint64_t, format::Frame> cache_;
};

}  // namespace ncclrec::dump
