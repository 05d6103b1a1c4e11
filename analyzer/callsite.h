// Where an NCCL call was issued, taken from an event's interned stack: the frame the call-site
// rule picks (site_rule.h: user code over library layers and plumbing), which is how calls are
// told apart when aligning ranks.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyzer/site_rule.h"
#include "format/model.h"

namespace ncclrec::analyzer {

// The fields name frames[frame], the call-site frame.
struct CallSite {
  std::string function;  // demangled, full (Python: qualified name); "" when not symbolized
  std::string file;      // "" when unknown
  int line = 0;
  std::string module;  // base name of the ELF object; "" for a Python frame
  uint64_t module_offset = 0;
  bool python = false;
  int frame = -1;                     // index into frames; -1 when unknown
  std::vector<format::Frame> frames;  // the whole stack: Python frames, then native ones
  bool known() const { return !frames.empty(); }
  friend bool operator==(const CallSite&, const CallSite&) = default;
};

// The call site of `event` by `rule` (empty when it has no stack). Names are the stack's own.
CallSite callSiteOf(const format::RankData& rank, const format::EventRecord& event,
                    const SiteRule& rule);

// Identity used to compare call sites across processes: for a Python frame its file's base name,
// qualified name and line; for a native one module+offset (the same binary loads at different
// addresses, never at different offsets), else function file:line.
std::string callSiteKey(const CallSite& site);

// Symbolized frames of every dump by "module-basename+offset": a rank read from its black box
// (addresses only) borrows the names another rank's dump resolved for the same binary. Frames no
// dump resolved are read from the module files when they are still here (offline_symbols.h) and
// `read_modules` is set.
using SymbolTable = FrameNames;
SymbolTable collectSymbols(const std::vector<format::RankData>& ranks, bool read_modules = true);
void borrowSymbols(CallSite& site, const SymbolTable& symbols);

// What the call sites of one analysis need, built once from every loaded rank: the call-site rule
// with the plumbing it learnt from all their stacks, and the names black boxes borrow.
class CallSites {
 public:
  // No ranks: library layers only, nothing is plumbing, no names to borrow.
  CallSites() = default;
  // `library_frames`: patterns added to the default library layers (--library-frames).
  // `read_modules`: name what no dump named from the module files (collectSymbols()); the rule
  // tells callers apart by function, so names can move a call site.
  explicit CallSites(const std::vector<format::RankData>& ranks,
                     const std::vector<std::string>& library_frames = {}, bool read_modules = true);
  const SiteRule& rule() const { return rule_; }
  const SymbolTable& symbols() const { return symbols_; }

 private:
  SiteRule rule_;
  SymbolTable symbols_;
};

// The call site of `event`, with names borrowed from other ranks' dumps where its own stack has
// none.
CallSite callSiteOf(const format::RankData& rank, const format::EventRecord& event,
                    const CallSites& sites);

// "saveCheckpoint(ncclComm*, int)" -> "saveCheckpoint"; strips the parameter list,
// "(anonymous namespace)::", and clone suffixes such as " [clone .isra.0]". For headlines; the
// stacks section keeps the full name.
std::string shortFunctionName(const std::string& function);

// The function as headlines name it: shortFunctionName() of a native one; the last component of a
// Python qualified name ("Trainer.save_checkpoint" -> "save_checkpoint").
std::string siteFunctionName(const CallSite& site);

// "saveCheckpoint() main.cc:33", "save_checkpoint() train.py:31", "<module> train.py:40",
// "libtrain.so+0x1234", or "unknown call site".
std::string describeCallSite(const CallSite& site);

// Whether a rank's events come from call site `site` (as describeCallSite() writes it), answered
// once per stack id: a rank's thousands of calls share few stacks. Ask it of one rank's events
// only.
class SameSite {
 public:
  SameSite(std::string site, const CallSites& sites) : site_(std::move(site)), sites_(&sites) {}
  bool operator()(const format::RankData& rank, const format::EventRecord& event) const {
    const auto [it, added] = by_stack_.try_emplace(event.stackId(), false);
    if (added) it->second = describeCallSite(callSiteOf(rank, event, *sites_)) == site_;
    return it->second;
  }
  const std::string& site() const { return site_; }

 private:
  std::string site_;
  const CallSites* sites_;
  mutable std::unordered_map<uint32_t, bool> by_stack_;
};

}  // namespace ncclrec::analyzer
