// Where an NCCL call was issued, taken from an event's interned stack: the innermost frame
// (the caller of the NCCL function), which is how calls are told apart when aligning ranks.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "recorder/format/model.h"

namespace ncclrec::analyzer {

struct CallSite {
  std::string function;  // demangled, full; "" when the stack was not symbolized
  std::string file;      // "" when unknown
  int line = 0;
  std::string module;  // base name of the ELF object
  uint64_t module_offset = 0;
  std::vector<format::Frame> frames;  // the whole stack, innermost first
  bool known() const { return !frames.empty(); }
  friend bool operator==(const CallSite&, const CallSite&) = default;
};

// The call site of `event` (empty when it has no stack).
CallSite callSiteOf(const format::RankData& rank, const format::EventRecord& event);

// Identity used to compare call sites across processes: module+offset (the same binary loads at
// different addresses, never at different offsets), else function file:line.
std::string callSiteKey(const CallSite& site);

// Symbolized frames of every dump by "module-basename+offset": a rank read from its black box
// (addresses only) borrows the names another rank's dump resolved for the same binary. Frames no
// dump resolved are read from the module files when they are still here (offline_symbols.h).
using SymbolTable = std::unordered_map<std::string, format::Frame>;
SymbolTable collectSymbols(const std::vector<format::RankData>& ranks);
void borrowSymbols(CallSite& site, const SymbolTable& symbols);
// callSiteOf, with names borrowed from `symbols` when the rank's own stack has none.
CallSite callSiteOf(const format::RankData& rank, const format::EventRecord& event,
                    const SymbolTable& symbols);

// "saveCheckpoint(ncclComm*, int)" -> "saveCheckpoint"; strips the parameter list,
// "(anonymous namespace)::", and clone suffixes such as " [clone .isra.0]". For headlines; the
// stacks section keeps the full name.
std::string shortFunctionName(const std::string& function);

// "saveCheckpoint() main.cc:33", "libtrain.so+0x1234", or "unknown call site".
std::string describeCallSite(const CallSite& site);

}  // namespace ncclrec::analyzer
