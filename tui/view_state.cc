#include "tui/view_state.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include "live/analysis.h"
#include "tui/layout.h"

namespace ncclrec::tui {

std::string_view sortKeyName(SortKey key) {
  switch (key) {
    case SortKey::kRank:
      return "rank";
    case SortKey::kLag:
      return "lag";
    case SortKey::kAge:
      return "age";
    case SortKey::kHost:
      return "host";
  }
  return "?";
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What the filter matches a rank against: the fields its rows show.
std::string searchText(const Snapshot& s, size_t i) {
  const RankEntry& r = s.ranks[i];
  std::string text = "rank " + std::to_string(r.global_rank) + " " + r.host + " " +
                     std::to_string(r.pid) + " " + std::string(livenessName(r.liveness));
  if (!r.history->ops.empty()) {
    const OpView& op = r.history->ops.back();
    text +=
        " " + std::string(format::opName(op.op)) + " " + std::string(format::stateName(op.state));
  }
  return lower(text);
}

bool matches(const Snapshot& s, size_t i, const std::string& filter) {
  return filter.empty() || searchText(s, i).find(lower(filter)) != std::string::npos;
}

// How long the rank has been waiting (oldest incomplete op) or quiet (since its last call).
int64_t waitingNs(const Snapshot& s, size_t i) {
  const RankStatus& st = s.status[i];
  const int64_t since = st.oldest_incomplete >= 0
                            ? s.ranks[i].history->ops[size_t(st.oldest_incomplete)].enqueue_ns
                            : st.last_call_ns;
  return since > 0 ? s.now_ns - since : 0;
}

int listRows(const Snapshot& s, const ViewState& v) {
  switch (v.screen) {
    case Screen::kSummary:
      return static_cast<int>(summaryRows(s, v).size());
    case Screen::kComms:
      return static_cast<int>(gridRows(s, v).size());
    case Screen::kRank: {
      const int r = detailRank(s, v);
      return r < 0 ? 0 : static_cast<int>(s.ranks[size_t(r)].history->ops.size());
    }
  }
  return 0;
}

ViewState openDetail(ViewState v, const Snapshot& s, size_t rank) {
  v.back = v.screen;
  v.screen = Screen::kRank;
  v.rank_key = rankKey(s.ranks[rank]);
  v.scroll = 0;
  return v;
}

// Leaves the detail for the list it came from, with that rank selected when it is listed.
ViewState closeDetail(ViewState v, const Snapshot& s) {
  const int r = detailRank(s, v);
  v.screen = v.back;
  v.scroll = 0;
  v.selected = 0;
  if (r < 0) return v;
  if (v.screen == Screen::kSummary) {
    const auto rows = summaryRows(s, v);
    auto it = std::find(rows.begin(), rows.end(), size_t(r));
    if (it != rows.end()) v.selected = static_cast<int>(it - rows.begin());
  } else if (v.comm < s.comms.size()) {
    const auto rows = gridRows(s, v);
    for (size_t k = 0; k < rows.size(); ++k) {
      if (s.comms[v.comm].members[rows[k]].rank == size_t(r)) v.selected = static_cast<int>(k);
    }
  }
  return v;
}

ViewState editFilter(ViewState v, int key) {
  if (key == kKeyEnter) {
    v.editing_filter = false;
  } else if (key == kKeyEscape) {
    v.editing_filter = false;
    v.filter.clear();
  } else if (key == kKeyBackspace) {
    if (!v.filter.empty()) v.filter.pop_back();
  } else if (key >= 0x20 && key < 0x7f && v.filter.size() < 64) {
    v.filter.push_back(static_cast<char>(key));
  }
  v.selected = 0;
  v.scroll = 0;
  return v;
}

}  // namespace

std::vector<size_t> summaryRows(const Snapshot& s, const ViewState& v) {
  std::vector<size_t> rows;
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    if (matches(s, i, v.filter)) rows.push_back(i);
  }
  if (s.status.size() != s.ranks.size()) return rows;  // not analyzed: keep rank order
  switch (v.sort) {
    case SortKey::kRank:
      break;
    case SortKey::kLag:
      std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
        return std::make_tuple(s.status[a].lag, waitingNs(s, a)) >
               std::make_tuple(s.status[b].lag, waitingNs(s, b));
      });
      break;
    case SortKey::kAge:
      std::stable_sort(rows.begin(), rows.end(),
                       [&](size_t a, size_t b) { return waitingNs(s, a) > waitingNs(s, b); });
      break;
    case SortKey::kHost:
      std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
        return std::tie(s.ranks[a].host, s.ranks[a].local_rank) <
               std::tie(s.ranks[b].host, s.ranks[b].local_rank);
      });
      break;
  }
  return rows;
}

std::vector<size_t> gridRows(const Snapshot& s, const ViewState& v) {
  std::vector<size_t> rows;
  if (v.comm >= s.comms.size()) return rows;
  const CommGroup& g = s.comms[v.comm];
  for (size_t k = 0; k < g.members.size(); ++k) {
    if (matches(s, g.members[k].rank, v.filter)) rows.push_back(k);
  }
  if (v.grid_by_rank) {
    std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
      return g.members[a].comm_rank < g.members[b].comm_rank;
    });
  }
  return rows;
}

int detailRank(const Snapshot& s, const ViewState& v) {
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    if (rankKey(s.ranks[i]) == v.rank_key) return static_cast<int>(i);
  }
  return -1;
}

int pageRows(const Snapshot& s, const ViewState& v, int height) {
  switch (v.screen) {
    case Screen::kSummary:
      return std::max(1, statusRow(height) - summaryListTop(s));
    case Screen::kComms:
      return gridLayout(s, v.comm, height).list_rows;
    case Screen::kRank: {
      const int r = detailRank(s, v);
      if (r < 0 || size_t(r) >= s.status.size()) return rankLayout(s, 0, 0, height).calls_rows;
      const RankEntry& rank = s.ranks[size_t(r)];
      const int frames = focusStackRows(rank, s.status[size_t(r)]);
      return rankLayout(s, frames, listedThreads(rank), height).calls_rows;
    }
  }
  return 1;
}

ViewState clampSelection(ViewState v, int rows, int page) {
  page = std::max(1, page);
  v.selected = std::clamp(v.selected, 0, std::max(0, rows - 1));
  if (v.selected < v.scroll) v.scroll = v.selected;
  if (v.selected >= v.scroll + page) v.scroll = v.selected - page + 1;
  v.scroll = std::clamp(v.scroll, 0, std::max(0, rows - page));
  return v;
}

ViewState handleKey(const ViewState& view, int key, const Snapshot& s, int width, int height) {
  (void)width;
  ViewState v = view;
  if (v.editing_filter) return editFilter(v, key);
  v.message.clear();
  if (v.help) {  // any key closes help; q still quits
    v.help = false;
    v.quit = key == 'q';
    return v;
  }
  const int page = pageRows(s, v, height);
  const int rows = listRows(s, v);
  // In the detail the list scrolls; elsewhere the selection moves and the list follows.
  const bool detail = v.screen == Screen::kRank;
  int& cursor = detail ? v.scroll : v.selected;
  switch (key) {
    case 'q':
      v.quit = true;
      return v;
    case '?':
      v.help = true;
      return v;
    case '/':
      v.editing_filter = true;
      return v;
    case 't':
      v.ask_snapshot = true;
      return v;
    case kKeyEscape:
      if (detail) return closeDetail(v, s);
      v.filter.clear();
      v.selected = 0;
      v.scroll = 0;
      return v;
    case kKeyBackspace:
      if (detail) return closeDetail(v, s);
      return v;
    case 's':
      if (v.screen == Screen::kComms) {
        v.grid_by_rank = !v.grid_by_rank;
      } else {
        v.sort = static_cast<SortKey>((static_cast<int>(v.sort) + 1) % 4);
      }
      v.selected = 0;
      v.scroll = 0;
      return v;
    case kKeyTab:
    case '1':
    case '2':
    case '3': {
      Screen next = key == '1' ? Screen::kSummary : key == '2' ? Screen::kComms : Screen::kRank;
      if (key == kKeyTab) {
        next = v.screen == Screen::kSummary ? Screen::kComms
               : v.screen == Screen::kComms ? Screen::kRank
                                            : Screen::kSummary;
      }
      if (next == Screen::kRank && v.screen != Screen::kRank) {
        // The rank selected in the list, else the slowest one.
        int r = s.summary.slowest;
        if (v.screen == Screen::kSummary) {
          const auto list = summaryRows(s, v);
          if (size_t(v.selected) < list.size()) r = static_cast<int>(list[size_t(v.selected)]);
        } else if (v.comm < s.comms.size()) {
          const auto list = gridRows(s, v);
          if (size_t(v.selected) < list.size())
            r = static_cast<int>(s.comms[v.comm].members[list[size_t(v.selected)]].rank);
        }
        if (r < 0 && !s.ranks.empty()) r = 0;
        if (r < 0) return v;
        return openDetail(v, s, size_t(r));
      }
      if (next == v.screen) return v;
      if (detail) v.back = next;
      v.screen = next;
      v.selected = 0;
      v.scroll = 0;
      return v;
    }
    case kKeyUp:
      --cursor;
      break;
    case kKeyDown:
      ++cursor;
      break;
    case kKeyPageUp:
      cursor -= page;
      break;
    case kKeyPageDown:
      cursor += page;
      break;
    case kKeyHome:
      cursor = 0;
      break;
    case kKeyEnd:
      cursor = rows;
      break;
    case kKeyLeft:
    case kKeyRight: {
      const int step = key == kKeyLeft ? -1 : 1;
      if (v.screen == Screen::kComms && !s.comms.empty()) {
        const int n = static_cast<int>(s.comms.size());
        v.comm = static_cast<size_t>((static_cast<int>(v.comm) + step + n) % n);
        v.selected = 0;
        v.scroll = 0;
      } else if (detail) {
        // The previous or next rank in the summary's order.
        const auto list = summaryRows(s, v);
        const int r = detailRank(s, v);
        auto it = std::find(list.begin(), list.end(), size_t(std::max(r, 0)));
        if (it != list.end()) {
          const int pos = static_cast<int>(it - list.begin()) + step;
          if (pos >= 0 && pos < static_cast<int>(list.size())) {
            v.rank_key = rankKey(s.ranks[list[size_t(pos)]]);
            v.scroll = 0;
          }
        }
      }
      return v;
    }
    case kKeyEnter:
      if (v.screen == Screen::kSummary) {
        const auto list = summaryRows(s, v);
        if (size_t(v.selected) < list.size()) return openDetail(v, s, list[size_t(v.selected)]);
      } else if (v.screen == Screen::kComms && v.comm < s.comms.size()) {
        const auto list = gridRows(s, v);
        if (size_t(v.selected) < list.size())
          return openDetail(v, s, s.comms[v.comm].members[list[size_t(v.selected)]].rank);
      }
      return v;
    default:
      return v;
  }
  if (detail) {
    v.scroll = std::clamp(v.scroll, 0, std::max(0, rows - page));
    return v;
  }
  return clampSelection(v, rows, page);
}

}  // namespace ncclrec::tui
