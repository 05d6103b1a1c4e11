#include "tui/app.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <thread>

#include "base/clock.h"
#include "live/analysis.h"
#include "live/collector.h"
#include "live/snapshot_request.h"
#include "tui/draw.h"
#include "tui/terminal.h"

namespace ncclrec::tui {

namespace {

live::CollectorOptions collectorOptions(const TopOptions& o) {
  live::CollectorOptions c;
  c.dir = o.dir;
  c.connect = o.connect;
  c.token = o.token;
  c.hang_after_s = o.hang_after_s;
  c.library_frames = o.library_frames;
  return c;
}

// The view --once draws: the screen asked for, on the rank asked for (else the slowest).
ViewState onceView(const TopOptions& o, const Snapshot& s) {
  ViewState v;
  v.screen = o.screen;
  if (o.screen != Screen::kRank) return v;
  int pick = s.summary.slowest;
  for (size_t i = 0; i < s.ranks.size(); ++i) {
    if (o.rank >= 0 && s.ranks[i].global_rank == o.rank) pick = static_cast<int>(i);
  }
  if (pick >= 0) v.rank_key = rankKey(s.ranks[size_t(pick)]);
  return v;
}

int runOnce(const TopOptions& o, std::ostream& out, std::ostream& err) {
  live::Collector collector(collectorOptions(o));
  std::shared_ptr<const Snapshot> s = collector.collect(base::realtimeNs());
  // Names for the stacks come from the dumps, one per collect: let a few be read first.
  for (uint64_t read = 0; read < 8 && collector.stats().dumps_read > read; ++read)
    s = collector.collect(base::realtimeNs());
  if (o.screen == Screen::kRank && o.rank >= 0) {
    bool found = false;
    for (const RankEntry& r : s->ranks) found |= r.global_rank == o.rank;
    if (!found && !s->ranks.empty()) {
      err << "ncclrec-top: --rank " << o.rank << ": no such rank in " << s->source_label << "\n";
      return kExitUsage;
    }
  }
  out << draw(*s, onceView(o, *s), o.width, o.height).plainText();
  if (s->ranks.empty()) {
    for (const std::string& note : s->notes) err << "ncclrec-top: " << note << "\n";
    if (s->notes.empty()) err << "ncclrec-top: " << s->source_label << ": no ranks\n";
    return kExitNothingReadable;
  }
  return s->summary.hang ? kExitHang : kExitOk;
}

double cpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Refreshes as the interactive mode does (collect, then draw an 80x24 frame), on one thread,
// without a terminal; CPU from getrusage over the whole run.
int runBench(const TopOptions& o, std::ostream& out) {
  using Clock = std::chrono::steady_clock;
  live::Collector collector(collectorOptions(o));
  const double cpu0 = cpuSeconds();
  const auto t0 = Clock::now();
  const auto period = std::chrono::duration<double>(o.interval_s);
  auto next = t0;
  int refreshes = 0;
  size_t ranks = 0;
  double collect_s = 0;
  double draw_s = 0;
  double worst_s = 0;
  ViewState view;
  while (std::chrono::duration<double>(Clock::now() - t0).count() < o.bench_s) {
    const auto a = Clock::now();
    auto s = collector.collect(base::realtimeNs());
    const auto b = Clock::now();
    const Frame f = draw(*s, view, 80, 24);
    const auto c = Clock::now();
    collect_s += std::chrono::duration<double>(b - a).count();
    draw_s += std::chrono::duration<double>(c - b).count();
    worst_s = std::max(worst_s, std::chrono::duration<double>(c - a).count());
    ranks = s->ranks.size();
    ++refreshes;
    next += std::chrono::duration_cast<Clock::duration>(period);
    if (next > Clock::now()) std::this_thread::sleep_until(next);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpuSeconds() - cpu0;
  char line[512];
  std::snprintf(line, sizeof(line),
                "ncclrec-top bench: ranks=%zu refreshes=%d wall_s=%.2f rate_hz=%.2f cpu_s=%.3f "
                "cpu_pct=%.2f collect_ms=%.3f draw_ms=%.3f worst_ms=%.3f dir_scans=%llu\n",
                ranks, refreshes, wall, refreshes / wall, cpu, 100.0 * cpu / wall,
                refreshes > 0 ? 1e3 * collect_s / refreshes : 0.0,
                refreshes > 0 ? 1e3 * draw_s / refreshes : 0.0, 1e3 * worst_s,
                static_cast<unsigned long long>(collector.stats().dir_scans));
  out << line;
  return kExitOk;
}

// What the collector thread and the main thread share; lives on runInteractive's stack.
struct Mailbox {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<const Snapshot> latest;  // guarded by mu
  bool stop = false;                       // guarded by mu
  bool ask_agents = false;                 // guarded by mu: pass a snapshot request to the agents
  int wake_read = -1;                      // a byte is written for every new snapshot
  int wake_write = -1;
};

void collectLoop(const TopOptions& o, Mailbox* box) {
  // Only the main thread takes SIGWINCH (ncurses' handler); the others arrive on its signalfd.
  sigset_t winch;
  sigemptyset(&winch);
  sigaddset(&winch, SIGWINCH);
  pthread_sigmask(SIG_BLOCK, &winch, nullptr);
  live::Collector collector(collectorOptions(o));
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(o.interval_s));
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(box->mu);
      if (box->ask_agents) collector.askRemoteSnapshots();
      box->ask_agents = false;
    }
    auto s = collector.collect(base::realtimeNs());
    {
      std::lock_guard<std::mutex> lock(box->mu);
      if (box->stop) return;
      box->latest = std::move(s);
    }
    const char c = 's';
    (void)!write(box->wake_write, &c, 1);
    next += period;
    std::unique_lock<std::mutex> lock(box->mu);
    if (box->cv.wait_until(lock, next, [box] { return box->stop || box->ask_agents; })) {
      if (box->stop) return;
      next = std::chrono::steady_clock::now();  // a request for the agents: collect at once
    }
  }
}

int runInteractive(const TopOptions& o, std::ostream& err) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  // Blocked before any thread starts so that every thread inherits it: the signals reach only
  // the signalfd, read by the main thread, which then restores the terminal.
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  const int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  int pipefd[2] = {-1, -1};
  if (sigfd < 0 || pipe2(pipefd, O_CLOEXEC | O_NONBLOCK) != 0) {
    err << "ncclrec-top: cannot set up signals: " << std::strerror(errno) << "\n";
    return kExitUsage;
  }
  auto terminal = Terminal::open();
  if (!terminal.ok()) {
    err << terminal.status().message() << "\n";
    close(sigfd);
    close(pipefd[0]);
    close(pipefd[1]);
    return kExitUsage;
  }
  Mailbox box;
  box.wake_read = pipefd[0];
  box.wake_write = pipefd[1];
  std::thread collector(collectLoop, std::cref(o), &box);

  auto snapshot = std::make_shared<Snapshot>();
  snapshot->source_label = o.dir.empty() ? "connecting..." : o.dir + " (reading...)";
  snapshot->hang_after_s = o.hang_after_s;
  live::analyze(snapshot.get());
  std::shared_ptr<const Snapshot> shown = snapshot;
  ViewState view;
  int exit_code = kExitOk;
  bool dirty = true;
  while (!view.quit && exit_code == kExitOk) {
    if (dirty) {
      (*terminal)->paint(draw(*shown, view, (*terminal)->width(), (*terminal)->height()));
      dirty = false;
    }
    pollfd fds[3] = {{STDIN_FILENO, POLLIN, 0}, {sigfd, POLLIN, 0}, {pipefd[0], POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno != EINTR) break;
      dirty = true;  // SIGWINCH interrupts poll; getch() then reports KEY_RESIZE
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo info{};
      if (read(sigfd, &info, sizeof(info)) == sizeof(info))
        exit_code = 128 + static_cast<int>(info.ssi_signo);
    }
    if (fds[2].revents & POLLIN) {
      char buf[64];
      while (read(pipefd[0], buf, sizeof(buf)) > 0) {
      }
      std::lock_guard<std::mutex> lock(box.mu);
      if (box.latest != nullptr) shown = box.latest;
      dirty = true;
    }
    for (int key; (key = (*terminal)->readKey()) != kNoKey;) {
      dirty = true;
      if (key == kKeyResize || key == 0) continue;
      view = handleKey(view, key, *shown, (*terminal)->width(), (*terminal)->height());
      if (view.ask_snapshot) {
        view.ask_snapshot = false;
        bool ask_agents = false;
        view.message = live::requestThreadSnapshots(*shown, &ask_agents);
        if (ask_agents) {
          {
            std::lock_guard<std::mutex> lock(box.mu);
            box.ask_agents = true;
          }
          box.cv.notify_all();
        }
      }
      if (view.quit) break;
    }
  }
  // The terminal first: a collector blocked on a slow agent must not keep it in curses mode.
  (*terminal)->restore();
  {
    std::lock_guard<std::mutex> lock(box.mu);
    box.stop = true;
  }
  box.cv.notify_all();
  collector.join();
  close(sigfd);
  close(pipefd[0]);
  close(pipefd[1]);
  return exit_code;
}

}  // namespace

int runTop(const TopOptions& options, std::ostream& out, std::ostream& err) {
  if (options.once) return runOnce(options, out, err);
  if (options.bench_s > 0) return runBench(options, out);
  return runInteractive(options, err);
}

}  // namespace ncclrec::tui
