// End to end, no GPU: samples/gated_save with 4 ranks on hostnccl under libncclrec.so. Rank 0's
// extra all-reduce in saveCheckpoint() hangs the job; every rank must dump, and the dumps must
// show rank 0 stuck in saveCheckpoint() and ranks 1-3 in trainStep() one collective later.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "format/reader.h"
#include "format/testing/temp_dir.h"
#include "tests/support/process.h"

namespace {

using namespace std::chrono_literals;
using ncclrec::format::EventState;
using ncclrec::format::OpType;

constexpr int kRanks = 4;

// Ranks that wrote a hang or trigger dump. Dumps are named <host>.<pid>.<n>.<reason>.ncclrec.pb
// and one rank may write both kinds, so ranks are counted by their <host>.<pid> prefix.
size_t countDumps(const std::string& dir) {
  std::set<std::string> ranks;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      for (const char* reason : {".hang.ncclrec.pb", ".trigger.ncclrec.pb"}) {
        const size_t at = name.find(reason);
        if (at == std::string::npos) continue;
        const size_t n_dot = name.rfind('.', at - 1);  // the dot before <n>
        if (n_dot != std::string::npos && n_dot > 0) ranks.insert(name.substr(0, n_dot));
      }
    }
    closedir(d);
  }
  return ranks.size();
}

// Innermost symbolized function of an event's stack, "" when none.
std::string callSite(const ncclrec::format::RankData& r, const ncclrec::format::EventRecord& e) {
  const auto it = r.stacks.find(e.stackId());
  if (it == r.stacks.end() || it->second.frames.empty()) return "";
  return it->second.frames[0].function;
}

std::vector<std::unique_ptr<ncclrec::support::Process>> startJob(const std::string& dir,
                                                                 const std::string& save_step) {
  std::vector<std::unique_ptr<ncclrec::support::Process>> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ncclrec::support::SpawnOptions o;
    o.argv = {NCCLREC_SAMPLE_GATED_SAVE, "10", save_step};
    o.ld_preload = NCCLREC_SHIM;
    o.env = {{"RANK", std::to_string(r)},
             {"WORLD_SIZE", std::to_string(kRanks)},
             {"LD_LIBRARY_PATH", NCCLREC_HOSTNCCL_DIR},
             {"NCCLREC_DIR", dir + "/dumps"},
             {"NCCLREC_RUN_ID", "e2e"},
             {"NCCLREC_TIMEOUT", "2"},
             {"NCCLREC_POLL_MS", "100"},
             {"NCCLREC_SAMPLE_ID_FILE", dir + "/unique.id"}};
    std::string error;
    ranks.push_back(ncclrec::support::Process::start(o, &error));
    EXPECT_NE(ranks.back(), nullptr) << error;
  }
  return ranks;
}

TEST(GatedSaveEndToEnd, EveryRankDumpsAndTheStacksShowWhereEachStopped) {
  ncclrec::format::testing::TempDir dir;
  auto ranks = startJob(dir.path(), "5");
  // Every rank dumped, and each one's newest dump holds all it recorded: a rank that dumped on
  // another's trigger before it issued the op it hangs in dumps again on its own hang (until then
  // its black box, which recorded more, is what the reader keeps; CI under load saw rank 0 so).
  const auto current = [&] {
    if (countDumps(dir.path() + "/dumps") < kRanks) return false;
    auto now = ncclrec::format::loadPaths({dir.path() + "/dumps"});
    return now.ok() && now.value().ranks.size() == size_t{kRanks} &&
           std::all_of(now.value().ranks.begin(), now.value().ranks.end(), [](const auto& r) {
             return r.source == ncclrec::format::SourceKind::kDump;
           });
  };
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!current() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(100ms);
  ranks.clear();  // kills the hung job
  auto loaded = ncclrec::format::loadPaths({dir.path() + "/dumps"});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const auto& data = loaded.value().ranks;
  ASSERT_EQ(data.size(), size_t{kRanks});
  for (const auto& r : data) {
    SCOPED_TRACE("rank " + std::to_string(r.global_rank));
    ASSERT_EQ(r.source, ncclrec::format::SourceKind::kDump);
    ASSERT_FALSE(r.events.empty());
    const auto& last = r.events.back();
    EXPECT_EQ(last.op, OpType::kAllReduce);
    EXPECT_EQ(last.state, EventState::kEnqueued);  // the op the rank is stuck in
    EXPECT_EQ(last.op_seq, 7u);
    if (r.global_rank == 0) {
      EXPECT_EQ(last.count, 1u);
      EXPECT_NE(callSite(r, last).find("saveCheckpoint"), std::string::npos) << callSite(r, last);
    } else {
      EXPECT_EQ(last.count, 4096u);
      EXPECT_NE(callSite(r, last).find("trainStep"), std::string::npos) << callSite(r, last);
    }
    // Every earlier op completed, and all ranks agree on one communicator id.
    for (size_t i = 0; i + 1 < r.events.size(); ++i)
      EXPECT_EQ(r.events[i].state, EventState::kCompleted) << i;
    EXPECT_EQ(last.commId(), data[0].events.back().commId());
  }
}

TEST(GatedSaveEndToEnd, HealthyRunFinishesWithExitDumpsAndNoHang) {
  ncclrec::format::testing::TempDir dir;
  auto ranks = startJob(dir.path(), "-1");
  for (auto& p : ranks) {
    const auto result = p->wait(60s);
    EXPECT_TRUE(result.exitedWith(0)) << result.describe();
  }
  EXPECT_EQ(countDumps(dir.path() + "/dumps"), 0u);
  auto loaded = ncclrec::format::loadPaths({dir.path() + "/dumps"});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded.value().ranks.size(), size_t{kRanks});
  for (const auto& r : loaded.value().ranks) {
    EXPECT_TRUE(r.exited);
    EXPECT_EQ(r.dump_reason, ncclrec::format::DumpReason::kExit);
    for (const auto& e : r.events) EXPECT_EQ(e.state, EventState::kCompleted);
  }
}

}  // namespace
