#include "analyzer/callsite.h"

#include <cstdio>

#include "analyzer/offline_symbols.h"
#include "format/bbox_layout.h"

namespace ncclrec::analyzer {
namespace {

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void eraseAll(std::string& s, std::string_view what) {
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at)) {
    s.erase(at, what.size());
  }
}

bool stripSuffix(std::string& s, std::string_view suffix) {
  if (!s.ends_with(suffix)) return false;
  s.erase(s.size() - suffix.size());
  return true;
}

void nameFromFrame(CallSite& site) {
  const format::Frame& f = site.frames[static_cast<size_t>(site.frame)];
  site.function = f.function;
  site.file = f.file;
  site.line = f.line;
  site.module = baseName(f.module);
  site.module_offset = f.module_offset;
  site.python = f.python;
}

}  // namespace

CallSite callSiteOf(const format::RankData& rank, const format::EventRecord& event,
                    const SiteRule& rule) {
  CallSite site;
  if (event.stackId() == format::kNoStack) return site;
  const auto it = rank.stacks.find(event.stackId());
  if (it == rank.stacks.end() || it->second.frames.empty()) return site;
  site.frames = it->second.frames;
  site.frame = rule.siteFrame(site.frames);
  nameFromFrame(site);
  return site;
}

std::string callSiteKey(const CallSite& site) {
  if (!site.known()) return "";
  if (site.python) {
    return "py:" + baseName(site.file) + "|" + site.function + "|" + std::to_string(site.line);
  }
  // module+offset is known in black boxes and dumps alike, so a rank read from its black box
  // compares equal to one read from a symbolized dump.
  if (!site.module.empty()) return site.module + "+" + std::to_string(site.module_offset);
  return site.function + "|" + site.file + ":" + std::to_string(site.line);
}

void borrowSymbols(CallSite& site, const SymbolTable& symbols) {
  for (format::Frame& f : site.frames) {
    if (!f.function.empty() || f.module.empty()) continue;
    const auto it = symbols.find(baseName(f.module) + "+" + std::to_string(f.module_offset));
    if (it == symbols.end()) continue;
    f.function = it->second.function;
    f.file = it->second.file;
    f.line = it->second.line;
  }
  if (site.known() && site.frame >= 0 && site.function.empty()) nameFromFrame(site);
}

CallSites::CallSites(const std::vector<format::RankData>& ranks,
                     const std::vector<std::string>& library_frames, bool read_modules)
    : rule_(library_frames) {
  symbols_ = collectSymbols(ranks, read_modules);
  rule_.learn(ranks, &symbols_);
}

CallSite callSiteOf(const format::RankData& rank, const format::EventRecord& event,
                    const CallSites& sites) {
  CallSite site = callSiteOf(rank, event, sites.rule());
  if (site.known() && site.function.empty()) borrowSymbols(site, sites.symbols());
  return site;
}

SymbolTable collectSymbols(const std::vector<format::RankData>& ranks, bool read_modules) {
  SymbolTable symbols;
  for (const format::RankData& r : ranks) {
    for (const auto& [id, stack] : r.stacks) {
      for (const format::Frame& f : stack.frames) {
        if (f.function.empty() || f.module.empty()) continue;
        symbols.emplace(baseName(f.module) + "+" + std::to_string(f.module_offset), f);
      }
    }
  }
  if (read_modules) addOfflineSymbols(ranks, symbols);
  return symbols;
}

std::string shortFunctionName(const std::string& function) {
  std::string s = function;
  // Clone suffixes may stack: "f(int) [clone .isra.0] [clone .cold]".
  for (size_t at = s.find(" [clone "); at != std::string::npos; at = s.find(" [clone ")) {
    const size_t close = s.find(']', at);
    s.erase(at, close == std::string::npos ? std::string::npos : close - at + 1);
  }
  eraseAll(s, "(anonymous namespace)::");
  bool stripped = true;
  while (stripped) {
    stripped = false;
    for (std::string_view q : {" const", " volatile", " &&", " &", " noexcept"}) {
      stripped = stripped || stripSuffix(s, q);
    }
  }
  if (!s.ends_with(')')) return s;
  // The parameter list is the balanced (...) at the end; "operator()(int)" keeps "operator()".
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')') ++depth;
    if (s[i] == '(' && --depth == 0) {
      if (i == 0) return s;
      return s.substr(0, i);
    }
  }
  return s;
}

std::string siteFunctionName(const CallSite& site) {
  if (!site.python) return shortFunctionName(site.function);
  const size_t dot = site.function.rfind('.');
  return dot == std::string::npos ? site.function : site.function.substr(dot + 1);
}

std::string describeCallSite(const CallSite& site) {
  if (!site.known()) return "unknown call site";
  if (!site.function.empty()) {
    std::string s = siteFunctionName(site);
    // "<module>", "<lambda>", "<listcomp>": Python's own names of code that is not a function.
    if (!(site.python && s.starts_with('<'))) s += "()";
    if (!site.file.empty()) {
      s += " " + baseName(site.file);
      if (site.line > 0) s += ":" + std::to_string(site.line);
    }
    return s;
  }
  char off[32];
  std::snprintf(off, sizeof(off), "+0x%llx", static_cast<unsigned long long>(site.module_offset));
  return (site.module.empty() ? std::string("?") : site.module) + off;
}

}  // namespace ncclrec::analyzer
