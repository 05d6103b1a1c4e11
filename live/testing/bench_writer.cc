// ncclrec_top_bench_writer: N synthetic ranks writing live black boxes, as N recorded processes
// would, for ncclrec-top's benchmark (tests/bench/run_top_bench.sh). Each rank calls an
// all-reduce RATE times a second (entered, then completed at the next 10 ms tick), and its
// watchdog heartbeat is stamped every 200 ms. Each black box holds a thread snapshot of THREADS
// threads (8 frames each), written at the start and again every SNAPSHOT_EVERY seconds (as
// ncclrec-top's 't' would have every rank take one; 0: only at the start). Prints "ready" once
// every file exists.
//   ncclrec_top_bench_writer --dir DIR --ranks 1024 --rate 10 --seconds 20 [--threads 16]
//                            [--snapshot-every 0]
// Exit status: 0 done, 1 a file could not be written, 2 bad usage.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/text.h"
#include "format/bbox_ring.h"
#include "format/testing/bbox_builder.h"
#include "live/testing/live_bbox.h"

namespace {

using ncclrec::format::EventState;
using ncclrec::format::OpType;
using ncclrec::live::testing::LiveBbox;

constexpr uint64_t kComm = 0xbe9c000000000001ull;

// A snapshot of `threads` threads, written under the sequence word as the recorder writes it.
void writeSnapshot(ncclrec::format::BboxHeader* h, int threads, int first_tid, int64_t now) {
  using ncclrec::format::atomicField;
  const uint32_t seq = atomicField(h->threads_seq).load(std::memory_order_relaxed);
  atomicField(h->threads_seq).store(seq + 1, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_release);
  ncclrec::format::ThreadRecord* records = ncclrec::format::threadRecords(h);
  for (int t = 0; t < threads; ++t) {
    ncclrec::format::ThreadRecord r{};
    r.tid = first_tid + t;
    r.status = ncclrec::format::kThreadAnswered;
    r.kernel_state = t == 0 ? 'R' : 'S';
    std::snprintf(r.comm, sizeof(r.comm), "worker%u", static_cast<unsigned>(t) % 1000u);
    r.native_depth = 8;
    for (uint32_t f = 0; f < r.native_depth; ++f) r.frames[f] = 0x401000 + 0x100 * f + t;
    records[t] = r;
  }
  atomicField(h->thread_count).store(static_cast<uint32_t>(threads), std::memory_order_relaxed);
  atomicField(h->threads_ns).store(now, std::memory_order_relaxed);
  atomicField(h->threads_seq).store(seq + 2, std::memory_order_release);
}

struct Rank {
  std::unique_ptr<LiveBbox> box;
  uint32_t comm = 0;
  uint32_t stack = 0;
  uint64_t seq = 0;
  uint64_t pending = 0;
  bool has_pending = false;
};

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int ranks = 1024;
  double rate = 10;
  double seconds = 20;
  uint32_t ring = 512;
  int threads = 16;
  double snapshot_every = 0;
  CLI::App app("ncclrec_top_bench_writer: live synthetic black boxes for ncclrec-top's benchmark");
  app.add_option("--dir", dir, "Directory to write HOST.PID.bbox files in")->required();
  app.add_option("--ranks", ranks, "Ranks (files)")->check(CLI::Range(1, 65536));
  app.add_option("--rate", rate, "All-reduces per second per rank")->check(CLI::Range(0.0, 1000.0));
  app.add_option("--seconds", seconds, "How long to write")->check(CLI::Range(0.1, 3600.0));
  app.add_option("--ring", ring, "Ring capacity (a power of two)")
      ->check(CLI::Range(16u, 1u << 20));
  app.add_option("--threads", threads, "Threads in each rank's thread snapshot (0: none)")
      ->check(CLI::Range(0, 256));
  app.add_option("--snapshot-every", snapshot_every,
                 "Seconds between fresh thread snapshots of every rank (0: only at the start)")
      ->check(CLI::Range(0.0, 3600.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if ((ring & (ring - 1)) != 0) {
    std::fprintf(stderr, "ncclrec_top_bench_writer: --ring %u is not a power of two\n", ring);
    return 2;
  }
  const std::string host = ncclrec::base::hostName();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::vector<Rank> all(static_cast<size_t>(ranks));
  const int64_t start = ncclrec::base::realtimeNs();
  for (int r = 0; r < ranks; ++r) {
    ncclrec::format::testing::BboxBuilder b({.ring = ring,
                                             .comms = 4,
                                             .stacks = 8,
                                             .stack_depth = 8,
                                             .modules = 4,
                                             .threads = static_cast<uint32_t>(threads)});
    // Pids no process has: the files stand for other processes; a fresh heartbeat keeps them
    // alive in ncclrec-top's eyes.
    const int pid = 4'000'000 + r;
    b.header()->pid = pid;
    b.header()->global_rank = r;
    b.header()->world_size = ranks;
    b.header()->local_rank = r % 8;
    b.header()->start_realtime_ns = start;
    b.header()->heartbeat_ns = start;
    std::strncpy(b.header()->host, host.c_str(), sizeof(b.header()->host) - 1);
    std::strncpy(b.header()->exe, "/opt/bench/train", sizeof(b.header()->exe) - 1);
    b.addModule("/opt/bench/train", 0x400000, 0x100000, {0x12, 0x34});
    Rank& rank = all[size_t(r)];
    rank.stack = b.addStack({0x401234, 0x402000});
    const std::string path = dir + "/" + host + "." + std::to_string(pid) + ".bbox";
    rank.box = LiveBbox::create(path, b);
    if (rank.box == nullptr) {
      std::fprintf(stderr, "ncclrec_top_bench_writer: cannot write %s\n", path.c_str());
      return 1;
    }
    ncclrec::format::CommRecord c{};
    c.comm_id = kComm;
    c.rank = r;
    c.nranks = ranks;
    c.device = -1;
    c.global_rank = r;
    c.created_ns = start;
    rank.comm = rank.box->addComm(c);
    if (threads > 0) writeSnapshot(rank.box->header(), threads, pid, start);
  }
  std::printf("ready\n");
  std::fflush(stdout);

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration<double>(seconds);
  const double period_s = rate > 0 ? 1.0 / rate : 1e9;
  auto next_beat = t0;
  auto next_snapshot = t0 + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(snapshot_every));
  for (auto tick = t0; tick < end; tick += std::chrono::milliseconds(10)) {
    std::this_thread::sleep_until(tick);
    const int64_t now = ncclrec::base::realtimeNs();
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    // Rank r's k-th call is due at (k + r / ranks) * period: the calls are spread evenly.
    for (int r = 0; r < ranks; ++r) {
      Rank& rank = all[size_t(r)];
      if (rank.has_pending) {
        auto* slot = rank.box->slot(rank.pending);
        ncclrec::format::atomicField(slot->end_ns).store(now, std::memory_order_relaxed);
        ncclrec::format::atomicField(slot->state)
            .store(static_cast<uint8_t>(EventState::kCompleted), std::memory_order_release);
        rank.has_pending = false;
      }
      const double due = (static_cast<double>(rank.seq) + double(r) / ranks) * period_s;
      if (elapsed < due) continue;
      ++rank.seq;
      ncclrec::format::Event e = ncclrec::format::testing::makeCollective(
          OpType::kAllReduce, kComm, r, ranks, rank.seq, 1 << 20, now);
      e.state = static_cast<uint8_t>(EventState::kEnqueued);
      e.end_ns = 0;
      e.stack_id = rank.stack;
      e.comm_index = rank.comm;
      rank.pending = rank.box->addEvent(e);
      rank.has_pending = true;
      ncclrec::format::atomicField(rank.box->comm(rank.comm)->coll_seq)
          .store(rank.seq, std::memory_order_relaxed);
    }
    if (threads > 0 && snapshot_every > 0 && Clock::now() >= next_snapshot) {
      next_snapshot += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(snapshot_every));
      for (int r = 0; r < ranks; ++r)
        writeSnapshot(all[size_t(r)].box->header(), threads, 4'000'000 + r, now);
    }
    if (Clock::now() >= next_beat) {
      next_beat += std::chrono::milliseconds(200);
      for (Rank& rank : all)
        ncclrec::format::atomicField(rank.box->header()->heartbeat_ns)
            .store(now, std::memory_order_relaxed);
    }
  }
  return 0;
}
