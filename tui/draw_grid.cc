// The communicator screen: one row per member rank (lagging first), one column per recent
// collective sequence number, each cell the state of that collective on that rank; below, for a
// collective members wait in, its connections from the transport counters.
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

std::string rankText(int global_rank, int comm_rank) {
  return global_rank >= 0 ? std::to_string(global_rank) : "cr " + std::to_string(comm_rank);
}

std::string stepCount(bool recorded, uint64_t n) { return recorded ? std::to_string(n) : "-"; }

// The connections of the stuck collective: per direction and channel, the steps the sender
// handed the network and the receiver got (since the communicator began), how many of the
// collective's steps arrived, and how long the receiver has waited.
void drawConnections(Frame& f, const Snapshot& s, const CommGroup& g, const GridLayout& l) {
  if (l.conn_rows <= 0) return;
  const size_t stalled =
      static_cast<size_t>(std::count_if(g.connections.begin(), g.connections.end(),
                                        [](const live::ConnectionView& c) { return c.k.stalled; }));
  std::string title = "Connections in #" + std::to_string(g.stuck_seq) + " (transport steps)";
  title += stalled == 0 ? ": all moving" : ": " + std::to_string(stalled) + " stalled";
  f.put(l.conn_top, 1, title, stalled == 0 ? Style::kHeader : Style::kFailed);
  f.put(l.conn_top + 1, 0,
        "  " + fitRight("FROM", 6) + "    " + fitRight("TO", 6) + " " + fitRight("CH", 3) + " " +
            fitRight("SENT", 8) + " " + fitRight("RECEIVED", 8) + " " + fitRight("BEHIND", 6) +
            " " + fitRight("OF OP", 9) + "  LAST RECEIVED",
        Style::kHeader);
  const size_t shown =
      g.connections.size() > size_t(l.conn_rows) ? size_t(l.conn_rows) - 1 : g.connections.size();
  for (size_t i = 0; i < shown; ++i) {
    const analyzer::Connection& k = g.connections[i].k;
    const bool both = k.has_send && k.has_recv;
    const std::string behind =
        both ? std::to_string(static_cast<int64_t>(k.sent) - static_cast<int64_t>(k.received))
             : "-";
    const std::string of_op =
        k.op_steps > 0 ? std::to_string(k.op_received) + "/" + std::to_string(k.op_steps) : "-";
    const std::string last = !k.has_recv ? "-"
                             : k.received_ns > 0
                                 ? formatAge(ageSeconds(s.now_ns, k.received_ns)) + " ago"
                                 : "never";
    f.put(l.conn_top + 2 + int(i), 0,
          "  " + fitRight(rankText(g.connections[i].from_rank, k.from), 6) + " -> " +
              fitRight(rankText(g.connections[i].to_rank, k.to), 6) + " " +
              fitRight(std::to_string(k.channel), 3) + " " +
              fitRight(stepCount(k.has_send, k.sent), 8) + " " +
              fitRight(stepCount(k.has_recv, k.received), 8) + " " + fitRight(behind, 6) + " " +
              fitRight(of_op, 9) + "  " + last,
          k.stalled ? Style::kFailed : Style::kNormal);
  }
  if (shown < g.connections.size()) {
    f.put(l.conn_top + 2 + int(shown), 2,
          "... " + std::to_string(g.connections.size() - shown) + " more", Style::kDim);
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
  const GridLayout layout = gridLayout(s, ci, f.height());
  const int page = layout.list_rows;
  drawConnections(f, s, g, layout);
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
