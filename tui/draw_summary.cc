// The summary screen: the job in four lines, then one row per rank.
#include <algorithm>

#include "live/analysis.h"
#include "tui/draw_internal.h"
#include "tui/layout.h"

namespace ncclrec::tui {
namespace {

// Column widths of the rank list; HOST takes what is left.
constexpr int kRankW = 6, kPidW = 7, kStateW = 7, kLagW = 4, kCallW = 18, kOpStateW = 8, kAgeW = 6;
constexpr int kFixedW = kRankW + kPidW + kStateW + kLagW + kCallW + kOpStateW + kAgeW + 8;

// HOST takes the room left, up to 24 columns; LAST CALL the rest, up to 40.
int hostWidth(int width) { return std::clamp(width - kFixedW - 1, 4, 24); }
int callWidth(int width) {
  return kCallW + std::clamp(width - kFixedW - 1 - hostWidth(width), 0, 40 - kCallW);
}

std::string callText(const OpView& op) {
  std::string text = shortOpName(op.op);
  if (op.op_seq > 0) text += " #" + std::to_string(op.op_seq);
  if (format::isP2p(op.op) && op.peer >= 0)
    text += (op.op == format::OpType::kSend ? " to " : " from ") + std::to_string(op.peer);
  return text;
}

Style livenessStyle(Liveness l) {
  switch (l) {
    case Liveness::kAlive:
      return Style::kNormal;
    case Liveness::kExited:
    case Liveness::kStopped:
      return Style::kDim;
    case Liveness::kCrashed:
    case Liveness::kGone:
      return Style::kFailed;
    case Liveness::kStale:
    case Liveness::kNotRunning:
      return Style::kWarning;
  }
  return Style::kNormal;
}

void drawJob(Frame& f, const Snapshot& s, int row) {
  const JobSummary& j = s.summary;
  int world = 0;
  for (const RankEntry& r : s.ranks) world = std::max(world, r.world_size);
  std::string line = "Ranks    " + std::to_string(s.ranks.size());
  if (world > 0) line += " of " + std::to_string(world);
  line += ": " + std::to_string(j.alive) + " alive, " + std::to_string(j.exited) + " exited, " +
          std::to_string(j.crashed) + " crashed";
  if (j.stopped > 0) line += ", " + std::to_string(j.stopped) + " stopped after dumping";
  if (j.killed > 0) line += ", " + std::to_string(j.killed) + " killed";
  if (j.stale > 0) line += ", " + std::to_string(j.stale) + " stale";
  if (j.not_running > 0) line += ", " + std::to_string(j.not_running) + " not running";
  if (world > static_cast<int>(s.ranks.size()))
    line += " (" + std::to_string(world - static_cast<int>(s.ranks.size())) + " not seen)";
  f.put(row, 1, line);
  for (const std::string& failed :
       {std::to_string(j.crashed) + " crashed", std::to_string(j.killed) + " killed"}) {
    if (failed[0] == '0') continue;
    const size_t at = line.find(failed);
    f.styleCells(row, 1 + static_cast<int>(at), static_cast<int>(failed.size()), Style::kFailed);
  }

  line = "Comms    " + std::to_string(s.comms.size());
  for (size_t k = 0; k < s.comms.size(); ++k) {
    const CommGroup& g = s.comms[k];
    std::string one = (k == 0 ? ": " : ", ") + shortCommId(g.comm_id) + " ";
    if (g.creating > 0) {
      one += "creating, " + std::to_string(g.members.size()) + "/" + std::to_string(g.nranks) +
             " joined";
    } else {
      one += std::to_string(g.members.size()) + "/" + std::to_string(g.nranks) + " ranks #" +
             std::to_string(g.min_issued);
      if (g.max_issued != g.min_issued) one += "..#" + std::to_string(g.max_issued);
    }
    if (static_cast<int>(line.size() + one.size()) > f.width() - 10) {
      line += ", +" + std::to_string(s.comms.size() - k) + " more";
      break;
    }
    line += one;
  }
  f.put(row + 1, 1, line);

  line = "Slowest  ";
  if (j.slowest < 0) {
    line += "-";
  } else {
    const RankEntry& r = s.ranks[size_t(j.slowest)];
    const RankStatus& st = s.status[size_t(j.slowest)];
    line += rankLabel(r) + ": ";
    if (st.lag > 0) {
      line += std::to_string(st.lag) + " behind on " + shortCommId(st.lag_comm) + " (#" +
              std::to_string(st.lag_issued) + " of #" + std::to_string(st.lag_max) +
              "), last call " + formatAge(ageSeconds(s.now_ns, st.last_call_ns)) + " ago";
    } else if (r.history->ops.empty()) {
      line += "no calls yet";
    } else {
      const OpView& op = r.history->ops.back();
      line += "last to enter " + callText(op) + ", " +
              formatAge(ageSeconds(s.now_ns, op.enqueue_ns)) + " ago";
    }
    if (r.liveness != Liveness::kAlive) line += " [" + std::string(livenessName(r.liveness)) + "]";
  }
  f.put(row + 2, 1, line);

  line = "Progress ";
  line += j.last_progress_ns > 0
              ? "last " + formatAge(ageSeconds(s.now_ns, j.last_progress_ns)) + " ago"
              : "none yet";
  line += " (banner after " + formatAge(s.hang_after_s) + " without)";
  f.put(row + 3, 1, line, j.hang ? Style::kBanner : Style::kNormal);
}

}  // namespace

void drawSummary(Frame& f, const Snapshot& s, const ViewState& v) {
  const int top = contentTop(s);
  drawJob(f, s, top);
  const int host_w = hostWidth(f.width());
  const int call_w = callWidth(f.width());
  const int header = summaryListTop(s) - 1;
  f.put(header, 0,
        fitRight("RANK", kRankW) + " " + fit("HOST", host_w) + " " + fitRight("PID", kPidW) + " " +
            fit("STATE", kStateW) + " " + fitRight("LAG", kLagW) + " " + fit("LAST CALL", call_w) +
            " " + fit("OP", kOpStateW) + " " + fitRight("AGE", kAgeW),
        Style::kHeader);
  const std::vector<size_t> rows = summaryRows(s, v);
  const int list_top = summaryListTop(s);
  const int page = std::max(1, statusRow(f.height()) - list_top);
  const ViewState shown = clampSelection(v, static_cast<int>(rows.size()), page);
  if (rows.empty()) {
    if (s.ranks.empty()) {
      int row = list_top;
      if (s.notes.empty()) f.put(row, 1, "No ranks yet.", Style::kDim);
      for (const std::string& note : s.notes) {
        if (row >= statusRow(f.height())) break;
        f.put(row++, 1, note, Style::kWarning);
      }
    } else {
      f.put(list_top, 1, "No rank matches the filter '" + v.filter + "'.", Style::kDim);
    }
    return;
  }
  for (int k = 0; k < page && size_t(shown.scroll + k) < rows.size(); ++k) {
    const size_t i = rows[size_t(shown.scroll + k)];
    const RankEntry& r = s.ranks[i];
    const RankStatus& st = s.status[i];
    const int row = list_top + k;
    int col = 0;
    col = f.put(row, col,
                fitRight(r.global_rank >= 0 ? std::to_string(r.global_rank) : "?", kRankW) + " ");
    col = f.put(row, col, fit(r.host, host_w) + " ");
    col = f.put(row, col, fitRight(std::to_string(r.pid), kPidW) + " ");
    col = f.put(row, col, fit(std::string(livenessName(r.liveness)), kStateW),
                livenessStyle(r.liveness));
    col = f.put(row, col, " ");
    col = f.put(row, col, fitRight(std::to_string(st.lag), kLagW),
                st.lag > 0 ? Style::kMissing : Style::kNormal);
    col = f.put(row, col, " ");
    if (r.history->ops.empty()) {
      f.put(row, col, fit("-", call_w));
    } else {
      // The op it waits in, else its last call.
      const OpView& op = st.oldest_incomplete >= 0 ? r.history->ops[size_t(st.oldest_incomplete)]
                                                   : r.history->ops.back();
      col = f.put(row, col, fit(callText(op), call_w) + " ");
      col = f.put(row, col, fit(shortStateName(op.state), kOpStateW), stateStyle(op.state));
      const double age =
          ageSeconds(s.now_ns, op.incomplete() || op.end_ns == 0 ? op.enqueue_ns : op.end_ns);
      f.put(row, col, " " + fitRight(formatAge(age), kAgeW));
    }
    if (k == shown.selected - shown.scroll) f.styleRow(row, Style::kSelected);
  }
}

}  // namespace ncclrec::tui
