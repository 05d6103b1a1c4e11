// What the user chose to look at, and how keys change it. Owned by the main thread; a pure value
// passed to draw() (draw.h) with the snapshot, so a frame is a function of (snapshot, view,
// size).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tui/live_names.h"

namespace ncclrec::tui {

enum class Screen { kSummary, kComms, kRank };
// Order of the summary's rank list; 's' cycles through them.
enum class SortKey { kRank, kLag, kAge, kHost };
std::string_view sortKeyName(SortKey key);

struct ViewState {
  Screen screen = Screen::kSummary;
  Screen back = Screen::kSummary;  // where Esc leaves the rank detail for
  bool help = false;
  bool quit = false;
  int selected = 0;           // row of the summary's rank list, or of the grid's member list
  int scroll = 0;             // first row shown of that list (or of the rank detail's calls)
  size_t comm = 0;            // index into Snapshot::comms of the grid shown
  bool grid_by_rank = false;  // grid rows by rank instead of lagging first ('s' on that screen)
  std::string rank_key;       // "host/pid" of the rank the detail shows
  SortKey sort = SortKey::kRank;
  std::string filter;  // case-insensitive substring of a row's text; "" shows every row
  bool editing_filter = false;
  // 't' sets it: the caller (app.cc) asks every rank for a fresh thread snapshot
  // (requestThreadSnapshots, snapshot_request.h), clears it and puts its answer in `message`.
  bool ask_snapshot = false;
  std::string message;  // one line for the status line; the next key clears it
};

// Keys, independent of the terminal library (terminal.cc maps ncurses' codes to these).
enum Key : int {
  kKeyUp = 0x10000,
  kKeyDown,
  kKeyLeft,
  kKeyRight,
  kKeyPageUp,
  kKeyPageDown,
  kKeyHome,
  kKeyEnd,
  kKeyEnter,
  kKeyEscape,
  kKeyBackspace,
  kKeyTab,
};

// The view after `key` (a Key or a printable character) on a `width` x `height` screen showing
// `snapshot`. 'q' sets quit (outside the filter prompt).
ViewState handleKey(const ViewState& view, int key, const Snapshot& snapshot, int width,
                    int height);

// The summary's rows: indexes into snapshot.ranks, filtered and sorted as `view` says.
std::vector<size_t> summaryRows(const Snapshot& snapshot, const ViewState& view);
// The grid's rows for snapshot.comms[view.comm]: indexes into its members, filtered.
std::vector<size_t> gridRows(const Snapshot& snapshot, const ViewState& view);
// The rank the detail shows: index into snapshot.ranks, -1 when it is not in the snapshot.
int detailRank(const Snapshot& snapshot, const ViewState& view);

// Rows of the current list that fit on a `height`-line screen (draw.cc's layout).
int pageRows(const Snapshot& snapshot, const ViewState& view, int height);
// `view` with scroll moved so that the selected row is visible on a page of `page` rows, and
// selected clamped to [0, rows).
ViewState clampSelection(ViewState view, int rows, int page);

}  // namespace ncclrec::tui
