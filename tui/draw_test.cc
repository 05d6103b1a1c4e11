// Golden frames: draw() of the fixtures (live/testing/fixtures.h) against tests/data/top/*.txt
// (text, then one letter per cell for its style: frame.h). After an intended change of the
// screens, rewrite them with NCCLREC_UPDATE_GOLDEN=1 and review the diff.
#include "tui/draw.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "live/analysis.h"
#include "live/rank_convert.h"
#include "live/testing/fixtures.h"

namespace ncclrec::tui {
namespace {

using live::testing::hangSnapshot;
using live::testing::healthySnapshot;
using live::testing::manyRanksSnapshot;

void expectGolden(const Frame& frame, const std::string& name) {
  const std::string path = std::string(NCCLREC_TOP_GOLDEN_DIR) + "/" + name + ".txt";
  const std::string got = frame.golden();
  const char* update = std::getenv("NCCLREC_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " is missing; run with NCCLREC_UPDATE_GOLDEN=1 to write it";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "frame differs from " << path << "; got:\n" << got;
}

ViewState rankView(const Snapshot& s, int global_rank) {
  ViewState v;
  v.screen = Screen::kRank;
  for (const RankEntry& r : s.ranks)
    if (r.global_rank == global_rank) v.rank_key = rankKey(r);
  return v;
}

TEST(DrawGolden, SummaryOfAHang) {
  expectGolden(draw(hangSnapshot(), ViewState{}, 80, 24), "summary_hang");
}

TEST(DrawGolden, SummarySortedByLagWithTheThirdRowSelected) {
  ViewState v;
  v.sort = SortKey::kLag;
  v.selected = 2;
  expectGolden(draw(hangSnapshot(), v, 80, 24), "summary_hang_by_lag");
}

// After cxxrun stopped the demo's hang: "stopped after dumping", not "crashed".
TEST(DrawGolden, SummaryOfAJobStoppedAfterItsDumps) {
  expectGolden(draw(live::testing::stoppedSnapshot(), ViewState{}, 80, 24), "summary_stopped");
}

// The thread snapshot: per thread its tid, name, state and innermost user frame (named from the
// borrowed symbols), the recorder's own thread left out, the threads that did not answer with
// their kernel state; the stack above cut to make room.
TEST(DrawGolden, RankDetailListsTheThreadsOfItsLatestSnapshot) {
  const Snapshot s = live::testing::stoppedSnapshot();
  expectGolden(draw(s, rankView(s, 3), 80, 30), "rank3_threads");
}

// On a 24-row screen the threads give way to two rows of calls.
TEST(DrawGolden, RankDetailWithThreadsOnASmallScreen) {
  const Snapshot s = live::testing::stoppedSnapshot();
  expectGolden(draw(s, rankView(s, 3), 80, 24), "rank3_threads_small");
}

TEST(DrawGolden, SummaryOfAHealthyJobHasNoBanner) {
  expectGolden(draw(healthySnapshot(), ViewState{}, 80, 24), "summary_healthy");
}

TEST(DrawGolden, SummaryScrolledToTheEndOfManyRanks) {
  ViewState v;
  v.selected = 63;
  v.scroll = 0;  // draw scrolls to keep the selection visible
  expectGolden(draw(manyRanksSnapshot(64), v, 80, 24), "summary_many_end");
}

TEST(DrawGolden, GridOfTheWorldCommLaggingFirst) {
  ViewState v;
  v.screen = Screen::kComms;
  expectGolden(draw(hangSnapshot(), v, 80, 24), "comms_world");
}

TEST(DrawGolden, GridOfTheSecondCommByRank) {
  ViewState v;
  v.screen = Screen::kComms;
  v.comm = 1;
  v.grid_by_rank = true;
  expectGolden(draw(hangSnapshot(), v, 80, 24), "comms_tp_by_rank");
}

// A communicator being created: the Comms line says so, and its screen lists the members that
// joined and the comm rank nobody joined yet.
TEST(DrawGolden, SummaryWithACommunicatorBeingCreated) {
  expectGolden(draw(live::testing::creatingSnapshot(), ViewState{}, 80, 24), "summary_creating");
}

TEST(DrawGolden, GridOfACommunicatorBeingCreated) {
  const Snapshot s = live::testing::creatingSnapshot();
  ViewState v;
  v.screen = Screen::kComms;
  for (size_t k = 0; k < s.comms.size(); ++k) {
    if (s.comms[k].comm_id == live::testing::kCommEval) v.comm = k;
  }
  expectGolden(draw(s, v, 80, 24), "comms_creating");
}

TEST(DrawGolden, GridWide) {
  ViewState v;
  v.screen = Screen::kComms;
  expectGolden(draw(manyRanksSnapshot(12), v, 132, 20), "comms_wide");
}

// A link cut: under the grid, the connections of the all-reduce the ranks wait in, the stalled
// one first, in red.
TEST(DrawGolden, GridWithTheConnectionsOfAStuckCollective) {
  ViewState v;
  v.screen = Screen::kComms;
  expectGolden(draw(live::testing::transportSnapshot(), v, 80, 24), "comms_transport");
}

// A short screen: the members keep at least half the room, the connections say how many more.
TEST(DrawGrid, ConnectionsThatDoNotFitSayHowManyMore) {
  ViewState v;
  v.screen = Screen::kComms;
  const std::string text = draw(live::testing::transportSnapshot(), v, 80, 17).plainText();
  EXPECT_NE(text.find("Connections in #13 (transport steps): 1 stalled"), std::string::npos)
      << text;
  EXPECT_NE(text.find("     1 ->      2   0       52       50      2       2/6  1m19s ago"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("... 2 more"), std::string::npos) << text;
  // Too small for both: the members alone.
  const std::string tiny = draw(live::testing::transportSnapshot(), v, 80, 16).plainText();
  EXPECT_EQ(tiny.find("Connections"), std::string::npos) << tiny;
}

TEST(DrawGolden, RankDetailOfAWaitingRank) {
  expectGolden(draw(hangSnapshot(), rankView(hangSnapshot(), 1), 80, 24), "rank1_waiting");
}

TEST(DrawGolden, RankDetailOfTheRankStuckInHostCode) {
  expectGolden(draw(hangSnapshot(), rankView(hangSnapshot(), 3), 80, 24), "rank3_stopped");
}

TEST(DrawGolden, RankDetailOfACrashedRankScrolled) {
  ViewState v = rankView(hangSnapshot(), 5);
  v.scroll = 4;
  expectGolden(draw(hangSnapshot(), v, 80, 24), "rank5_crashed_scrolled");
}

// A Python job's rank: the CALL SITE column names the user's function past the project's
// all_reduce wrapper and ctypes; the stack lists Python frames as file:line function above the
// native ones, the call-site frame marked.
TEST(DrawGolden, RankDetailOfAPythonRank) {
  const Snapshot s = live::testing::pythonSnapshot();
  expectGolden(draw(s, rankView(s, 0), 80, 24), "rank0_python");
}

// --library-frames: a layer named by the user is skipped like torch/distributed.
TEST(DrawRank, LibraryFramesMoveTheCallSite) {
  Snapshot s = live::testing::pythonSnapshot();
  s.library_frames = {"train.py"};
  analyze(&s);
  // Every frame of the user's file is a library frame now: the call site is the innermost
  // Python frame left, the project's wrapper.
  const std::string frame = draw(s, rankView(s, 0), 80, 24).golden();
  EXPECT_NE(
      frame.find("AllReduce    a11ce000     5    1024 enqueued  1m20s all_reduce() comm_util"),
      std::string::npos)
      << frame;
}

TEST(DrawGolden, Help) {
  ViewState v;
  v.help = true;
  expectGolden(draw(hangSnapshot(), v, 80, 24), "help");
}

TEST(DrawGolden, FilterBeingTyped) {
  ViewState v;
  v.filter = "node1";
  v.editing_filter = true;
  expectGolden(draw(hangSnapshot(), v, 80, 24), "summary_filter_node1");
}

TEST(DrawGolden, NothingReadableSaysWhyOnScreen) {
  Snapshot s;
  s.now_ns = live::testing::kT0;
  s.source_label = "/tmp/dumps";
  s.notes = {"/tmp/dumps/a.bbox: not an ncclrec black box (bad magic)",
             "/tmp/dumps/b.bbox: truncated black box (4096 bytes, header says 8192)"};
  expectGolden(draw(s, ViewState{}, 80, 24), "empty_with_notes");
}

TEST(DrawGolden, TooSmall) { expectGolden(draw(hangSnapshot(), ViewState{}, 30, 8), "too_small"); }

TEST(Draw, EveryFrameHasExactlyTheSizeAskedFor) {
  const Snapshot s = hangSnapshot();
  for (const auto& [w, h] : {std::pair{80, 24}, {40, 10}, {200, 60}, {1, 1}, {41, 11}}) {
    for (Screen screen : {Screen::kSummary, Screen::kComms, Screen::kRank}) {
      ViewState v = rankView(s, 0);
      v.screen = screen;
      const Frame f = draw(s, v, w, h);
      ASSERT_EQ(f.width(), w);
      ASSERT_EQ(f.height(), h);
      for (int r = 0; r < h; ++r) {
        ASSERT_EQ(f.text(r).size(), size_t(w));
        ASSERT_EQ(f.styles(r).size(), size_t(w));
      }
    }
  }
}

TEST(Draw, LargeCountsAreAbbreviatedInTheirColumn) {
  Snapshot s;
  s.now_ns = live::testing::kT0 + 30'000'000'000;
  format::RankData d = live::testing::makeRank(0, 1, "h", live::testing::kCommWorld, 2, 0);
  d.events[0].count = 123'456'789;
  d.events[1].count = 12'345'678'901;
  s.ranks.push_back(live::entryFromRankData(d));
  analyze(&s);
  const std::string text = draw(s, rankView(s, 0), 80, 24).plainText();
  EXPECT_NE(text.find("  123.5M done"), std::string::npos) << text;
  EXPECT_NE(text.find("   12.3G done"), std::string::npos) << text;
}

TEST(Draw, IsAPureFunctionOfItsInputs) {
  const Snapshot s = hangSnapshot();
  ViewState v;
  v.screen = Screen::kComms;
  EXPECT_EQ(draw(s, v, 80, 24).golden(), draw(s, v, 80, 24).golden());
}

}  // namespace
}  // namespace ncclrec::tui
