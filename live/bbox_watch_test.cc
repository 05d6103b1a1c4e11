#include "live/bbox_watch.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>

#include "format/bbox_links.h"
#include "format/bbox_ring.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"
#include "live/testing/live_bbox.h"

namespace ncclrec::live {
namespace {

using format::EventState;
using format::OpType;
using format::testing::BboxBuilder;
using format::testing::makeCollective;
using format::testing::TempDir;
using testing::LiveBbox;

constexpr uint64_t kComm = 0xc0ffee0000000001ull;
constexpr int64_t kNow = 1'700'000'100'000'000'000;
const std::string kHost = "thishost";

BboxBuilder identity(int rank, int pid, format::testing::BboxCapacities caps = {}) {
  BboxBuilder b(caps);
  b.header()->pid = pid;
  b.header()->global_rank = rank;
  b.header()->world_size = 4;
  b.header()->local_rank = rank;
  b.header()->heartbeat_ns = kNow;
  std::strcpy(b.header()->host, kHost.c_str());
  std::strcpy(b.header()->exe, "/bin/train");
  std::strcpy(b.header()->run_id, "run1");
  return b;
}

format::Event collective(uint64_t seq, EventState state = EventState::kCompleted) {
  format::Event e = makeCollective(OpType::kAllReduce, kComm, 0, 4, seq, 64, kNow - 1000 + seq);
  e.state = static_cast<uint8_t>(state);
  if (state != EventState::kCompleted) e.end_ns = 0;
  return e;
}

format::CommRecord commRecord(int rank) {
  format::CommRecord c{};
  c.comm_id = kComm;
  c.rank = rank;
  c.nranks = 4;
  return c;
}

std::unique_ptr<BboxWatch> openOk(const std::string& path) {
  auto w = BboxWatch::open(path);
  EXPECT_TRUE(w.ok()) << w.status().message();
  return w.ok() ? std::move(w).value() : nullptr;
}

TEST(BboxWatch, ReadsIdentityEventsAndComms) {
  TempDir dir;
  BboxBuilder b = identity(2, 4242);
  format::CommRecord c{};
  c.comm_id = kComm;
  c.rank = 2;
  c.nranks = 4;
  c.coll_seq = 3;
  std::strcpy(c.name, "world");
  b.addComm(c);
  for (uint64_t s = 1; s <= 3; ++s) b.addEvent(collective(s));
  ASSERT_TRUE(b.writeTo(dir.file("a.bbox")));

  auto w = openOk(dir.file("a.bbox"));
  ASSERT_NE(w, nullptr);
  w->refresh(kNow, kHost);
  const RankEntry& e = w->entry();
  EXPECT_EQ(e.global_rank, 2);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.host, kHost);
  EXPECT_EQ(e.exe, "/bin/train");
  EXPECT_EQ(e.run_id, "run1");
  EXPECT_EQ(e.liveness, Liveness::kAlive);
  ASSERT_EQ(e.history->ops.size(), 3u);
  EXPECT_EQ(e.history->ops[2].op_seq, 3u);
  EXPECT_EQ(e.history->ops[2].op, OpType::kAllReduce);
  ASSERT_EQ(e.history->comms.size(), 1u);
  EXPECT_EQ(e.history->comms[0].name, "world");
  EXPECT_EQ(e.history->comms[0].coll_seq, 3u);
  EXPECT_EQ(e.history->events_total, 3u);
}

TEST(BboxWatch, RereadsOnlyWhatChangedAndSharesAnUnchangedHistory) {
  TempDir dir;
  BboxBuilder b = identity(0, 1);
  auto live = LiveBbox::create(dir.file("a.bbox"), b);
  ASSERT_NE(live, nullptr);
  const uint32_t ci = live->addComm(commRecord(0));
  live->addEvent(collective(1));
  const uint64_t pending = live->addEvent(collective(2, EventState::kEnqueued));

  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);
  const auto first = w->entry().history;
  ASSERT_EQ(first->ops.size(), 2u);
  EXPECT_TRUE(first->ops[1].incomplete());

  // Only the heartbeat moved: the same history object.
  live->header()->heartbeat_ns = kNow + 5;
  w->refresh(kNow + 10, kHost);
  EXPECT_EQ(w->entry().history, first);
  EXPECT_EQ(w->entry().heartbeat_ns, kNow + 5);

  // The pending op completes in place, and the comm's live counter moves.
  format::atomicField(live->slot(pending)->end_ns).store(kNow + 7);
  format::atomicField(live->slot(pending)->state)
      .store(static_cast<uint8_t>(EventState::kCompleted));
  format::atomicField(live->comm(ci)->coll_seq).store(uint64_t{2});
  w->refresh(kNow + 20, kHost);
  const auto second = w->entry().history;
  EXPECT_NE(second, first);
  EXPECT_EQ(second->ops[1].state, EventState::kCompleted);
  EXPECT_EQ(second->ops[1].end_ns, kNow + 7);
  EXPECT_EQ(second->comms[0].coll_seq, 2u);
  EXPECT_EQ(first->ops[1].state, EventState::kEnqueued);  // the old snapshot's copy is untouched

  live->addEvent(collective(3));
  w->refresh(kNow + 30, kHost);
  EXPECT_EQ(w->entry().history->ops.size(), 3u);
  EXPECT_EQ(w->entry().history->ops.back().op_seq, 3u);
}

TEST(BboxWatch, KeepsTheMostRecentOpsWhenTheRingLapsBetweenRefreshes) {
  TempDir dir;
  format::testing::BboxCapacities caps;
  caps.ring = 256;
  auto live = LiveBbox::create(dir.file("a.bbox"), identity(0, 1, caps));
  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);
  for (uint64_t s = 1; s <= 1000; ++s) live->addEvent(collective(s));
  w->refresh(kNow, kHost);
  const auto& ops = w->entry().history->ops;
  ASSERT_EQ(ops.size(), kRecentOps);
  EXPECT_EQ(ops.front().op_seq, 1000 - kRecentOps + 1);
  EXPECT_EQ(ops.back().op_seq, 1000u);
  EXPECT_EQ(w->entry().history->events_lost, 1000u - 256u);
}

TEST(BboxWatch, AnEventBeingWrittenIsPickedUpOncePublished) {
  TempDir dir;
  auto live = LiveBbox::create(dir.file("a.bbox"), identity(0, 1));
  live->addEvent(collective(1));
  const uint64_t busy = live->beginEvent(collective(2));
  live->addEvent(collective(3));
  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);
  ASSERT_EQ(w->entry().history->ops.size(), 2u);
  EXPECT_EQ(w->entry().history->ops[1].op_seq, 3u);
  live->publish(busy);
  w->refresh(kNow, kHost);
  ASSERT_EQ(w->entry().history->ops.size(), 3u);
  EXPECT_EQ(w->entry().history->ops[1].op_seq, 2u);  // in index order
}

TEST(BboxWatch, CommRecordsAppearWhenPublished) {
  TempDir dir;
  auto live = LiveBbox::create(dir.file("a.bbox"), identity(0, 1));
  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);
  EXPECT_TRUE(w->entry().history->comms.empty());
  // Claimed but not valid yet: not read.
  live->header()->comm_count = 1;
  w->refresh(kNow, kHost);
  EXPECT_TRUE(w->entry().history->comms.empty());
  live->header()->comm_count = 0;
  live->addComm(commRecord(0));
  w->refresh(kNow, kHost);
  ASSERT_EQ(w->entry().history->comms.size(), 1u);
}

TEST(BboxWatch, StacksResolveTheirModules) {
  TempDir dir;
  BboxBuilder b = identity(0, 1);
  b.addModule("/opt/train", 0x400000, 0x10000, {0xab});
  const uint32_t sid = b.addStack({0x401234, 0x7f0000000000});
  format::Event e = collective(1);
  e.stack_id = sid;
  b.addEvent(e);
  ASSERT_TRUE(b.writeTo(dir.file("a.bbox")));
  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);
  const auto& stacks = *w->entry().history->stacks;
  ASSERT_EQ(stacks.count(sid), 1u);
  const format::Stack& s = stacks.at(sid);
  ASSERT_EQ(s.frames.size(), 2u);
  EXPECT_EQ(s.frames[0].module, "/opt/train");
  EXPECT_EQ(s.frames[0].module_offset, 0x1234u);
  EXPECT_EQ(s.frames[1].module, "");  // in no module
  EXPECT_EQ(s.frames[1].address, 0x7f0000000000u);
}

// Writes a thread snapshot the way the recorder does: under the sequence word.
void writeThreads(format::BboxHeader* h, const std::vector<format::ThreadRecord>& records,
                  int64_t taken_ns, format::DumpReason reason) {
  h->threads_seq += 1;
  std::copy(records.begin(), records.end(), format::threadRecords(h));
  h->thread_count = static_cast<uint32_t>(records.size());
  h->threads_ns = taken_ns;
  h->threads_reason = static_cast<uint32_t>(reason);
  h->threads_seq += 1;
}

format::ThreadRecord threadRecord(int tid, const char* comm, std::vector<uint64_t> frames) {
  format::ThreadRecord r{};
  r.tid = tid;
  r.status = format::kThreadAnswered;
  r.kernel_state = 'S';
  std::strncpy(r.comm, comm, sizeof(r.comm) - 1);
  r.native_depth = static_cast<uint32_t>(frames.size());
  std::copy(frames.begin(), frames.end(), r.frames);
  return r;
}

TEST(BboxWatch, ReadsTheLatestThreadSnapshotWhenANewOneWasTaken) {
  TempDir dir;
  format::testing::BboxCapacities caps;
  caps.threads = 4;
  BboxBuilder b = identity(0, 1, caps);
  b.addModule("/opt/train", 0x400000, 0x10000, {0xab});
  auto live = LiveBbox::create(dir.file("a.bbox"), b);
  ASSERT_NE(live, nullptr);
  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);
  EXPECT_EQ(w->entry().threads, nullptr);  // none taken yet

  writeThreads(live->header(),
               {threadRecord(1, "train", {0x401234}), threadRecord(7, "loader", {})}, kNow - 5,
               format::DumpReason::kSnapshot);
  w->refresh(kNow, kHost);
  const std::shared_ptr<const ThreadsView> first = w->entry().threads;
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->taken_ns, kNow - 5);
  EXPECT_EQ(first->reason, format::DumpReason::kSnapshot);
  ASSERT_EQ(first->threads.size(), 2u);
  EXPECT_EQ(first->threads[0].tid, 1);
  EXPECT_EQ(first->threads[0].name, "train");
  EXPECT_EQ(first->threads[0].kernel_state, 'S');
  ASSERT_EQ(first->threads[0].frames.size(), 1u);
  EXPECT_EQ(first->threads[0].frames[0].module, "/opt/train");
  EXPECT_EQ(first->threads[0].frames[0].module_offset, 0x1234u);
  EXPECT_EQ(first->threads[1].name, "loader");

  w->refresh(kNow, kHost);  // unchanged: the same view, not read again
  EXPECT_EQ(w->entry().threads, first);

  live->header()->threads_seq += 1;  // being rewritten: the old snapshot stays
  w->refresh(kNow, kHost);
  EXPECT_EQ(w->entry().threads, first);
  live->header()->threads_seq -= 1;

  writeThreads(live->header(), {threadRecord(9, "worker", {})}, kNow, format::DumpReason::kHang);
  w->refresh(kNow, kHost);
  ASSERT_NE(w->entry().threads, first);
  ASSERT_EQ(w->entry().threads->threads.size(), 1u);
  EXPECT_EQ(w->entry().threads->threads[0].tid, 9);
  EXPECT_EQ(w->entry().threads->reason, format::DumpReason::kHang);
}

TEST(BboxWatch, MarksAndLiveness) {
  TempDir dir;
  auto live = LiveBbox::create(dir.file("a.bbox"), identity(0, 1));
  auto w = openOk(dir.file("a.bbox"));
  live->header()->fatal_signal = SIGSEGV;
  w->refresh(kNow, kHost);
  EXPECT_EQ(w->entry().liveness, Liveness::kCrashed);
  live->header()->exited = 1;
  live->header()->exit_ns = kNow;
  w->refresh(kNow, kHost);
  EXPECT_EQ(w->entry().liveness, Liveness::kExited);
}

TEST(BboxWatch, ARankOfThisHostWhoseProcessIsGoneAndOneOfAnotherHostThatWentQuiet) {
  TempDir dir;
  const pid_t child = fork();
  if (child == 0) _exit(0);
  ASSERT_GT(child, 0);
  waitpid(child, nullptr, 0);  // reaped: nothing has its pid now (pids are not reused at once)
  auto gone = LiveBbox::create(dir.file("gone.bbox"), identity(0, child));
  auto w = openOk(dir.file("gone.bbox"));
  w->refresh(kNow + 5'000'000'000, kHost);
  EXPECT_EQ(w->entry().liveness, Liveness::kGone);
  w->refresh(kNow + 500'000'000, kHost);  // a fresh heartbeat: alive again
  EXPECT_EQ(w->entry().liveness, Liveness::kAlive);

  auto mine = LiveBbox::create(dir.file("me.bbox"), identity(1, getpid()));
  auto me = openOk(dir.file("me.bbox"));
  me->refresh(kNow + 5'000'000'000, kHost);
  EXPECT_EQ(me->entry().liveness, Liveness::kAlive);  // the pid runs (this test)

  // The same process gone after a dump: stopped after it (cxxrun stops a hung job's ranks so).
  gone->header()->dump_count = 1;
  gone->header()->last_dump_reason = static_cast<uint32_t>(format::DumpReason::kHang);
  gone->header()->last_dump_ns = kNow;
  w->refresh(kNow + 5'000'000'000, kHost);
  EXPECT_EQ(w->entry().liveness, Liveness::kStopped);
  EXPECT_EQ(w->entry().last_dump_ns, kNow);
  EXPECT_EQ(w->entry().last_dump_reason, format::DumpReason::kHang);

  me->refresh(kNow + 30'000'000'000, "otherhost");
  EXPECT_EQ(me->entry().liveness, Liveness::kStale);
  me->refresh(kNow + 1'000'000'000, "otherhost");
  EXPECT_EQ(me->entry().liveness, Liveness::kAlive);
}

// Issue 31: a silent rank of this host whose process is there but stopped (SIGSTOP) runs none of
// its code, its watchdog included: not running, with what /proc says; a zombie has ended.
TEST(BboxWatch, ASilentRankOfThisHostWhoseProcessIsStoppedIsNotRunning) {
  TempDir dir;
  const pid_t child = fork();
  if (child == 0) {
    for (;;) pause();
  }
  ASSERT_GT(child, 0);
  kill(child, SIGSTOP);
  auto box = LiveBbox::create(dir.file("stopped.bbox"), identity(0, child));
  auto w = openOk(dir.file("stopped.bbox"));
  Liveness seen = Liveness::kAlive;
  // The stop is asynchronous; /proc is read again once a second of the snapshots' clock.
  for (int i = 0; i < 200 && seen != Liveness::kNotRunning; ++i) {
    w->refresh(kNow + 5'000'000'000 + i * 1'000'000'000LL, kHost);
    seen = w->entry().liveness;
    if (seen != Liveness::kNotRunning) usleep(10'000);
  }
  EXPECT_EQ(seen, Liveness::kNotRunning);
  EXPECT_EQ(w->entry().process_state, 'T');
  EXPECT_EQ(livenessName(seen), "not running");
  w->refresh(kNow + 500'000'000, kHost);  // a fresh heartbeat: it runs again
  EXPECT_EQ(w->entry().liveness, Liveness::kAlive);
  EXPECT_EQ(w->entry().process_state, 0);
  kill(child, SIGKILL);  // a zombie until reaped: ended, not alive
  for (int i = 0; i < 200 && w->entry().liveness != Liveness::kGone; ++i) {
    w->refresh(kNow + 500'000'000'000 + i * 1'000'000'000LL, kHost);
    if (w->entry().liveness != Liveness::kGone) usleep(10'000);
  }
  EXPECT_EQ(w->entry().liveness, Liveness::kGone);
  waitpid(child, nullptr, 0);
}

TEST(BboxWatch, RejectsWhatIsNotABlackBox) {
  TempDir dir;
  bool starting = true;
  auto missing = BboxWatch::open(dir.file("none.bbox"), &starting);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("none.bbox: "), std::string::npos);

  std::ofstream(dir.file("empty.bbox")).flush();
  auto empty = BboxWatch::open(dir.file("empty.bbox"), &starting);
  ASSERT_FALSE(empty.ok());
  EXPECT_TRUE(starting);

  std::ofstream(dir.file("foreign.bbox")) << std::string(8192, 'x');
  auto foreign = BboxWatch::open(dir.file("foreign.bbox"), &starting);
  ASSERT_FALSE(foreign.ok());
  EXPECT_FALSE(starting);
  EXPECT_EQ(foreign.status().message(),
            dir.file("foreign.bbox") + ": not an ncclrec black box (bad magic)");

  std::ofstream(dir.file("blank.bbox")) << std::string(8192, '\0');
  auto blank = BboxWatch::open(dir.file("blank.bbox"), &starting);
  ASSERT_FALSE(blank.ok());
  EXPECT_TRUE(starting);

  BboxBuilder b = identity(0, 1);
  ASSERT_TRUE(b.writeTo(dir.file("full.bbox")));
  ::truncate(dir.file("full.bbox").c_str(), 8192);
  auto truncated = BboxWatch::open(dir.file("full.bbox"), &starting);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("truncated black box"), std::string::npos);

  BboxBuilder newer = identity(0, 1);
  newer.header()->version = format::kBboxVersion + 1;
  ASSERT_TRUE(newer.writeTo(dir.file("newer.bbox")));
  auto v = BboxWatch::open(dir.file("newer.bbox"));
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("newer than this build reads"), std::string::npos);

  BboxBuilder odd = identity(0, 1);
  odd.header()->ring_capacity = 12;
  ASSERT_TRUE(odd.writeTo(dir.file("odd.bbox")));
  auto o = BboxWatch::open(dir.file("odd.bbox"));
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("not a power of two"), std::string::npos);
}

// The transport counters are read while the rank waits in a call (for a second or more), with
// their communicator's id, and dropped once it waits no more.
TEST(BboxWatch, ReadsTheLinkTableWhileTheRankWaits) {
  TempDir dir;
  format::testing::BboxCapacities caps;
  caps.links = 16;
  BboxBuilder b = identity(0, 1, caps);
  b.addComm(commRecord(0));
  b.addEvent(collective(1));
  auto live = LiveBbox::create(dir.file("a.bbox"), b);
  ASSERT_NE(live, nullptr);
  const uint64_t waiting = live->addEvent(collective(2, EventState::kStarted));
  format::LinkRecord* r = format::findOrClaimLink(live->header(), 0, 1, 3, true);
  ASSERT_NE(r, nullptr);
  format::linkOpStarted(r, waiting, 4, kNow);
  for (int i = 0; i < 3; ++i) format::linkStepMoved(r, kNow + i);

  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);  // in the call for a microsecond: not waiting yet
  EXPECT_EQ(w->entry().links, nullptr);
  w->refresh(kNow + 2'000'000'000, kHost);
  ASSERT_NE(w->entry().links, nullptr);
  ASSERT_EQ(w->entry().links->size(), 1u);
  const format::Link& l = w->entry().links->front();
  EXPECT_EQ(l.comm_id, kComm);
  EXPECT_EQ(l.peer, 3);
  EXPECT_EQ(l.channel, 1);
  EXPECT_TRUE(l.is_send);
  EXPECT_EQ(l.op_index, waiting);
  EXPECT_EQ(l.moved, 3u);
  EXPECT_EQ(l.opSteps(l.moved), 3u);
  // Unchanged counters keep the same vector; a step moved replaces it.
  const auto before = w->entry().links;
  w->refresh(kNow + 2'500'000'000, kHost);
  EXPECT_EQ(w->entry().links, before);
  format::linkStepMoved(r, kNow + 3);
  w->refresh(kNow + 3'000'000'000, kHost);
  ASSERT_NE(w->entry().links, nullptr);
  EXPECT_NE(w->entry().links, before);
  EXPECT_EQ(w->entry().links->front().moved, 4u);
  // The call completed: nothing to show.
  live->slot(waiting)->state = static_cast<uint8_t>(EventState::kCompleted);
  live->slot(waiting)->end_ns = kNow + 3;
  w->refresh(kNow + 4'000'000'000, kHost);
  EXPECT_EQ(w->entry().links, nullptr);
}

TEST(BboxWatch, SurvivesAHeaderWhoseCountersLie) {
  TempDir dir;
  auto live = LiveBbox::create(dir.file("a.bbox"), identity(0, 1));
  live->header()->comm_count = 0xffffffffu;
  live->header()->module_count = 0xffffffffu;
  live->header()->write_index = 0xffffffffffffull;
  auto w = openOk(dir.file("a.bbox"));
  w->refresh(kNow, kHost);  // reads only within the tables' capacities
  EXPECT_LE(w->entry().history->ops.size(), kRecentOps);
}

}  // namespace
}  // namespace ncclrec::live
