// Runs programs under libncclrec.so for the end-to-end tests of the shim and reads what they left.
//
// Every child gets LD_PRELOAD=<libncclrec.so>, NCCLREC_DIR=<a directory inside a fresh temporary
// directory, which the shim itself must create>, the stub NCCL's folder first on LD_LIBRARY_PATH,
// NCCLREC_COMPLETION=host, NCCLREC_WATCHER=off, and an environment cleared of the knobs that would
// change what it records (NCCLREC_*, STUB_NCCL_*, RANK, WORLD_SIZE, LOCAL_RANK) unless a test sets
// them. Paths of the built programs come from compile definitions of the test target
// (interpose/CMakeLists.txt). In sanitizer builds it adds what a preloaded instrumented library
// needs (addSanitizerOptions).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "format/model.h"
#include "tests/support/process.h"

namespace ncclrec::interpose::testing {

using Env = std::map<std::string, std::string>;

inline constexpr std::chrono::milliseconds kRunTimeout{30000};

// Built artifacts.
const char* shimPath();     // libncclrec.so
const char* callerPath();   // nccl_caller, linked against the stub NCCL
const char* stubNcclDir();  // the folder holding the stub libnccl.so.2 and nothing else
// Whether this build has `name` (address, thread, undefined) among its sanitizers
// (NCCLREC_SANITIZE, e.g. "address,undefined").
bool sanitizedWith(const char* name);
bool sanitized();

class ShimHarness {
 public:
  ShimHarness();

  // NCCLREC_DIR of the children: not created by the harness.
  const std::string& recordDir() const { return record_dir_; }
  // The temporary directory around it (removed with everything in it at destruction).
  const support::TempDir& scratch() const { return scratch_; }

  // Options to run `argv` (argv[0] a path) with the shim preloaded (or not).
  support::SpawnOptions options(std::vector<std::string> argv, const Env& env = {},
                                bool preload = true) const;
  // nccl_caller with these operations.
  support::SpawnOptions callerOptions(const std::vector<std::string>& ops, const Env& env = {},
                                      bool preload = true) const;
  support::ProcessResult runCaller(const std::vector<std::string>& ops, const Env& env = {},
                                   bool preload = true) const;
  std::unique_ptr<support::Process> startCaller(const std::vector<std::string>& ops,
                                                const Env& env = {}) const;

  // Names (full paths, sorted) of the files in recordDir() whose name ends with `suffix`.
  std::vector<std::string> files(std::string_view suffix = "") const;
  // The black box of process `pid`, or of the only process when pid is 0. Records a test failure
  // and returns an empty RankData when there is no such box or it cannot be read.
  format::RankData blackBox(int pid = 0) const;
  // Every dump of `reason` in recordDir(), loaded (failures recorded, unreadable ones skipped).
  std::vector<format::RankData> dumps(format::DumpReason reason) const;

 private:
  support::TempDir scratch_;
  std::string record_dir_;
};

std::vector<format::EventRecord> eventsOf(const format::RankData& rank, format::OpType op);
std::vector<format::OpType> opsOf(const format::RankData& rank);
const format::Comm* commById(const format::RankData& rank, uint64_t comm_id);
// Number of lines of `text` (a last line without '\n' counts).
int lineCount(const std::string& text);

}  // namespace ncclrec::interpose::testing

namespace ncclrec::format {
// Names instead of numbers in GoogleTest messages.
void PrintTo(OpType op, std::ostream* os);
}  // namespace ncclrec::format
