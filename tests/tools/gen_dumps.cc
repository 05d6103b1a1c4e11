// ncclrec-gen-dumps: writes synthetic dumps (N ranks x E collectives) for one scenario, for the
// analyzer's scale benchmark and for cases a hostnccl run cannot produce. A dev tool: the dumps
// are well-formed but their stacks point into a binary that does not exist.
//   ncclrec-gen-dumps --scenario gated --ranks 1024 --entries 2000 --out DIR
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "format/dump_io.h"
#include "format/model.h"

namespace {

using ncclrec::format::EventState;
using ncclrec::format::OpType;
using ncclrec::format::RankData;

constexpr uint64_t kComm = 0x5eed000000000001ull;
constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr int kFloat = 7;

enum SiteId : uint32_t { kTrain = 0, kSave = 1, kLoss = 2 };

ncclrec::format::Stack stack(uint32_t id, const char* function, int line) {
  ncclrec::format::Stack s;
  s.id = id;
  s.symbolized = true;
  s.frames.push_back(
      {0x400000u + 0x100u * id, "/opt/synthetic/train", 0x100u * id, function, "train.cc", line});
  s.frames.push_back({0x401000, "/opt/synthetic/train", 0x1000, "main", "train.cc", 90});
  return s;
}

struct Spec {
  std::string scenario = "gated";
  int ranks = 8;
  int entries = 100;
  int culprit = 0;
};

RankData makeRank(const Spec& spec, int rank) {
  RankData r;
  r.source = ncclrec::format::SourceKind::kDump;
  r.pid = 10000 + rank;
  r.global_rank = rank;
  r.world_size = spec.ranks;
  r.host = "node" + std::to_string(rank / 8);
  r.run_id = "synthetic-" + spec.scenario;
  r.exe = "/opt/synthetic/train";
  r.start_ns = kT0;
  r.dump_reason = ncclrec::format::DumpReason::kHang;
  r.stacks[kTrain] = stack(kTrain, "trainStep(ncclComm*)", 27);
  r.stacks[kSave] = stack(kSave, "saveCheckpoint(ncclComm*, int)", 33);
  r.stacks[kLoss] = stack(kLoss, "logLoss(ncclComm*)", 40);
  ncclrec::format::Comm c;
  c.comm_id = kComm;
  c.rank = rank;
  c.nranks = spec.ranks;
  c.global_rank = rank;
  r.comms.push_back(c);
  const bool me = rank == spec.culprit;
  const int n = spec.scenario == "exited" && me ? spec.entries - 1 : spec.entries;
  for (int i = 0; i < n; ++i) {
    ncclrec::format::EventFields e;
    e.index = static_cast<uint64_t>(i);
    e.op = OpType::kAllReduce;
    e.comm_id = kComm;
    e.op_seq = static_cast<uint64_t>(i) + 1;
    e.rank = rank;
    e.nranks = spec.ranks;
    e.count = 4096;
    e.dtype = kFloat;
    e.redop = 0;
    e.stack_id = kTrain;
    e.enqueue_ns = kT0 + int64_t{i} * 1'000'000;
    e.start_ns = e.enqueue_ns;
    e.end_ns = e.enqueue_ns + 500'000;
    e.state = EventState::kCompleted;
    const bool last = i + 1 == spec.entries;
    if (spec.scenario == "skipped" && i % 2 == 1) {
      e.stack_id = kLoss;
      e.count = 1;
    }
    if (last && spec.scenario != "no_hang") {
      e.state = EventState::kEnqueued;
      e.end_ns = 0;
      if (me && spec.scenario == "gated") {
        e.stack_id = kSave;
        e.count = 1;
      }
      if (me && spec.scenario == "size_mismatch") e.count = 2048;
      if (me && spec.scenario == "dtype_mismatch") e.dtype = 4;  // ncclInt64
      if (me && spec.scenario == "skipped") {
        e.stack_id = kTrain;  // the loss all-reduce the others are in, skipped
        e.count = 4096;
      }
      if (me && spec.scenario == "redop_mismatch") e.redop = 2;  // max
    }
    r.events.emplace_back(e);
  }
  if (spec.scenario == "exited" && me) {
    r.exited = true;
    r.exit_ns = kT0 + int64_t{n} * 1'000'000;
    r.dump_reason = ncclrec::format::DumpReason::kExit;
  }
  if (spec.scenario == "no_hang") {
    r.exited = true;
    r.exit_ns = kT0 + int64_t{n} * 1'000'000;
    r.dump_reason = ncclrec::format::DumpReason::kExit;
  }
  r.events_total = r.events.size();
  r.heartbeat_ns = kT0 + int64_t{spec.entries} * 1'000'000 + 60'000'000'000;
  r.dump_ns = r.heartbeat_ns;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("ncclrec-gen-dumps: synthetic dumps for the analyzer's tests and benchmark",
               "ncclrec-gen-dumps");
  Spec spec;
  std::string out;
  app.add_option("--scenario", spec.scenario, "What goes wrong")
      ->check(CLI::IsMember({"gated", "skipped", "exited", "size_mismatch", "dtype_mismatch",
                             "redop_mismatch", "no_hang"}));
  app.add_option("--ranks", spec.ranks, "Ranks")->check(CLI::Range(2, 1 << 20));
  app.add_option("--entries", spec.entries, "Collectives per rank (skipped: even)")
      ->check(CLI::Range(2, 1 << 24));
  app.add_option("--culprit", spec.culprit, "The faulty rank")->check(CLI::NonNegativeNumber);
  app.add_option("--out", out, "Directory to write rank<R>.ncclrec.pb into")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (spec.culprit >= spec.ranks) {
    std::fprintf(stderr, "ncclrec-gen-dumps: --culprit %d: not below --ranks %d\n", spec.culprit,
                 spec.ranks);
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) {
    std::fprintf(stderr, "ncclrec-gen-dumps: %s: %s\n", out.c_str(), ec.message().c_str());
    return 1;
  }
  for (int r = 0; r < spec.ranks; ++r) {
    const std::string path = out + "/rank" + std::to_string(r) + ".ncclrec.pb";
    const ncclrec::base::Status st = ncclrec::format::writeDumpFile(makeRank(spec, r), path);
    if (!st.ok()) {
      std::fprintf(stderr, "ncclrec-gen-dumps: %s\n", st.message().c_str());
      return 1;
    }
  }
  return 0;
}
