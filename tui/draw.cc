// draw(): the frame's chrome (title, tabs, hang banner, status line, help) and the helpers the
// screens share; the screens are in draw_summary.cc, draw_grid.cc and draw_rank.cc.
#include "tui/draw.h"

#include <cinttypes>
#include <cstdio>
#include <vector>

#include "base/text.h"
#include "live/analysis.h"
#include "tui/draw_internal.h"
#include "tui/layout.h"

namespace ncclrec::tui {

std::string formatAge(double s) {
  char buf[32];
  if (s < 10) {
    std::snprintf(buf, sizeof(buf), "%.1fs", s);
  } else if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%.0fs", s);
  } else if (s < 3600) {
    const int t = static_cast<int>(s);
    std::snprintf(buf, sizeof(buf), "%dm%02ds", t / 60, t % 60);
  } else {
    const int t = static_cast<int>(s / 60);
    std::snprintf(buf, sizeof(buf), "%dh%02dm", t / 60, t % 60);
  }
  return buf;
}

std::string shortCommId(uint64_t comm_id) { return base::shortHex(comm_id); }

std::string shortOpName(format::OpType op) {
  std::string name(format::opName(op));
  return name.rfind("nccl", 0) == 0 ? name.substr(4) : name;
}

std::string shortStateName(format::EventState state) {
  return state == format::EventState::kCompleted ? "done" : std::string(format::stateName(state));
}

Style stateStyle(format::EventState state) {
  switch (state) {
    case format::EventState::kCompleted:
      return Style::kCompleted;
    case format::EventState::kStarted:
      return Style::kStarted;
    case format::EventState::kEnqueued:
      return Style::kEnqueued;
    case format::EventState::kFailed:
      return Style::kFailed;
    case format::EventState::kEmpty:
      break;
  }
  return Style::kNormal;
}

std::string rankLabel(const RankEntry& rank) {
  if (rank.global_rank >= 0) return "rank " + std::to_string(rank.global_rank);
  return rank.host + "/" + std::to_string(rank.pid);
}

std::string fit(const std::string& text, int width) {
  if (width <= 0) return "";
  std::string out = text.substr(0, static_cast<size_t>(width));
  out.resize(static_cast<size_t>(width), ' ');
  return out;
}

std::string fitRight(const std::string& text, int width) {
  if (width <= 0) return "";
  const auto w = static_cast<size_t>(width);
  if (text.size() >= w) return text.substr(text.size() - w);
  return std::string(w - text.size(), ' ') + text;
}

namespace {

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// "ns::trainStep(ncclComm*, int) [clone .isra.0]" -> "ns::trainStep()".
std::string shortFunction(std::string f) {
  static constexpr std::string_view kAnon = "(anonymous namespace)::";
  for (size_t p; (p = f.find(kAnon)) != std::string::npos;) f.erase(p, kAnon.size());
  const size_t paren = f.find('(');
  return paren == std::string::npos ? f : f.substr(0, paren) + "()";
}

std::string named(const format::Frame& f) {
  std::string text = shortFunction(f.function);
  if (f.python) {
    // "Trainer.save_checkpoint" -> "save_checkpoint()"; "<module>" stays as Python names it.
    const size_t dot = f.function.rfind('.');
    text = dot == std::string::npos ? f.function : f.function.substr(dot + 1);
    if (!text.starts_with('<')) text += "()";
  }
  if (!f.file.empty())
    text += " " + baseName(f.file) + (f.line > 0 ? ":" + std::to_string(f.line) : "");
  return text;
}

}  // namespace

std::string frameText(const format::Frame& frame, const SymbolTable& symbols, bool* is_named) {
  *is_named = true;
  if (!frame.function.empty()) return named(frame);
  if (!frame.module.empty()) {
    auto it = symbols.find(symbolKey(frame.module, frame.module_offset));
    if (it != symbols.end() && !it->second.function.empty()) return named(it->second);
  }
  *is_named = false;
  char buf[40];
  if (frame.module.empty()) {
    std::snprintf(buf, sizeof(buf), "0x%" PRIx64, frame.address);
    return buf;
  }
  std::snprintf(buf, sizeof(buf), "+0x%" PRIx64, frame.module_offset);
  return baseName(frame.module) + buf;
}

namespace {

void drawTitle(Frame& f, const Snapshot& s) {
  f.styleRow(0, Style::kTitle);
  int col = f.put(0, 0, " ncclrec-top  ", Style::kTitle);
  f.put(0, col, s.source_label, Style::kTitle);
}

void drawTabs(Frame& f, const Snapshot& s, const ViewState& v) {
  static constexpr struct {
    Screen screen;
    const char* label;
  } kTabs[] = {{Screen::kSummary, " 1 Summary "},
               {Screen::kComms, " 2 Comms "},
               {Screen::kRank, " 3 Rank "}};
  int col = 1;
  for (const auto& tab : kTabs) {
    col =
        f.put(1, col, tab.label, tab.screen == v.screen && !v.help ? Style::kTab : Style::kNormal);
    ++col;
  }
  std::string right = v.screen == Screen::kComms
                          ? (v.grid_by_rank ? "rows: by rank" : "rows: lagging first")
                          : "sort: " + std::string(sortKeyName(v.sort));
  if (!v.filter.empty()) right += "  filter: " + v.filter;
  right += " ";
  const int start = std::max(col + 1, f.width() - static_cast<int>(right.size()));
  f.put(1, start, right, Style::kDim);
  (void)s;
}

// One rank of the banner: "rank 3 (#12 of #13 on a11ce000)", "rank 5 (crashed)"; `same_comm`
// leaves out what the banner already said once.
std::string behindText(const Snapshot& s, size_t i, bool same_comm) {
  const RankEntry& r = s.ranks[i];
  const RankStatus& st = s.status[i];
  std::vector<std::string> why;
  if (st.lag > 0) {
    why.push_back(same_comm ? "#" + std::to_string(st.lag_issued)
                            : "#" + std::to_string(st.lag_issued) + " of #" +
                                  std::to_string(st.lag_max) + " on " + shortCommId(st.lag_comm));
  }
  if (r.liveness != Liveness::kAlive) why.push_back(std::string(livenessName(r.liveness)));
  if (why.empty() && st.oldest_incomplete >= 0) {
    const OpView& op = r.history->ops[size_t(st.oldest_incomplete)];
    why.push_back("in " + shortOpName(op.op) + " #" + std::to_string(op.op_seq));
  }
  std::string text = rankLabel(r);
  for (size_t k = 0; k < why.size(); ++k) text += (k == 0 ? " (" : ", ") + why[k];
  return why.empty() ? text : text + ")";
}

void drawBanner(Frame& f, const Snapshot& s) {
  if (!s.summary.hang) return;
  f.styleRow(2, Style::kBanner);
  const std::vector<size_t>& behind = s.summary.behind;
  // When every rank named lags on the same comm behind the same collective, say it once.
  bool same_comm = !behind.empty();
  for (size_t i : behind) {
    const RankStatus& st = s.status[i];
    const RankStatus& first = s.status[behind.front()];
    same_comm &= st.lag > 0 && st.lag_comm == first.lag_comm && st.lag_max == first.lag_max;
  }
  std::string text = " HANG? no progress for " +
                     formatAge(ageSeconds(s.now_ns, s.summary.last_progress_ns)) + "; ";
  // A communicator whose creation waits for members comes first: the ranks in it lag elsewhere
  // only because they wait there.
  for (const CommGroup& g : s.comms) {
    if (g.creating == 0 || static_cast<int>(g.members.size()) >= g.nranks) continue;
    text += "creating " + shortCommId(g.comm_id) + ": " + creationText(g) + "; ";
    break;
  }
  text += "behind";
  if (same_comm) {
    const RankStatus& first = s.status[behind.front()];
    text += " on " + shortCommId(first.lag_comm) + " #" + std::to_string(first.lag_max);
  }
  text += ": ";
  for (size_t k = 0; k < behind.size(); ++k) {
    std::string next = (k > 0 ? ", " : "") + behindText(s, behind[k], same_comm);
    const size_t left = behind.size() - k - 1;
    // Keep room to say how many more there are.
    if (static_cast<int>(text.size() + next.size()) + (left > 0 ? 10 : 0) > f.width()) {
      text += " +" + std::to_string(behind.size() - k) + " more";
      break;
    }
    text += next;
  }
  f.put(2, 0, text, Style::kBanner);
}

void drawStatus(Frame& f, const Snapshot& s, const ViewState& v) {
  const int row = statusRow(f.height());
  if (v.editing_filter) {
    f.put(row, 0, "/" + v.filter + "_   (Enter keeps it, Esc clears it)", Style::kNormal);
    return;
  }
  if (!v.message.empty()) {
    f.put(row, 0, v.message, Style::kNormal);
    return;
  }
  if (!s.notes.empty()) {
    std::string text = "! " + s.notes.front();
    if (s.notes.size() > 1) text += " (+" + std::to_string(s.notes.size() - 1) + " more)";
    f.put(row, 0, text, Style::kWarning);
    return;
  }
  const char* hints =
      v.screen == Screen::kRank
          ? "Up/Down scroll  Left/Right rank  Esc back  t threads  ? help  q quit"
      : v.screen == Screen::kComms
          ? "Up/Down select  Left/Right comm  Enter rank  / filter  s rows  ? help"
          : "Up/Down select  Enter rank  / filter  s sort  Tab screens  ? help  q quit";
  f.put(row, 0, hints, Style::kDim);
}

void drawHelp(Frame& f, const Snapshot& s) {
  static constexpr const char* kLines[] = {
      "Keys",
      "  Up/Down      move the selection (in the rank detail: scroll its calls)",
      "  PgUp/PgDn    a page up or down; Home/End: first or last row",
      "  Enter        the selected rank's detail: last calls, stack of the oldest",
      "               incomplete op",
      "  Esc, Bksp    back from the rank detail; Esc also clears the filter",
      "  Left/Right   previous/next communicator (Comms) or rank (Rank)",
      "  Tab, 1 2 3   Summary, Comms, Rank",
      "  /            filter rows by rank, host, pid, state or op; Enter keeps it",
      "  s            sort the summary (rank, lag, age, host); grid: lagging/by rank",
      "  t            ask every rank for a fresh thread snapshot (no dump); the rank",
      "               detail lists its threads: where each one is",
      "  ?            this help; any key closes it",
      "  q            quit",
      "Grid cells: # completed  > started  + enqueued  . not issued  ! failed",
  };
  int row = contentTop(s);
  for (const char* line : kLines) {
    const bool heading = line[0] != ' ';
    f.put(row++, 1, line, heading ? Style::kHeader : Style::kNormal);
  }
  f.put(row, 1,
        "Hang banner: an op incomplete and no progress for " + formatAge(s.hang_after_s) +
            " (--hang-after)",
        Style::kNormal);
}

}  // namespace

Frame draw(const Snapshot& s, const ViewState& v, int width, int height) {
  Frame f(width, height);
  if (width < kMinWidth || height < kMinHeight) {
    f.put(0, 0,
          "need " + std::to_string(kMinWidth) + "x" + std::to_string(kMinHeight) + ", have " +
              std::to_string(width) + "x" + std::to_string(height));
    return f;
  }
  drawTitle(f, s);
  drawTabs(f, s, v);
  drawBanner(f, s);
  if (v.help) {
    drawHelp(f, s);
  } else {
    switch (v.screen) {
      case Screen::kSummary:
        drawSummary(f, s, v);
        break;
      case Screen::kComms:
        drawGrid(f, s, v);
        break;
      case Screen::kRank:
        drawRank(f, s, v);
        break;
    }
  }
  drawStatus(f, s, v);
  return f;
}

}  // namespace ncclrec::tui
