// Where each part of a screen goes, shared by draw (draw_*.cc) and handleKey (view_state.cc), so
// that the rows the keys scroll are the rows drawn.
//
//   row 0          title bar
//   row 1          tabs, sort and filter
//   row 2          the hang banner, when there is one
//   contentTop..   the screen
//   height - 1     filter prompt, what could not be read, or key hints
#pragma once

#include <algorithm>

#include "tui/live_names.h"

namespace ncclrec::tui {

inline constexpr int kMinWidth = 40;
inline constexpr int kMinHeight = 10;
// Frames of a stack the rank detail shows before "... N more"; fewer when it lists threads.
inline constexpr int kStackRowsMax = 6;
inline constexpr int kStackRowsWithThreads = 3;
// Threads the rank detail lists before "... N more", and the calls it keeps for them.
inline constexpr int kThreadRowsMax = 8;
static_assert(kThreadsKept == size_t{kThreadRowsMax}, "a rank keeps the threads it lists");
inline constexpr int kCallRowsWithThreads = 2;

inline int contentTop(const Snapshot& s) { return s.summary.hang ? 3 : 2; }
inline int statusRow(int height) { return height - 1; }

// Summary: 4 lines of job summary, a blank, the column header, then the rank list.
inline int summaryListTop(const Snapshot& s) { return contentTop(s) + 6; }
// Grid: communicator line, legend, sequence axis, then one row per member.
inline int gridListTop(const Snapshot& s) { return contentTop(s) + 3; }

// Below the members, for a stuck collective whose ranks recorded transport counters: a blank, a
// title, a column header and a row per connection (stalled first; "... N more" when they do not
// fit), right under the members. The members keep their rows when everything fits, else at least
// half the room.
struct GridLayout {
  int list_rows = 1;  // member rows shown
  int conn_top = 0;   // the connections' title row
  int conn_rows = 0;  // rows under its column header; 0: no section
};
inline constexpr int kGridConnectionsMinRoom = 10;  // two connection rows at least
inline GridLayout gridLayout(const Snapshot& s, size_t comm, int height) {
  GridLayout l;
  const int room = std::max(1, statusRow(height) - gridListTop(s));
  l.list_rows = room;
  if (s.comms.empty()) return l;
  const CommGroup& g = s.comms[std::min(comm, s.comms.size() - 1)];
  const int conns = static_cast<int>(g.connections.size());
  if (conns == 0 || room < kGridConnectionsMinRoom) return l;
  const int members = static_cast<int>(g.members.size());
  const int block = std::min(3 + conns, std::max(room / 2, room - members));
  l.list_rows = std::min(room - block, std::max(members, 1));  // the section right below them
  l.conn_top = gridListTop(s) + l.list_rows + 1;
  l.conn_rows = block - 3;
  return l;
}

struct RankLayout {
  int calls_top = 0;              // first row of the calls list (under its headers)
  int calls_rows = 0;             // rows of calls shown
  int stack_top = 0;              // the stack section's title row
  int stack_rows = 0;             // frame rows shown under it
  int stack_max = kStackRowsMax;  // frames shown before "... N more"
  int threads_top = 0;            // the thread snapshot's title row
  int threads_rows = 0;           // thread rows under it ("... N more" included); 0: no section
};
// Identity, exe, comms, a blank, "Last calls" and its column header; then the calls; a blank,
// the stack title, `frames` rows (at most kStackRowsMax, plus one for "... N more") and a note;
// with `threads` to list, a blank, the snapshot's title and a row per thread (at most
// kThreadRowsMax, plus "... N more"): the stack is then cut at kStackRowsWithThreads frames, and
// the threads give way to kCallRowsWithThreads calls on a short screen.
inline RankLayout rankLayout(const Snapshot& s, int frames, int threads, int height) {
  RankLayout l;
  l.calls_top = contentTop(s) + 6;
  const int end = statusRow(height);
  l.stack_max = threads > 0 ? kStackRowsWithThreads : kStackRowsMax;
  l.stack_rows = frames > l.stack_max ? l.stack_max + 1 : std::max(frames, 0);
  const int stack_block = 1 + 1 + l.stack_rows + 1;  // blank, title, frames, note
  int thread_block = 0;                              // blank, title, threads
  if (threads > 0) {
    const int room = end - l.calls_top - stack_block - kCallRowsWithThreads;
    thread_block = std::min(2 + (threads > kThreadRowsMax ? kThreadRowsMax + 1 : threads), room);
    if (thread_block < 3) thread_block = 0;  // not even one thread: no section
  }
  l.calls_rows = std::max(1, end - l.calls_top - stack_block - thread_block);
  l.stack_top = l.calls_top + l.calls_rows + 1;
  // Too short for both: the stack gives way.
  l.stack_rows = std::max(0, std::min(l.stack_rows, end - thread_block - l.stack_top - 2));
  if (thread_block > 0) {
    l.threads_top = end - thread_block + 1;
    l.threads_rows = thread_block - 2;
  }
  return l;
}

}  // namespace ncclrec::tui
