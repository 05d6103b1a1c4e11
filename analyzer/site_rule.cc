#include "analyzer/site_rule.h"

#include <functional>

namespace ncclrec::analyzer {
namespace {

std::string_view baseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0x100000001b3ull;
}

uint64_t hashOf(std::string_view s) { return std::hash<std::string_view>{}(s); }

}  // namespace

uint64_t frameKey(const format::Frame& f) {
  if (f.python) {
    return mix(mix(mix(1, hashOf(baseName(f.file))), hashOf(f.function)),
               static_cast<uint64_t>(f.line));
  }
  if (!f.module.empty()) return mix(mix(2, hashOf(baseName(f.module))), f.module_offset);
  if (!f.function.empty()) {
    return mix(mix(mix(3, hashOf(f.function)), hashOf(baseName(f.file))),
               static_cast<uint64_t>(f.line));
  }
  return mix(4, f.address);
}

SiteRule::SiteRule(const std::vector<std::string>& extra_library_frames)
    : patterns_(kDefaultLibraryFrames.begin(), kDefaultLibraryFrames.end()) {
  for (const std::string& p : extra_library_frames) {
    if (!p.empty()) patterns_.push_back(p);
  }
}

bool SiteRule::isLibraryFrame(const format::Frame& f) const {
  if (!f.python) return false;
  for (const std::string& p : patterns_) {
    if (f.file.find(p) != std::string::npos) return true;
  }
  return false;
}

void SiteRule::candidates(const std::vector<format::Frame>& frames,
                          std::vector<uint32_t>* out) const {
  out->clear();
  int first_python = -1;
  for (size_t i = 0; i < frames.size() && frames[i].python; ++i) {
    if (first_python < 0) first_python = static_cast<int>(i);
    if (!isLibraryFrame(frames[i])) out->push_back(static_cast<uint32_t>(i));
  }
  if (!out->empty()) return;
  if (first_python >= 0) {
    out->push_back(static_cast<uint32_t>(first_python));
    return;
  }
  // A stack recorded inside NCCL (plugin-only mode: NCCL's profiler callbacks run below its API
  // entry point) starts with NCCL's own frames, and ours: the user's code begins after them.
  size_t first = 0;
  while (first < frames.size() && baseName(frames[first].module).rfind("libnccl", 0) == 0) ++first;
  if (first == frames.size()) first = 0;
  for (size_t i = first; i < frames.size(); ++i) out->push_back(static_cast<uint32_t>(i));
}

namespace {

uint64_t nativeFunctionKey(const format::Frame& f) {
  return mix(mix(7, hashOf(baseName(f.module))), hashOf(f.function));
}

}  // namespace

uint64_t SiteRule::functionKey(const format::Frame& f, uint64_t frame_key) const {
  if (f.python) return mix(mix(6, hashOf(baseName(f.file))), hashOf(f.function));
  if (!f.function.empty()) return nativeFunctionKey(f);
  const auto it = named_.find(frame_key);
  return it != named_.end() ? it->second : frame_key;
}

void SiteRule::learn(const std::vector<format::Frame>& frames, const FrameNames* names) {
  if (names != names_) {
    // Keyed by frame key, so an unnamed frame finds its name without building a string.
    names_ = names;
    named_.clear();
    if (names != nullptr) {
      for (const auto& [key, f] : *names) {
        if (!f.function.empty() && !f.module.empty()) named_[frameKey(f)] = nativeFunctionKey(f);
      }
    }
  }
  std::vector<uint32_t> cand;
  candidates(frames, &cand);
  // Beyond that many candidates, all plumbing, the call site is the last one learnt.
  if (cand.size() > kMaxCandidates) cand.resize(kMaxCandidates);
  if (cand.size() < 2) return;
  std::vector<uint64_t> keys, functions;
  keys.reserve(cand.size());
  functions.reserve(cand.size());
  uint64_t stack_hash = 5;
  for (uint32_t i : cand) {
    keys.push_back(frameKey(frames[i]));
    functions.push_back(functionKey(frames[i], keys.back()));
    stack_hash = mix(mix(stack_hash, keys.back()), functions.back());
  }
  if (!learnt_.insert(stack_hash).second) return;
  // The outermost candidate's caller is unknown (the stack may be cut): it teaches nothing.
  for (size_t k = 0; k + 1 < keys.size(); ++k) {
    const auto [it, added] = next_.emplace(keys[k], Next{functions[k + 1], false});
    if (!added && it->second.first != functions[k + 1]) it->second.plumbing = true;
  }
}

void SiteRule::learn(const std::vector<format::RankData>& ranks, const FrameNames* names) {
  for (const format::RankData& r : ranks) {
    for (const auto& [id, stack] : r.stacks) learn(stack.frames, names);
  }
}

bool SiteRule::isPlumbing(const format::Frame& frame) const {
  const auto it = next_.find(frameKey(frame));
  return it != next_.end() && it->second.plumbing;
}

int SiteRule::siteFrame(const std::vector<format::Frame>& frames) const {
  if (frames.empty()) return -1;
  std::vector<uint32_t> cand;
  candidates(frames, &cand);
  if (cand.size() > kMaxCandidates) cand.resize(kMaxCandidates);
  for (size_t k = 0; k + 1 < cand.size(); ++k) {
    if (!isPlumbing(frames[cand[k]])) return static_cast<int>(cand[k]);
  }
  return static_cast<int>(cand.back());
}

namespace {

// The interpreter's own library: the standard library under .../lib/python3.X/, not what pip
// installed there.
bool isStdlibFrame(const format::Frame& f) {
  return f.file.find("/lib/python3") != std::string::npos &&
         f.file.find("-packages/") == std::string::npos;
}

// Shared objects that are never where a program is "at": the C and C++ runtimes, the loader,
// the unwinder, Python's own, NCCL and ours.
bool isSystemModule(const std::string& module) {
  static constexpr std::string_view kPrefixes[] = {
      "libc.so",     "libc-",   "libpthread", "ld-linux",   "ld-",       "libstdc++",
      "libgcc_s",    "libm.so", "libunwind",  "libncclrec", "libpython", "libnccl",
      "libhostnccl", "libgloo", "libdl",      "librt",      "libasan",   "libtsan",
      "libubsan",    "python3", "libtorch",   "libc10"};
  const std::string_view name = baseName(module);
  for (std::string_view p : kPrefixes)
    if (name.compare(0, p.size(), p) == 0) return true;
  return false;
}

}  // namespace

int userFrameIndex(const std::vector<format::Frame>& frames, const SiteRule& rule) {
  int first_python = -1;
  for (size_t i = 0; i < frames.size(); ++i) {
    const format::Frame& f = frames[i];
    if (!f.python) continue;
    if (first_python < 0) first_python = static_cast<int>(i);
    if (!rule.isLibraryFrame(f) && !isStdlibFrame(f)) return static_cast<int>(i);
  }
  if (first_python >= 0) return first_python;
  // Native: outside system libraries, and not a standard-library template instantiated in the
  // program (std::condition_variable::wait<...> is where it waits, not where it is).
  for (size_t i = 0; i < frames.size(); ++i) {
    const format::Frame& f = frames[i];
    if (f.module.empty() || isSystemModule(f.module)) continue;
    if (f.function.rfind("std::", 0) == 0 || f.function.rfind("__gnu_cxx::", 0) == 0 ||
        f.function.rfind("void std::", 0) == 0)
      continue;
    return static_cast<int>(i);
  }
  return frames.empty() ? -1 : 0;
}

}  // namespace ncclrec::analyzer
