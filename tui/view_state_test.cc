#include "tui/view_state.h"

#include <gtest/gtest.h>

#include "live/testing/fixtures.h"

namespace ncclrec::tui {
namespace {

ViewState press(ViewState v, const Snapshot& s, std::initializer_list<int> keys) {
  for (int k : keys) v = handleKey(v, k, s, 80, 24);
  return v;
}

int selectedRank(const Snapshot& s, const ViewState& v) {
  const auto rows = summaryRows(s, v);
  return s.ranks[rows[size_t(v.selected)]].global_rank;
}

TEST(Keys, ArrowsMoveTheSelectionWithinTheList) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {kKeyDown, kKeyDown});
  EXPECT_EQ(v.selected, 2);
  v = press(v, s, {kKeyUp, kKeyUp, kKeyUp});
  EXPECT_EQ(v.selected, 0);
  v = press(v, s, {kKeyEnd});
  EXPECT_EQ(v.selected, 5);
  v = press(v, s, {kKeyDown});
  EXPECT_EQ(v.selected, 5);
  v = press(v, s, {kKeyHome});
  EXPECT_EQ(v.selected, 0);
}

TEST(Keys, PageDownMovesAPageAndScrolls) {
  const Snapshot s = live::testing::manyRanksSnapshot(64);
  const int page = pageRows(s, ViewState{}, 24);
  EXPECT_EQ(page, 15);  // 24 rows - title, tabs, 4 summary lines, blank, header, status
  ViewState v = press({}, s, {kKeyPageDown});
  EXPECT_EQ(v.selected, page);
  EXPECT_EQ(v.scroll, 1);
  v = press(v, s, {kKeyPageDown, kKeyPageDown, kKeyPageDown, kKeyPageDown});
  EXPECT_EQ(v.selected, 63);
  EXPECT_EQ(v.scroll, 64 - page);
  v = press(v, s, {kKeyPageUp});
  EXPECT_EQ(v.selected, 63 - page);
}

// 't' asks the caller for a thread snapshot (app.cc writes the request and answers in
// `message`); the next key clears the answer.
TEST(Keys, TAsksForAThreadSnapshotAndTheNextKeyClearsTheAnswer) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {kKeyDown, kKeyEnter});
  ASSERT_EQ(v.screen, Screen::kRank);
  v = press(v, s, {'t'});
  EXPECT_TRUE(v.ask_snapshot);
  EXPECT_EQ(v.screen, Screen::kRank);  // the view stays where it was
  EXPECT_EQ(v.rank_key, "node0/1001");
  v.ask_snapshot = false;
  v.message = "asked 6 running ranks for a thread snapshot";
  v = press(v, s, {kKeyDown});
  EXPECT_EQ(v.message, "");
  EXPECT_FALSE(v.ask_snapshot);
  // In the filter prompt 't' is a letter of the filter.
  v = press({}, s, {'/', 't'});
  EXPECT_FALSE(v.ask_snapshot);
  EXPECT_EQ(v.filter, "t");
}

TEST(Keys, EnterOpensTheSelectedRankAndEscReturns) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {kKeyDown, kKeyDown, kKeyDown, kKeyEnter});
  EXPECT_EQ(v.screen, Screen::kRank);
  EXPECT_EQ(v.rank_key, "node0/1003");
  EXPECT_EQ(detailRank(s, v), 3);
  v = press(v, s, {kKeyRight});
  EXPECT_EQ(v.rank_key, "node1/1004");
  v = press(v, s, {kKeyEscape});
  EXPECT_EQ(v.screen, Screen::kSummary);
  EXPECT_EQ(selectedRank(s, v), 4);  // the rank last shown stays selected
}

TEST(Keys, EnterInTheGridOpensTheMembersRank) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {kKeyTab});
  EXPECT_EQ(v.screen, Screen::kComms);
  v = press(v, s, {kKeyEnter});  // first row: lagging rank 3
  EXPECT_EQ(v.screen, Screen::kRank);
  EXPECT_EQ(v.rank_key, "node0/1003");
  v = press(v, s, {kKeyBackspace});
  EXPECT_EQ(v.screen, Screen::kComms);
}

TEST(Keys, LeftRightSwitchCommunicators) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {'2', kKeyRight});
  EXPECT_EQ(v.comm, 1u);
  v = press(v, s, {kKeyRight});
  EXPECT_EQ(v.comm, 0u);
  v = press(v, s, {kKeyLeft});
  EXPECT_EQ(v.comm, 1u);
}

TEST(Keys, TabCyclesScreensAndThreeOpensTheSelectedRank) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {kKeyDown, '3'});
  EXPECT_EQ(v.screen, Screen::kRank);
  EXPECT_EQ(v.rank_key, "node0/1001");
  v = press(v, s, {kKeyTab});
  EXPECT_EQ(v.screen, Screen::kSummary);
  v = press(v, s, {'1'});
  EXPECT_EQ(v.screen, Screen::kSummary);
}

TEST(Keys, SlashFiltersCaseInsensitively) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {'/', 'N', 'o', 'd', 'e', '1'});
  EXPECT_TRUE(v.editing_filter);
  EXPECT_EQ(v.filter, "Node1");
  EXPECT_EQ(summaryRows(s, v).size(), 2u);  // ranks 4 and 5
  v = press(v, s, {'q'});                   // typed, not quit
  EXPECT_FALSE(v.quit);
  EXPECT_EQ(summaryRows(s, v).size(), 0u);
  v = press(v, s, {kKeyBackspace, kKeyEnter});
  EXPECT_FALSE(v.editing_filter);
  EXPECT_EQ(summaryRows(s, v).size(), 2u);
  v = press(v, s, {kKeyEscape});
  EXPECT_EQ(v.filter, "");
  EXPECT_EQ(summaryRows(s, v).size(), 6u);
  v = press(v, s, {'/', 'c', 'r', 'a', 's', 'h'});
  ASSERT_EQ(summaryRows(s, v).size(), 1u);
  EXPECT_EQ(s.ranks[summaryRows(s, v)[0]].global_rank, 5);
}

TEST(Keys, SCyclesTheSortOrder) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {'s'});
  EXPECT_EQ(v.sort, SortKey::kLag);
  EXPECT_EQ(selectedRank(s, v), 3);  // lagging first
  v = press(v, s, {'s'});
  EXPECT_EQ(v.sort, SortKey::kAge);
  EXPECT_EQ(selectedRank(s, v), 3);  // silent since its last call at 12 s: the longest
  v = press(v, s, {'s', 's'});
  EXPECT_EQ(v.sort, SortKey::kRank);
  v = press(v, s, {'2', 's'});
  EXPECT_TRUE(v.grid_by_rank);
  EXPECT_EQ(v.sort, SortKey::kRank);
}

TEST(Keys, QuestionMarkShowsHelpAndAnyKeyClosesIt) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {'?'});
  EXPECT_TRUE(v.help);
  v = press(v, s, {kKeyDown});
  EXPECT_FALSE(v.help);
  EXPECT_EQ(v.selected, 0);  // the key only closed the help
  v = press(v, s, {'?', 'q'});
  EXPECT_TRUE(v.quit);
}

TEST(Keys, QQuits) { EXPECT_TRUE(press({}, live::testing::hangSnapshot(), {'q'}).quit); }

TEST(Keys, DetailScrollsItsCallsWithinBounds) {
  const Snapshot s = live::testing::hangSnapshot();
  ViewState v = press({}, s, {kKeyEnter});
  const int page = pageRows(s, v, 24);
  v = press(v, s, {kKeyDown, kKeyDown});
  EXPECT_EQ(v.scroll, 2);
  v = press(v, s, {kKeyEnd});
  EXPECT_EQ(v.scroll, 18 - page);  // rank 0 has 18 calls
  v = press(v, s, {kKeyPageDown});
  EXPECT_EQ(v.scroll, 18 - page);
}

TEST(Keys, WorkOnAnEmptySnapshot) {
  const Snapshot s;
  ViewState v = press({}, s,
                      {kKeyDown, kKeyEnter, kKeyTab, kKeyRight, kKeyEnter, '3', kKeyPageDown, 's',
                       '/', 'x', kKeyEnter});
  EXPECT_FALSE(v.quit);
  EXPECT_EQ(v.filter, "x");
}

TEST(Keys, ClampSelection) {
  ViewState v;
  v.selected = 30;
  v = clampSelection(v, 10, 4);
  EXPECT_EQ(v.selected, 9);
  EXPECT_EQ(v.scroll, 6);
  v.selected = 2;
  v = clampSelection(v, 10, 4);
  EXPECT_EQ(v.scroll, 2);
}

}  // namespace
}  // namespace ncclrec::tui
