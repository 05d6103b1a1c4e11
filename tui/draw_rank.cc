// The rank detail: who the rank is, its communicators, its last calls with call site and age,
// and the stack of its oldest incomplete op (else of its last call).
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "base/proc_state.h"
#include "base/text.h"
#include "format/bbox_layout.h"
#include "live/analysis.h"
#include "tui/draw_internal.h"
#include "tui/layout.h"

namespace ncclrec::tui {
namespace {

constexpr int kCallW = 12, kCommW = 8, kSeqW = 5, kCountW = 7, kStateW = 8, kAgeW = 6;

// Element counts in 7 columns: "1048576", then "12.3M", "4.1G".
std::string countText(uint64_t n) {
  if (n < 10'000'000) return std::to_string(n);
  char buf[16];
  std::snprintf(buf, sizeof(buf), n < 10'000'000'000ull ? "%.1fM" : "%.1fG",
                n < 10'000'000'000ull ? double(n) / 1e6 : double(n) / 1e9);
  return buf;
}

std::string livenessText(const Snapshot& s, const RankEntry& r) {
  switch (r.liveness) {
    case Liveness::kAlive:
      return r.heartbeat_ns > 0
                 ? "alive (heartbeat " + formatAge(ageSeconds(s.now_ns, r.heartbeat_ns)) + " ago)"
                 : "alive";
    case Liveness::kExited:
      return "exited " + formatAge(ageSeconds(s.now_ns, r.exit_ns)) + " ago";
    case Liveness::kCrashed:
      return "crashed: " + base::signalName(r.fatal_signal) + ", " +
             formatAge(ageSeconds(s.now_ns, r.fatal_ns)) + " ago";
    case Liveness::kGone:
      return "killed from outside: no exit or crash mark, no dump, pid not running (SIGKILL, "
             "SIGTERM, OOM?)";
    case Liveness::kStopped:
      return "stopped after its " + std::string(format::dumpReasonName(r.last_dump_reason)) +
             " dump, " + formatAge(ageSeconds(s.now_ns, r.last_dump_ns)) + " ago";
    case Liveness::kStale:
      return "stale: no heartbeat for " + formatAge(ageSeconds(s.now_ns, r.heartbeat_ns));
    case Liveness::kNotRunning:
      return "not running: its process is " + std::string(base::processStateName(r.process_state)) +
             (r.process_wchan.empty() ? std::string() : " in " + r.process_wchan) +
             ", no heartbeat for " + formatAge(ageSeconds(s.now_ns, r.heartbeat_ns));
  }
  return "";
}

// "train.py:31 Trainer.save_checkpoint", as a Python traceback names a frame.
std::string pythonFrameText(const format::Frame& f) {
  const size_t slash = f.file.rfind('/');
  std::string text = slash == std::string::npos ? f.file : f.file.substr(slash + 1);
  if (f.line > 0) text += ":" + std::to_string(f.line);
  return text + " " + f.function;
}

// The call site column: the frame the call-site rule picks (the user's Python frame over library
// layers and wrappers; else the innermost native frame).
std::string siteText(const Snapshot& s, const RankEntry& r, const OpView& op) {
  const format::Stack* stack = stackOf(r, op);
  if (stack == nullptr || stack->frames.empty()) return "-";
  bool named = false;
  const int site = s.site_rule->siteFrame(stack->frames);
  return frameText(stack->frames[size_t(site)], *s.symbols, &named);
}

void drawIdentity(Frame& f, const Snapshot& s, const RankEntry& r, int row) {
  std::string line = rankLabel(r);
  if (r.local_rank >= 0) line += "  local " + std::to_string(r.local_rank);
  if (r.world_size >= 0) line += "  world " + std::to_string(r.world_size);
  line += "  host " + r.host + "  pid " + std::to_string(r.pid) + "  ";
  const int col = f.put(row, 1, line, Style::kHeader);
  const Style style = r.liveness == Liveness::kAlive ? Style::kNormal
                      : r.liveness == Liveness::kExited || r.liveness == Liveness::kStopped
                          ? Style::kDim
                      : r.liveness == Liveness::kStale ? Style::kWarning
                                                       : Style::kFailed;
  f.put(row, col, livenessText(s, r), style);

  const RankHistory& h = *r.history;
  line = "exe " + (r.exe.empty() ? std::string("?") : r.exe) + "  events " +
         std::to_string(h.events_total);
  if (h.events_lost > 0) line += " (" + std::to_string(h.events_lost) + " overwritten)";
  if (!r.run_id.empty()) line += "  run " + r.run_id;
  f.put(row + 1, 1, line);

  line = "comms";
  if (h.comms.empty()) line += " none";
  for (const CommView& c : h.comms) {
    line += "  " + shortCommId(c.comm_id) + " " + std::to_string(c.rank) + "/" +
            std::to_string(c.nranks) + " #" + std::to_string(c.coll_seq);
    if (c.state & format::kCommAborted) {
      line += " aborted";
    } else if (c.state & (format::kCommDestroyed | format::kCommFinalized)) {
      line += " closed";
    }
  }
  f.put(row + 2, 1, line);
}

void drawCalls(Frame& f, const Snapshot& s, const ViewState& v, const RankEntry& r,
               const RankLayout& l) {
  const int site_w =
      std::max(4, f.width() - (1 + kCallW + kCommW + kSeqW + kCountW + kStateW + kAgeW + 7));
  f.put(l.calls_top - 2, 1, "Last calls, newest first", Style::kHeader);
  f.put(l.calls_top - 1, 1,
        fit("CALL", kCallW) + " " + fit("COMM", kCommW) + " " + fitRight("SEQ", kSeqW) + " " +
            fitRight("COUNT", kCountW) + " " + fit("STATE", kStateW) + " " +
            fitRight("AGE", kAgeW) + " " + fit("CALL SITE", site_w),
        Style::kHeader);
  const std::vector<OpView>& ops = r.history->ops;
  const int n = static_cast<int>(ops.size());
  const int scroll = std::clamp(v.scroll, 0, std::max(0, n - l.calls_rows));
  if (n == 0) f.put(l.calls_top, 1, "No calls recorded yet.", Style::kDim);
  for (int k = 0; k < l.calls_rows && scroll + k < n; ++k) {
    const OpView& op = ops[size_t(n - 1 - scroll - k)];
    const int row = l.calls_top + k;
    int col = f.put(row, 1, fit(shortOpName(op.op), kCallW) + " ");
    col = f.put(row, col, fit(op.comm_id != 0 ? shortCommId(op.comm_id) : "-", kCommW) + " ");
    col = f.put(row, col, fitRight(op.op_seq > 0 ? std::to_string(op.op_seq) : "-", kSeqW) + " ");
    col = f.put(row, col, fitRight(countText(op.count), kCountW) + " ");
    col = f.put(row, col, fit(shortStateName(op.state), kStateW), stateStyle(op.state));
    const double age =
        ageSeconds(s.now_ns, op.incomplete() || op.end_ns == 0 ? op.enqueue_ns : op.end_ns);
    col = f.put(row, col, " " + fitRight(formatAge(age), kAgeW) + " ");
    f.put(row, col, fit(siteText(s, r, op), site_w));
  }
}

void drawStack(Frame& f, const Snapshot& s, const RankEntry& r, const RankStatus& st,
               const RankLayout& l) {
  const int focus = focusOp(r, st);
  // The stack's rows end where the thread snapshot's section begins.
  const int end = l.threads_rows > 0 ? l.threads_top - 1 : statusRow(f.height());
  if (focus < 0 || l.stack_top >= end) return;
  const OpView& op = r.history->ops[size_t(focus)];
  std::string title = (op.incomplete() ? "Oldest incomplete: " : "Last call: ") +
                      shortOpName(op.op) + (op.op_seq > 0 ? " #" + std::to_string(op.op_seq) : "");
  if (op.comm_id != 0) title += " on " + shortCommId(op.comm_id);
  title += " (event " + std::to_string(op.index) + "), ";
  title += op.incomplete() ? "waiting " + formatAge(ageSeconds(s.now_ns, op.enqueue_ns))
                           : shortStateName(op.state) + " " +
                                 formatAge(ageSeconds(s.now_ns, op.end_ns)) + " ago";
  f.put(l.stack_top, 1, title, op.incomplete() ? Style::kStarted : Style::kHeader);
  const format::Stack* stack = stackOf(r, op);
  int row = l.stack_top + 1;
  if (stack == nullptr || stack->frames.empty()) {
    f.put(row, 3, "no stack recorded (NCCLREC_STACK_DEPTH=0, or the stack table was full)",
          Style::kDim);
    return;
  }
  bool all_named = true;
  const int n = static_cast<int>(stack->frames.size());
  const int shown = std::min({n, l.stack_max, l.stack_rows});
  // '>' marks the call-site frame when it is not the innermost one.
  const int site = s.site_rule->siteFrame(stack->frames);
  for (int k = 0; k < n; ++k) {
    const format::Frame& frame = stack->frames[size_t(k)];
    bool named = true;
    // Python frames read as a traceback does: file:line, then the qualified name.
    const std::string text =
        frame.python ? pythonFrameText(frame) : frameText(frame, *s.symbols, &named);
    all_named &= named;
    if (k >= shown) continue;
    if (k == site && site > 0) f.put(row, 1, ">", Style::kHeader);
    f.put(row++, 3, "#" + std::to_string(k) + " " + text);
  }
  if (shown < n && row < end)
    f.put(row++, 3, "... " + std::to_string(n - shown) + " more", Style::kDim);
  if (!all_named && row < end) {
    f.put(row, 3, "module+offset only: black boxes hold addresses; no dump here names them yet",
          Style::kDim);
  }
}

// What a thread was doing, for one that did not answer: how it was missed, then its kernel state.
std::string missedText(const format::ThreadState& t) {
  std::string text = t.status == format::kThreadGone                  ? "gone before it was asked"
                     : (t.flags & format::kThreadInSleepingCall) != 0 ? "not asked (sleeping call)"
                     : t.status == format::kThreadNotAsked            ? "not asked"
                                                                      : "no answer";
  if ((t.flags & format::kThreadSignalBlocked) != 0) text += " (signal blocked)";
  if ((t.flags & format::kThreadSignalIgnored) != 0) text += " (signal ignored)";
  if (!t.wchan.empty()) text += "; kernel " + t.wchan;
  return text;
}

// Where a thread is: its innermost user frame (analyzer/site_rule.h userFrameIndex, the frames
// named with the borrowed names first), else why it has no stack.
std::string whereText(const Snapshot& s, const format::ThreadState& t) {
  if (t.frames.empty()) {
    const bool answered = t.status == format::kThreadAnswered || t.status == format::kThreadDumper;
    return answered ? "no frames" : missedText(t);
  }
  std::vector<format::Frame> named = t.frames;
  for (format::Frame& frame : named) {
    if (frame.python || !frame.function.empty() || frame.module.empty()) continue;
    const auto it = s.symbols->find(symbolKey(frame.module, frame.module_offset));
    if (it == s.symbols->end()) continue;
    frame.function = it->second.function;
    frame.file = it->second.file;
    frame.line = it->second.line;
  }
  const int at = analyzer::userFrameIndex(named, *s.site_rule);
  if (at < 0) return "-";
  const format::Frame& frame = named[size_t(at)];
  bool known = false;
  return frame.python ? pythonFrameText(frame) : frameText(frame, *s.symbols, &known);
}

// The latest thread snapshot: per thread its tid, name, kernel state and where it is.
void drawThreads(Frame& f, const Snapshot& s, const RankEntry& r, const RankLayout& l) {
  if (l.threads_rows <= 0 || r.threads == nullptr) return;
  const ThreadsView& snap = *r.threads;
  const std::string taken =
      snap.reason == format::DumpReason::kSnapshot
          ? "taken on request"
          : "at its " + std::string(format::dumpReasonName(snap.reason)) + " dump";
  f.put(l.threads_top, 1,
        "Threads " + formatAge(ageSeconds(s.now_ns, snap.taken_ns)) + " ago (" + taken + "), " +
            std::to_string(snap.total) + " threads, " + std::to_string(snap.answered) + " answered",
        Style::kHeader);
  constexpr int kTidW = 7, kNameW = 15;
  const int n = static_cast<int>(snap.listed);
  const int shown =
      std::min(n > l.threads_rows ? l.threads_rows - 1 : n, static_cast<int>(snap.threads.size()));
  for (int k = 0; k < shown; ++k) {
    const format::ThreadState& t = snap.threads[size_t(k)];
    const int row = l.threads_top + 1 + k;
    int col = f.put(row, 1, fitRight(std::to_string(t.tid), kTidW) + " ");
    col = f.put(row, col, fit(t.name.empty() ? "?" : t.name, kNameW) + " ");
    col = f.put(row, col, std::string(1, t.kernel_state != 0 ? t.kernel_state : '?') + "  ",
                t.kernel_state == 'R' ? Style::kStarted : Style::kNormal);
    f.put(row, col, fit(whereText(s, t), std::max(1, f.width() - col - 1)),
          t.frames.empty() ? Style::kDim : Style::kNormal);
  }
  if (shown < n)
    f.put(l.threads_top + 1 + shown, 3, "... " + std::to_string(n - shown) + " more", Style::kDim);
}

}  // namespace

void drawRank(Frame& f, const Snapshot& s, const ViewState& v) {
  const int top = contentTop(s);
  const int ri = detailRank(s, v);
  if (ri < 0 || s.status.size() != s.ranks.size()) {
    f.put(top, 1, "No rank selected: pick one in Summary or Comms and press Enter.", Style::kDim);
    return;
  }
  const RankEntry& r = s.ranks[size_t(ri)];
  const RankStatus& st = s.status[size_t(ri)];
  drawIdentity(f, s, r, top);
  const RankLayout l = rankLayout(s, focusStackRows(r, st), listedThreads(r), f.height());
  drawCalls(f, s, v, r, l);
  drawStack(f, s, r, st, l);
  drawThreads(f, s, r, l);
}

}  // namespace ncclrec::tui
