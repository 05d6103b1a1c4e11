// The headlines of headlines_liveness.h: why a process does not run, a rank stopped inside an op
// every rank entered, a connection that stopped moving data and the path it suspects, a GPU that
// never started or never finished its kernel, ranks that share one GPU, and silent nodes, in words.
#include "analyzer/headlines_liveness.h"

#include <gtest/gtest.h>

#include "analyzer/testing/call_site.h"

namespace ncclrec::analyzer {
namespace {

using format::OpType;

constexpr uint64_t kComm = 0xc0ffee0000000001ull;

// The verdict of a hang inside ncclAllReduce #6 on comm c0ffee00 from trainStep() train.cc:40.
Verdict inside(std::vector<int> ranks, std::vector<int> waiting) {
  Verdict v;
  v.ranks = std::move(ranks);
  v.waiting = std::move(waiting);
  v.comm_id = kComm;
  v.op = OpType::kAllReduce;
  v.seq = 6;
  v.site = testing::trainAt("trainStep", 40);
  return v;
}
const std::string kOp = "ncclAllReduce #6 on comm c0ffee00 from trainStep() train.cc:40";

// 10:32:27.400 UTC on 2026-11-28, in ns since the epoch.
constexpr int64_t kClock = 1795861947400000000;

TEST(LivenessHeadlinesTest, WhyAProcessDoesNotRunSaysWhatWasSeen) {
  NotRunning n;
  EXPECT_FALSE(n.said());
  EXPECT_EQ(notRunningPhrase(n), "");
  n.process_state = 'S';  // the launcher saw it run
  EXPECT_FALSE(n.said());
  EXPECT_EQ(notRunningPhrase(n), "");
  n.process_state = 'T';
  EXPECT_TRUE(n.said());
  EXPECT_EQ(notRunningPhrase(n),
            "its process is stopped (SIGSTOP, a debugger or a job-control stop)");
  n.process_state = 't';
  EXPECT_EQ(notRunningPhrase(n), "its process is stopped by a debugger (traced)");
  n.process_state = 'D';
  EXPECT_EQ(notRunningPhrase(n),
            "its process is in uninterruptible sleep in the kernel (a device, a driver or a "
            "filesystem that does not answer)");
  n.wchan = "io_schedule";
  n.silent_ns = 9'000'000'000;  // a launcher saw it: not "frozen or killed"
  EXPECT_EQ(notRunningPhrase(n),
            "its process is in uninterruptible sleep in io_schedule (a device, a driver or a "
            "filesystem that does not answer), no heartbeat for 9.0s and no dump");

  NotRunning t;  // no launcher: its own dump's thread snapshot
  t.thread = 4242;
  t.wchan = "pipe_read";
  EXPECT_TRUE(t.said());
  EXPECT_EQ(notRunningPhrase(t),
            "its thread that calls NCCL (4242) was in uninterruptible sleep in pipe_read when it "
            "dumped");
  t.wchan.clear();
  EXPECT_EQ(notRunningPhrase(t),
            "its thread that calls NCCL (4242) was in uninterruptible sleep when it dumped");

  NotRunning silent;  // no launcher, no dump, a black box that stopped beating
  silent.silent_ns = 4'100'000'000;
  EXPECT_TRUE(silent.said());
  EXPECT_EQ(notRunningPhrase(silent),
            "no heartbeat for 4.1s and no dump (frozen or killed: no launcher saw its process)");
}

TEST(LivenessHeadlinesTest, ARankStoppedInsideTheOpNamesItAndWhoWaits) {
  NotRunning why;
  why.process_state = 'T';
  EXPECT_EQ(stoppedInsideHeadline(inside({3}, {0, 1, 2}), why),
            "rank 3 stopped running inside " + kOp +
                ", which every rank issued with the same arguments: its process is stopped "
                "(SIGSTOP, a debugger or a job-control stop); ranks 0-2 wait for it in #6");
  EXPECT_EQ(stoppedInsideHeadline(inside({2, 3}, {1}), why),
            "ranks 2-3 stopped running inside " + kOp +
                ", which every rank issued with the same arguments: its process is stopped "
                "(SIGSTOP, a debugger or a job-control stop); rank 1 waits for it in #6");
}

TransportStall stall() {
  TransportStall s;
  s.from = {2, "a"};
  s.to = {3, "b"};
  s.lost = 3;
  s.channel = 0;
  s.last_sent_ns = kClock;
  s.op_received = 5;
  s.op_steps = 8;
  s.quiet_ns = 9'800'000'000;
  s.paths = {{"a", "b"}};
  return s;
}

TEST(LivenessHeadlinesTest, AStalledConnectionNamesBothEndsTheStepsAndThePath) {
  EXPECT_EQ(rankHostPhrase({2, "a"}), "rank 2 (host a)");
  EXPECT_EQ(rankHostPhrase({2, ""}), "rank 2");
  EXPECT_EQ(transportStalledHeadline(inside({2, 3}, {0, 1}), stall()),
            "data stopped moving between rank 2 (host a) and rank 3 (host b) inside " + kOp +
                ", which every rank issued with the same arguments: rank 2 sent 3 steps on "
                "channel 0 that rank 3 never received (its last send at 10:32:27.400 UTC); rank "
                "3 has 5 of the 8 steps of #6 and received nothing for 9.8s; ranks 0-1 wait "
                "behind it; suspect the network path a -> b");
  // A ring whose other ranks got through, one step, the op's steps unknown, two more
  // connections, nobody else waiting, both directions between the hosts.
  TransportStall s = stall();
  s.straddle = true;
  s.lost = 1;
  s.op_steps = 0;
  s.more = 2;
  s.paths = {{"a", "b"}, {"b", "a"}};
  EXPECT_EQ(transportStalledHeadline(inside({0, 1, 2, 3}, {}), s),
            "data stopped moving between rank 2 (host a) and rank 3 (host b) inside " + kOp +
                " (the ranks that got all their data are in the next one): rank 2 sent 1 step on "
                "channel 0 that rank 3 never received (its last send at 10:32:27.400 UTC); rank "
                "3 received nothing for 9.8s; 2 more connections stalled so; suspect the network "
                "between a and b (both directions stalled)");
}

TEST(LivenessHeadlinesTest, TheSuspectPathIsWhatTheStalledConnectionsShare) {
  const auto suspect = [](std::set<std::pair<std::string, std::string>> paths, size_t more) {
    TransportStall s = stall();
    s.paths = std::move(paths);
    s.more = more;
    const std::string h = transportStalledHeadline(inside({2, 3}, {}), s);
    return h.substr(h.find("; suspect ") + 10);
  };
  EXPECT_EQ(suspect({{"a", "a"}}, 0), "the path between the two processes on host a");
  EXPECT_EQ(suspect({{"", "b"}}, 0), "the path between them (their hosts are not recorded)");
  EXPECT_EQ(suspect({{"a", "b"}, {"c", "d"}}, 1), "the network of hosts a, b, c, d");
  EXPECT_EQ(suspect({{"a", "b"}, {"a", "c"}, {"b", "a"}}, 2), "the network of hosts a, b, c");
}

TEST(LivenessHeadlinesTest, AStalledGpuIsNamedByRankHostAndBus) {
  DeviceStall s;
  s.gpus = {{{3, "vm"}, ""}};
  s.ago_ns = 9'000'000'000;
  const std::string suspect_one =
      "; suspect that GPU or its stream: a kernel queued before it that does not end, or a GPU "
      "that stopped (Xid errors in the kernel log)";
  EXPECT_EQ(deviceStalledHeadline(inside({3}, {0, 1, 2}), s),
            "the GPU of rank 3 (host vm; its bus id is not recorded) never started the kernel of " +
                kOp +
                ", launched 9.0s ago, while the GPUs of ranks 0-2 run theirs; ranks 0-2 wait "
                "for it in #6" +
                suspect_one);
  s.how = DeviceStall::How::kQueuedBehind;
  s.queued = 4;
  s.gpus = {{{3, ""}, "0000:3b:00.0"}};
  EXPECT_EQ(deviceStalledHeadline(inside({3}, {1}), s),
            "the GPU of rank 3 (bus 0000:3b:00.0) never started the kernel of " + kOp +
                ", issued 9.0s ago: it runs no kernel channel of the communicator while 4 "
                "launched channels wait (ops launched behind it), and the GPUs of rank 1 run "
                "theirs; rank 1 waits for it" +
                suspect_one);
  s.how = DeviceStall::How::kNeverFinished;
  s.started_ns = kClock;
  s.gpus = {{{2, "vm"}, "0000:1a:00.0"}, {{3, "vm"}, ""}};
  EXPECT_EQ(deviceStalledHeadline(inside({2, 3}, {0, 1}), s),
            "the GPU of rank 2 (host vm, bus 0000:1a:00.0) and the GPU of rank 3 (host vm; its "
            "bus id is not recorded) started the kernel of " +
                kOp +
                " at 10:32:27.400 UTC and it never finished, though every step sent to them "
                "arrived, while ranks 0-1 finished theirs and wait in the next one; suspect those "
                "GPUs");
  s.how = DeviceStall::How::kNeverStarted;
  EXPECT_NE(deviceStalledHeadline(inside({2, 3}, {0, 1}), s)
                .find("ranks 0-1 wait for them in #6; suspect those GPUs or their stream"),
            std::string::npos);
}

TEST(LivenessHeadlinesTest, RanksSharingOneGpuAreGroupedByHost) {
  Verdict v = inside({0, 1, 2, 3}, {});
  v.op = OpType::kCommInitRank;
  v.site = testing::knownSite("initProcessGroup", "/src/main.cc", 41);
  const std::string refused =
      ": ncclCommInitRank on comm c0ffee00 from initProcessGroup() main.cc:41 was refused as "
      "invalid usage (NCCL: \"Duplicate GPU detected\"); set the device from LOCAL_RANK before "
      "creating the communicator";
  SharedGpu same{{0, 1, 2}, "h", {0}, "bus 0000:1a:00.0"};
  SharedGpu visible{{4, 5}, "g", {0, 1}, "GPU-8f2e"};
  EXPECT_EQ(deviceCollisionHeadline(v, {same, visible}),
            "ranks 0-2 on host h all use device 0 (bus 0000:1a:00.0); ranks 4-5 on host g both "
            "use one GPU (GPU-8f2e; device 0-1 in their own numbering, through "
            "CUDA_VISIBLE_DEVICES)" +
                refused);
  same.id.clear();
  EXPECT_EQ(deviceCollisionHeadline(v, {same}), "ranks 0-2 on host h all use device 0" + refused);
}

TEST(LivenessHeadlinesTest, SilentNodesAreNamedWithTheirRanksAndWhoWaits) {
  Verdict v = inside({2, 3}, {0, 1});
  Unreachable u;
  u.nodes = {{1, "nodeb", {2, 3}, 3.04}};
  EXPECT_EQ(nodeUnreachableHeadline(v, u),
            "node 1 (host nodeb, ranks 2-3) not heard from for 3.0 s; ranks 0-1 wait for them in "
            "ncclAllReduce #6 on comm c0ffee00 and agree on every op before it: the network "
            "between node 1 and node 0 stopped, or that node did");
  EXPECT_EQ(nodeUnreachableMissing(v, u),
            "node 0 could neither hear nor read that node: the black boxes there (NCCLREC_DIR on "
            "that host) show whether ranks 2-3 still ran; if they did, the network between the "
            "nodes stopped (the hosts' kernel logs and NCCL_DEBUG=INFO say more)");
  v = inside({2}, {0});
  u.nodes = {{1, "nodeb", {2}, 3.0}};
  u.ahead = {1};
  u.no_data = {3};
  EXPECT_EQ(nodeUnreachableHeadline(v, u),
            "node 1 (host nodeb, rank 2) not heard from for 3.0 s; rank 0 waits for it in "
            "ncclAllReduce #6 on comm c0ffee00 (rank 1 got through it and waits in #7) and agree "
            "on every op before it: the network between node 1 and node 0 stopped, or that node "
            "did; no data for rank 3");
  v = inside({2, 4}, {0, 1});
  u.nodes = {{1, "b", {2}, 3.0}, {2, "c", {4}, 5.5}};
  u.ahead.clear();
  u.no_data.clear();
  EXPECT_EQ(nodeUnreachableHeadline(v, u),
            "node 1 (host b, rank 2) not heard from for 3.0 s, node 2 (host c, rank 4) not heard "
            "from for 5.5 s; ranks 0-1 wait for them in ncclAllReduce #6 on comm c0ffee00 and "
            "agree on every op before it: the network between those nodes and node 0 stopped, or "
            "those nodes did");
  EXPECT_EQ(nodeUnreachableMissing(v, u).substr(0, 70),
            "node 0 could neither hear nor read those nodes: the black boxes there ");
}

}  // namespace
}  // namespace ncclrec::analyzer
