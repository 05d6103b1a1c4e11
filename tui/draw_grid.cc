// The communicator screen: one row per member rank (lagging first), one column per recent
// collective sequence number, each cell the state of that collective on that rank.
#include <algorithm>
#include <unordered_map>

#include "base/text.h"
#include "live/analysis.h"
#include "tui/draw_internal.h"
#include "tui/layout.h"

namespace ncclrec::tui {
namespace {

constexpr int kPrefixW = 21;  // "> " rank(6) " " comm rank(4) " " issued(6) " "

struct Cell {
  char glyph;
  Style style;
};

Cell cellFor(format::EventState state) {
  switch (state) {
    case format::EventState::kCompleted:
      return {'#', Style::kCompleted};
    case format::EventState::kStarted:
      return {'>', Style::kStarted};
    case format::EventState::kEnqueued:
      return {'+', Style::kEnqueued};
    case format::EventState::kFailed:
      return {'!', Style::kFailed};
    case format::EventState::kEmpty:
      break;
  }
  return {'?', Style::kNormal};
}

void drawLegend(Frame& f, int row) {
  static constexpr struct {
    char glyph;
    Style style;
    const char* text;
  } kItems[] = {{'#', Style::kCompleted, " completed  "},
                {'>', Style::kStarted, " started  "},
                {'+', Style::kEnqueued, " enqueued  "},
                {'.', Style::kMissing, " not issued  "},
                {'!', Style::kFailed, " failed"}};
  int col = 1;
  for (const auto& item : kItems) {
    col = f.put(row, col, std::string(1, item.glyph), item.style);
    col = f.put(row, col, item.text, Style::kDim);
  }
}

}  // namespace

std::string creationText(const CommGroup& g) {
  std::vector<bool> joined(static_cast<size_t>(std::max(g.nranks, 0)), false);
  for (const CommMember& m : g.members) {
    if (m.comm_rank >= 0 && m.comm_rank < g.nranks) joined[size_t(m.comm_rank)] = true;
  }
  std::vector<int> missing;
  for (size_t r = 0; r < joined.size(); ++r) {
    if (!joined[r]) missing.push_back(static_cast<int>(r));
  }
  const std::string counts =
      std::to_string(g.members.size()) + "/" + std::to_string(g.nranks) + " joined";
  if (missing.empty()) return counts + ", every member in";
  return counts + ", missing comm rank" + (missing.size() == 1 ? " " : "s ") +
         base::numberRanges(missing);
}

void drawGrid(Frame& f, const Snapshot& s, const ViewState& v) {
  const int top = contentTop(s);
  if (s.comms.empty()) {
    f.put(top, 1, "No communicators yet.", Style::kDim);
    return;
  }
  const size_t ci = std::min(v.comm, s.comms.size() - 1);
  const CommGroup& g = s.comms[ci];
  std::string title = "Comm " + shortCommId(g.comm_id);
  if (!g.name.empty()) title += " '" + g.name + "'";
  if (g.creating > 0) {
    title += "  being created: " + creationText(g);
  } else {
    title += "  " + std::to_string(g.members.size()) + "/" + std::to_string(g.nranks) +
             " ranks, issued #" + std::to_string(g.min_issued);
    if (g.max_issued != g.min_issued) title += "..#" + std::to_string(g.max_issued);
  }
  title += "   [" + std::to_string(ci + 1) + " of " + std::to_string(s.comms.size()) + "]";
  f.put(top, 1, title, Style::kHeader);
  drawLegend(f, top + 1);

  const int cells = std::max(1, f.width() - kPrefixW - 1);
  const uint64_t hi = g.max_issued;
  const uint64_t lo = hi > uint64_t(cells) ? hi - uint64_t(cells) + 1 : 1;
  const int axis = top + 2;
  f.put(axis, 0, "  " + fitRight("RANK", 6) + " " + fitRight("CR", 4) + " " + fitRight("ISSUED", 6),
        Style::kHeader);
  if (hi == 0) {
    f.put(axis, kPrefixW, g.creating > 0 ? "in the creation call" : "no collectives yet",
          Style::kDim);
  } else {
    // A label at the first column and at every sequence number that is a multiple of 10 with
    // room for it.
    int free_from = kPrefixW;
    for (uint64_t seq = lo; seq <= hi; ++seq) {
      const int col = kPrefixW + static_cast<int>(seq - lo);
      if ((seq != lo && seq % 10 != 0) || col < free_from) continue;
      const std::string label = "#" + std::to_string(seq);
      free_from = f.put(axis, col, label, Style::kHeader) + 1;
    }
  }

  const std::vector<size_t> rows = gridRows(s, v);
  const int list_top = gridListTop(s);
  const int page = std::max(1, statusRow(f.height()) - list_top);
  const ViewState shown = clampSelection(v, static_cast<int>(rows.size()), page);
  if (rows.empty()) {
    f.put(list_top, 1, "No rank matches the filter '" + v.filter + "'.", Style::kDim);
    return;
  }
  for (int k = 0; k < page && size_t(shown.scroll + k) < rows.size(); ++k) {
    const CommMember& m = g.members[rows[size_t(shown.scroll + k)]];
    const RankEntry& r = s.ranks[m.rank];
    const int row = list_top + k;
    const bool selected = k == shown.selected - shown.scroll;
    f.put(row, 0,
          std::string(selected ? "> " : "  ") +
              fitRight(r.global_rank >= 0 ? std::to_string(r.global_rank) : "?", 6) + " " +
              fitRight(std::to_string(m.comm_rank), 4) + " " +
              fitRight(std::to_string(m.issued), 6) + " ",
          selected                  ? Style::kSelected
          : m.issued < g.max_issued ? Style::kMissing
                                    : Style::kNormal);
    if (hi == 0) continue;
    std::unordered_map<uint64_t, format::EventState> states;
    for (const OpView& op : r.history->ops) {
      if (op.comm_id == g.comm_id && format::isCollective(op.op) && op.op_seq >= lo)
        states[op.op_seq] = op.state;
    }
    for (uint64_t seq = lo; seq <= hi; ++seq) {
      Cell cell{'.', Style::kMissing};
      if (seq <= m.issued) {
        auto it = states.find(seq);
        // Older than the rank's recent calls: it completed long ago.
        cell = it == states.end() ? Cell{'#', Style::kCompleted} : cellFor(it->second);
      }
      f.put(row, kPrefixW + static_cast<int>(seq - lo), std::string(1, cell.glyph), cell.style);
    }
  }
}

}  // namespace ncclrec::tui
