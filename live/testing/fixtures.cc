#include "live/testing/fixtures.h"

#include <csignal>
#include <vector>

#include "format/bbox_layout.h"
#include "format/testing/frames.h"
#include "live/analysis.h"
#include "live/rank_convert.h"

namespace ncclrec::live::testing {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

format::EventRecord allReduce(uint64_t index, uint64_t comm, int rank, int world, uint64_t seq,
                              int64_t enqueue_ns, bool complete) {
  format::EventRecord e;
  e.index = index;
  e.op = format::OpType::kAllReduce;
  e.state = complete ? format::EventState::kCompleted : format::EventState::kEnqueued;
  e.setCommId(comm);
  e.op_seq = seq;
  e.count = 1024;
  e.setRank(rank);
  e.setNranks(world);
  e.dtype = 7;
  e.redop = 0;
  e.setStackId(1);
  e.setEnqueueNs(enqueue_ns);
  e.setStartNs(enqueue_ns);
  e.setEndNs(complete ? enqueue_ns + kSecond / 100 : 0);
  return e;
}

format::Comm comm(uint64_t id, int rank, int world, uint64_t seq, const char* name = "") {
  format::Comm c;
  c.comm_id = id;
  c.rank = rank;
  c.nranks = world;
  c.coll_seq = seq;
  c.state = 1;  // kCommInitialized
  c.name = name;
  return c;
}

void addRank(Snapshot* s, const format::RankData& d) {
  RankEntry e = entryFromRankData(d);
  e.source = "/dumps/" + d.host + "." + std::to_string(d.pid) + ".bbox";
  s->ranks.push_back(std::move(e));
}

}  // namespace

format::RankData makeRank(int rank, int world, const char* host, uint64_t comm_id, int done,
                          int pending) {
  format::RankData d;
  d.pid = 1000 + rank;
  d.global_rank = rank;
  d.world_size = world;
  d.local_rank = rank % 4;
  d.host = host;
  d.run_id = "fixture";
  d.exe = "/opt/job/train";
  d.start_ns = kT0;
  d.heartbeat_ns = kT0 + 100 * kSecond - kSecond / 5;
  uint64_t index = 0;
  for (int i = 0; i < done; ++i) {
    d.events.push_back(
        allReduce(index++, comm_id, rank, world, uint64_t(i + 1), kT0 + (i + 1) * kSecond, true));
  }
  for (int i = 0; i < pending; ++i) {
    d.events.push_back(allReduce(index++, comm_id, rank, world, uint64_t(done + i + 1),
                                 kT0 + 20 * kSecond, false));
  }
  d.events_total = index;
  d.comms.push_back(comm(comm_id, rank, world, uint64_t(done + pending)));
  format::Stack st;
  st.id = 1;
  st.frames = {{0x401234, "/opt/job/train", 0x1234, "", "", 0},
               {0x402000, "/opt/job/train", 0x2000, "", "", 0},
               {0x7f000002724a, "/lib/x86_64-linux-gnu/libc.so.6", 0x2724a, "", "", 0}};
  d.stacks[1] = st;
  return d;
}

Snapshot hangSnapshot(double hang_after_s) {
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  s.hang_after_s = hang_after_s;
  s.source_label = "/dumps/run7/attempt_0 (newest of 2 runs, the only attempt)";
  for (int r = 0; r < 6; ++r) {
    const bool stopped = r == 3 || r == 4;
    format::RankData d = makeRank(r, 6, r < 4 ? "node0" : "node1", kCommWorld, 12, stopped ? 0 : 1);
    if (r <= 1) {
      // Five all-reduces on the tensor-parallel comm, before the world's #13.
      for (int i = 0; i < 5; ++i) {
        format::EventRecord e = allReduce(d.events.size(), kCommTp, r, 2, uint64_t(i + 1),
                                          kT0 + 13 * kSecond + i * kSecond / 10, true);
        e.count = 4096;
        d.events.insert(d.events.end() - 1, e);
      }
      for (size_t k = 0; k < d.events.size(); ++k) d.events[k].index = k;
      d.events_total = d.events.size();
      d.comms.push_back(comm(kCommTp, r, 2, 5, "tp"));
    }
    if (r == 4) {
      d.exited = true;
      d.exit_ns = kT0 + 13 * kSecond;
    }
    if (r == 5) {
      d.fatal_signal = SIGSEGV;
      d.fatal_ns = kT0 + 25 * kSecond;
    }
    addRank(&s, d);
  }
  auto symbols = std::make_shared<SymbolTable>();
  (*symbols)[symbolKey("/opt/job/train", 0x1234)] = {
      0, "/opt/job/train", 0x1234, "trainStep(ncclComm*)", "/src/train.cc", 27};
  (*symbols)[symbolKey("/opt/job/train", 0x2000)] = {0,      "/opt/job/train", 0x2000,
                                                     "main", "/src/train.cc",  90};
  s.symbols = symbols;
  analyze(&s);
  return s;
}

Snapshot pythonSnapshot() {
  const auto py = format::testing::pythonFrame;
  const std::vector<format::Frame> below = {
      py("/usr/lib/python3.11/ctypes/__init__.py", "_FuncPtr.__call__", 400),
      py("/job/comm_utils.py", "all_reduce", 14)};
  const std::vector<format::Frame> native = {
      {0x7f0000006a0a, "/usr/lib/x86_64-linux-gnu/libffi.so.8", 0x6a0a, "ffi_call", "", 0},
      {0x41d2b3, "/usr/bin/python3.11", 0x1d2b3, "_PyEval_EvalFrameDefault", "", 0}};
  const auto stack = [&](uint32_t id, std::vector<format::Frame> user) {
    format::Stack st;
    st.id = id;
    st.frames = below;
    st.frames.insert(st.frames.end(), user.begin(), user.end());
    st.frames.insert(st.frames.end(), native.begin(), native.end());
    st.symbolized = true;
    return st;
  };
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  s.source_label = "/dumps/pyjob";
  for (int r = 0; r < 2; ++r) {
    format::RankData d = makeRank(r, 2, "node0", kCommWorld, 4, 1);
    d.exe = "/usr/bin/python3.11";
    d.stacks[1] = stack(1, {py("/job/train.py", "train_step", 40), py("/job/train.py", "main", 88),
                            py("/job/train.py", "<module>", 95)});
    if (r == 0) {
      d.stacks[2] =
          stack(2, {py("/job/train.py", "Trainer.save_checkpoint", 31),
                    py("/job/train.py", "main", 90), py("/job/train.py", "<module>", 95)});
      d.events.back().setStackId(2);
    }
    addRank(&s, d);
  }
  analyze(&s);
  return s;
}

namespace {

format::ThreadState thread(int tid, const char* name, char state, uint32_t status,
                           std::vector<format::Frame> frames) {
  format::ThreadState t;
  t.tid = tid;
  t.name = name;
  t.kernel_state = state;
  t.status = status;
  t.frames = std::move(frames);
  return t;
}

format::Frame nativeFrame(const char* module, uint64_t offset) {
  return {0x400000 + offset, module, offset, "", "", 0};
}

}  // namespace

Snapshot stoppedSnapshot() {
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  s.source_label = "/dumps/demo/attempt_0";
  for (int r = 0; r < 4; ++r) {
    format::RankData d = makeRank(r, 4, "node0", kCommWorld, 12, r == 3 ? 0 : 1);
    d.heartbeat_ns = kT0 + 82 * kSecond;
    d.dump_ns = kT0 + 81 * kSecond;
    d.dump_reason = r == 0 ? format::DumpReason::kHang : format::DumpReason::kTrigger;
    if (r == 3) {
      d.threads_ns = d.dump_ns;
      d.threads_reason = format::DumpReason::kTrigger;
      const char* libc = "/lib/x86_64-linux-gnu/libc.so.6";
      d.threads = {
          thread(1003, "train", 'S', format::kThreadAnswered,
                 {nativeFrame(libc, 0x91a2b), nativeFrame("/opt/job/train", 0x3000),
                  nativeFrame("/opt/job/train", 0x2000)}),
          thread(1010, "ncclrec-watch", 'R', format::kThreadDumper,
                 {nativeFrame("/opt/job/libncclrec.so", 0x5000)}),
          thread(1011, "loader", 'R', format::kThreadAnswered,
                 {nativeFrame("/opt/job/train", 0x3100), nativeFrame(libc, 0x94ac3)}),
          thread(1012, "io_worker", 'D', format::kThreadNoAnswer, {}),
          thread(1013, "poller", 'S', format::kThreadNotAsked, {}),
          // An embedded interpreter's thread: the user's Python frame past the standard library.
          thread(1014, "py_loader", 'S', format::kThreadAnswered,
                 {format::testing::pythonFrame("/usr/lib/python3.11/threading.py", "Condition.wait",
                                               320),
                  format::testing::pythonFrame("/job/data.py", "load_shard", 81),
                  nativeFrame("/usr/bin/python3.11", 0x1d2b3)}),
      };
      d.threads[3].flags = format::kThreadSignalBlocked;
      d.threads[3].wchan = "io_schedule";
      d.threads[4].flags = format::kThreadInSleepingCall;
      d.threads[4].wchan = "hrtimer_nanosleep";
    }
    addRank(&s, d);
    s.ranks.back().liveness = goneLiveness(s.ranks.back().last_dump_ns);
  }
  auto symbols = std::make_shared<SymbolTable>();
  (*symbols)[symbolKey("/opt/job/train", 0x1234)] = {
      0, "/opt/job/train", 0x1234, "trainStep(ncclComm*)", "/src/train.cc", 27};
  (*symbols)[symbolKey("/opt/job/train", 0x2000)] = {0,      "/opt/job/train", 0x2000,
                                                     "main", "/src/train.cc",  90};
  (*symbols)[symbolKey("/opt/job/train", 0x3000)] = {
      0, "/opt/job/train", 0x3000, "nextBatch()", "/src/loader.cc", 44};
  (*symbols)[symbolKey("/opt/job/train", 0x3100)] = {
      0, "/opt/job/train", 0x3100, "decodeShard(int)", "/src/loader.cc", 71};
  s.symbols = symbols;
  analyze(&s);
  return s;
}

Snapshot creatingSnapshot() {
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  s.source_label = "/dumps/eval/attempt_0";
  for (int r = 0; r < 4; ++r) {
    format::RankData d = makeRank(r, 4, "node0", kCommWorld, 12, r == 3 ? 1 : 0);
    if (r < 3) {
      format::EventRecord e;
      e.index = d.events.size();
      e.op = format::OpType::kCommInitRank;
      e.state = format::EventState::kEnqueued;
      e.setCommId(kCommEval);
      e.setRank(r);
      e.setNranks(4);
      e.setStackId(1);
      e.setEnqueueNs(kT0 + 20 * kSecond);
      e.setStartNs(kT0 + 20 * kSecond);
      d.events.push_back(e);
      d.events_total = d.events.size();
      format::Comm c = comm(kCommEval, r, 4, 0, "eval");
      c.state = format::kCommCreating;
      d.comms.push_back(c);
    }
    addRank(&s, d);
  }
  analyze(&s);
  return s;
}

Snapshot healthySnapshot() {
  Snapshot s;
  s.now_ns = kT0 + 30 * kSecond + kSecond / 2;
  s.source_label = "ncclrec-dumps";
  for (int r = 0; r < 2; ++r) {
    format::RankData d = makeRank(r, 2, "node0", kCommWorld, 30, 0);
    d.heartbeat_ns = s.now_ns - kSecond / 10;
    addRank(&s, d);
  }
  analyze(&s);
  return s;
}

Snapshot transportSnapshot() {
  Snapshot s;
  s.now_ns = kT0 + 100 * kSecond;
  s.source_label = "/dumps/run9/attempt_0";
  for (int r = 0; r < 4; ++r) {
    format::RankData d = makeRank(r, 4, r < 2 ? "nodea" : "nodeb", kCommWorld, 12, 1);
    for (const bool send : {true, false}) {
      format::Link l;
      l.comm_id = kCommWorld;
      l.comm_index = 0;
      l.peer = send ? (r + 1) % 4 : (r + 3) % 4;
      l.is_send = send;
      l.op_index = d.events.back().index;
      l.op_steps = 6;
      l.op_base = 48;
      l.planned = 54;
      l.posted = l.moved = l.done = 52;
      l.op_start_ns = kT0 + 20 * kSecond;
      l.posted_ns = l.moved_ns = l.done_ns = kT0 + 20 * kSecond + kSecond / 10;
      if (r == 1 && send) l.moved_ns = kT0 + 20 * kSecond + 3 * kSecond / 10;
      if (r == 2 && !send) {
        l.moved = l.done = 50;
        l.moved_ns = kT0 + 20 * kSecond + 2 * kSecond / 10;
      }
      d.links.push_back(l);
    }
    addRank(&s, d);
  }
  analyze(&s);
  return s;
}

Snapshot manyRanksSnapshot(int n) {
  Snapshot s;
  s.now_ns = kT0 + 200 * kSecond;
  s.source_label = "many";
  for (int r = 0; r < n; ++r) {
    format::RankData d = makeRank(r, n, r < n / 2 ? "node0" : "node1", kCommWorld, 100 - r % 7, 0);
    d.heartbeat_ns = s.now_ns - kSecond / 10;
    addRank(&s, d);
  }
  analyze(&s);
  return s;
}

}  // namespace ncclrec::live::testing
