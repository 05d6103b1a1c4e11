// The call-site rule: which frame of a recorded stack says where an NCCL call came from. Shared by
// ncclrec-analyze and ncclrec-top (a leaf library, ncclrec_site_rule, that depends on
// format only). docs/analyzer.md, "Call sites", explains the rule to users.
//
// Candidates, innermost first: the Python frames outside library layers (a pattern matches as a
// substring of the frame's file path); if every Python frame is a library frame, the innermost
// Python frame alone; if the stack has no Python frame, its native frames. User code wins over the
// library, and over the native frames below it (they stay in the stack).
//
// Plumbing is recognized, not listed: a candidate frame is plumbing when, over every stack of the
// job (all ranks), the candidates just outside it belong to two or more distinct functions. A
// project's `all_reduce(buf)` wrapper or a C++ `reduceOn(comm, ...)` helper is entered from many
// places and says nothing about where one call came from. Callers are told apart by function, not
// by line: a function called from two lines of one caller (`if (a) f(); g(); if (!a) f();`) is
// still where the call came from, and naming the caller's line instead would split one collective
// into two call sites. The outermost candidate of a stack counts for nothing (the stack may be
// truncated: what lies outside it is unknown). The call site is the innermost candidate that is
// not plumbing, else the outermost candidate. Learning is job-wide so that a wrapper entered from a
// rank-0-only caller is plumbing on every rank, and the call sites of one collective stay
// comparable across ranks.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "format/model.h"

namespace ncclrec::analyzer {

// Python library layers: the frames the collective passes through on its way to NCCL.
inline constexpr std::array<std::string_view, 5> kDefaultLibraryFrames = {
    "torch/distributed/", "torch/nn/parallel/", "c10d_logger", "ctypes/", "functools.py"};

// Names of native frames by "module-basename+offset", as dumps resolved them (the analyzer's and
// ncclrec-top's SymbolTable): black boxes hold addresses only.
using FrameNames = std::unordered_map<std::string, format::Frame>;

// Identity of a frame across processes: a Python frame by base name of its file, qualified name
// and line; a native one by module base name and offset (equal in black boxes and dumps, whatever
// the load address), else by name, file and line, else by address.
uint64_t frameKey(const format::Frame& frame);

class SiteRule {
 public:
  // Library layers: kDefaultLibraryFrames plus `extra_library_frames` (empty patterns ignored).
  explicit SiteRule(const std::vector<std::string>& extra_library_frames = {});

  bool isLibraryFrame(const format::Frame& frame) const;

  // Learns which frames are plumbing from one stack; each distinct stack counts once, so feeding
  // the same stack from every rank costs a lookup, not a relearn. Learn every stack of the job
  // before asking siteFrame(). `names` names the native frames a stack leaves unnamed (a caller
  // unnamed anywhere counts as its own function: two return addresses, two callers).
  void learn(const std::vector<format::Frame>& frames, const FrameNames* names = nullptr);
  void learn(const std::vector<format::RankData>& ranks, const FrameNames* names = nullptr);

  // Index into `frames` of the call-site frame; -1 when `frames` is empty.
  int siteFrame(const std::vector<format::Frame>& frames) const;

  // Whether the frame was found to be plumbing (two or more distinct callers).
  bool isPlumbing(const format::Frame& frame) const;

 private:
  // Indices of the candidate frames, innermost first.
  void candidates(const std::vector<format::Frame>& frames, std::vector<uint32_t>* out) const;
  // The function a frame belongs to, across processes: a Python code object by file base name
  // and qualified name; a native frame by module base name and function name, its own or
  // borrowed (named_); an unnamed one by its frame key.
  uint64_t functionKey(const format::Frame& frame, uint64_t frame_key) const;

  // Only the innermost candidates are learnt and looked at: deeper ones would be the call site
  // only under that many wrappers, and learning every frame of deep native stacks costs time.
  static constexpr size_t kMaxCandidates = 24;

  struct Next {
    uint64_t first = 0;  // the function of the first caller seen
    bool plumbing = false;
  };
  std::vector<std::string> patterns_;
  std::unordered_map<uint64_t, Next> next_;       // frame key -> its callers
  std::unordered_set<uint64_t> learnt_;           // hashes of the candidate keys of stacks learnt
  const FrameNames* names_ = nullptr;             // what named_ was built from
  std::unordered_map<uint64_t, uint64_t> named_;  // frame key -> function key, from names_
};

// Where a thread of a thread snapshot is: index into `frames` of its innermost user frame, -1 when
// `frames` is empty. Python frames outside library layers (the rule's) and the standard library
// win; else the innermost Python frame; else the innermost native frame outside system and NCCL
// libraries and standard-library templates (name the frames first: a native frame is judged by
// its module and function); else frame 0. Shared by ncclrec-analyze's whereabouts and ncclrec-top.
int userFrameIndex(const std::vector<format::Frame>& frames, const SiteRule& rule);

}  // namespace ncclrec::analyzer
