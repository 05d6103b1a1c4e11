// Completion on a GPU, proved on the CPU: hostnccl ranks under the preloaded shim with the fake
// CUDA driver, which counts the end markers (testing/completion_worker.cc checks each op live).
// - Nonblocking communicators: an op whose call or ncclGroupEnd returned ncclInProgress gets its
//   marker only once ncclCommGetAsyncError settled (recorder/in_progress.h).
// - NCCLREC_COMPLETION=auto: the shim becomes NCCL's profiler plugin; ops NCCL runs with kernel
//   channels are timed by it (no marker), a 1-rank communicator's ops by a marker; with
//   NCCL_PROFILER_PLUGIN=none, markers as before.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/bbox_layout.h"
#include "interpose/testing/shim_harness.h"

namespace ncclrec::interpose::testing {
namespace {

using format::EventState;
using format::OpType;

class CompletionTest : public ::testing::Test {
 protected:
  // Runs the worker's `scenario` on two ranks; every rank must exit 0. Returns the black boxes.
  std::vector<format::RankData> run(const std::string& scenario, Env env) {
    // The harness's default is host completion; these tests are about the others.
    env.emplace("NCCLREC_COMPLETION", "auto");
    env.emplace("NCCLREC_CUDA_LIBRARY", NCCLREC_TEST_FAKE_CUDA);
    env.emplace("NCCLREC_POLL_MS", "5");
    // hostnccl, not the stub NCCL that the harness puts first.
    env.emplace("LD_LIBRARY_PATH", NCCLREC_TEST_HOSTNCCL_DIR);
    // A fresh folder for the unique ids of each run.
    const std::string ids = shim_.scratch().path() + "/ids" + std::to_string(++runs_);
    EXPECT_EQ(mkdir(ids.c_str(), 0700), 0) << ids;
    std::vector<std::unique_ptr<support::Process>> ranks;
    for (int r = 0; r < 2; ++r) {
      support::SpawnOptions o = shim_.options(
          {NCCLREC_TEST_COMPLETION_WORKER, scenario, std::to_string(r), "2", ids}, env);
      if (env.count("NCCL_PROFILER_PLUGIN") == 0) o.unset_env.push_back("NCCL_PROFILER_PLUGIN");
      std::string error;
      ranks.push_back(support::Process::start(o, &error));
      if (ranks.back() == nullptr) ADD_FAILURE() << "cannot start the worker: " << error;
    }
    std::vector<format::RankData> boxes;
    for (auto& p : ranks) {
      if (p == nullptr) continue;
      const support::ProcessResult res = p->wait(kRunTimeout);
      EXPECT_TRUE(res.exitedWith(0)) << scenario << ": " << res.describe();
      boxes.push_back(shim_.blackBox(p->pid()));
    }
    return boxes;
  }

  ShimHarness shim_;
  int runs_ = 0;
};

// The collectives and p2p ops of `box` on communicators of `nranks` ranks.
std::vector<format::EventRecord> opsOn(const format::RankData& box, int nranks) {
  std::vector<format::EventRecord> out;
  for (const format::EventRecord& e : box.events) {
    if (e.nranks() == nranks && (format::isCollective(e.op) || format::isP2p(e.op)))
      out.push_back(e);
  }
  return out;
}

TEST_F(CompletionTest, NonblockingOpsGetTheirMarkerOnlyAfterTheCommunicatorSettles) {
  for (const format::RankData& box :
       run("nonblocking", {{"NCCLREC_COMPLETION", "cuda"}, {"MARKERS_PER_OP", "1"}})) {
    const auto ops = opsOn(box, 2);
    EXPECT_EQ(ops.size(), 1u + 12u + 8u);
    for (const format::EventRecord& e : ops) {
      EXPECT_EQ(e.state, EventState::kCompleted) << e.index;
      EXPECT_NE(e.flags & format::kEventCudaTimed, 0u) << e.index;
    }
  }
}

TEST_F(CompletionTest, NonblockingOpsUnderAutoAreLeftToTheProfilerPlugin) {
  for (const format::RankData& box : run("nonblocking", {{"MARKERS_PER_OP", "0"}})) {
    const auto ops = opsOn(box, 2);
    ASSERT_EQ(ops.size(), 1u + 12u + 8u);
    // The first op by its marker: no kernel channel had reported yet.
    EXPECT_NE(ops[0].flags & format::kEventCudaTimed, 0u);
    EXPECT_EQ(ops[0].flags & format::kEventProfilerTimed, 0u);
    for (const format::EventRecord& e : std::span(ops).subspan(1)) {
      EXPECT_EQ(e.state, EventState::kCompleted) << e.index;
      EXPECT_NE(e.flags & format::kEventProfilerTimed, 0u) << e.index;
      EXPECT_EQ(e.flags & format::kEventCudaTimed, 0u) << e.index;
    }
  }
}

TEST_F(CompletionTest, AutoTimesKernelOpsByThePluginAndOneRankOpsByAMarker) {
  for (const format::RankData& box : run("auto", {{"MARKERS_PER_OP", "0"}})) {
    const auto kernel_ops = opsOn(box, 2), solo_ops = opsOn(box, 1);
    ASSERT_EQ(kernel_ops.size(), 1u + 20u * 3);
    EXPECT_EQ(solo_ops.size(), 20u);
    // The first op by its marker: until a kernel channel reported, the plugin takes none.
    EXPECT_NE(kernel_ops[0].flags & format::kEventCudaTimed, 0u);
    EXPECT_EQ(kernel_ops[0].flags & format::kEventProfilerTimed, 0u);
    for (const format::EventRecord& e : std::span(kernel_ops).subspan(1)) {
      EXPECT_EQ(e.state, EventState::kCompleted) << e.index;
      EXPECT_NE(e.flags & format::kEventProfilerTimed, 0u) << e.index;
      EXPECT_EQ(e.flags & format::kEventCudaTimed, 0u) << e.index;
    }
    for (const format::EventRecord& e : solo_ops) {
      EXPECT_EQ(e.state, EventState::kCompleted) << e.index;
      EXPECT_NE(e.flags & format::kEventCudaTimed, 0u) << e.index;
      EXPECT_EQ(e.flags & format::kEventProfilerTimed, 0u) << e.index;
    }
  }
}

TEST_F(CompletionTest, AutoWithoutThePluginAndExplicitCudaUseMarkersAsBefore) {
  for (const Env& env : {Env{{"NCCL_PROFILER_PLUGIN", "none"}, {"MARKERS_PER_OP", "1"}},
                         Env{{"NCCLREC_COMPLETION", "cuda"}, {"MARKERS_PER_OP", "1"}}}) {
    for (const format::RankData& box : run("auto", env)) {
      const auto ops = opsOn(box, 2);
      EXPECT_EQ(ops.size(), 1u + 20u * 3);
      for (const format::EventRecord& e : ops) {
        EXPECT_EQ(e.state, EventState::kCompleted) << e.index;
        EXPECT_NE(e.flags & format::kEventCudaTimed, 0u) << e.index;
        EXPECT_EQ(e.flags & format::kEventProfilerTimed, 0u) << e.index;
      }
    }
  }
}

}  // namespace
}  // namespace ncclrec::interpose::testing
