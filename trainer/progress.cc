#include "trainer/progress.h"

#include <unistd.h>

#include "base/clock.h"

namespace ncclrec::trainer {
namespace {

double nowSeconds() { return static_cast<double>(base::monotonicNs()) * 1e-9; }

// Redraws on a terminal are capped at this rate: a fast loop must not spend its time printing.
constexpr double kRedrawInterval = 0.1;

}  // namespace

Progress::Progress(bool enabled, int64_t total_steps, int64_t log_every, FILE* out)
    : Progress(enabled, total_steps, log_every, out, isatty(fileno(out)) != 0) {}

Progress::Progress(bool enabled, int64_t total_steps, int64_t log_every, FILE* out, bool tty)
    : enabled_(enabled), total_(total_steps), log_every_(log_every), out_(out), tty_(tty) {}

void Progress::step(int64_t step, double loss, double steps_per_s) {
  if (!enabled_) return;
  const bool last = step == total_;
  char text[160];
  std::snprintf(text, sizeof(text), "step %lld/%lld  loss %.6f  %.1f steps/s",
                static_cast<long long>(step), static_cast<long long>(total_), loss, steps_per_s);
  if (tty_) {
    const double now = nowSeconds();
    if (!last && last_draw_s_ >= 0 && now - last_draw_s_ < kRedrawInterval) return;
    last_draw_s_ = now;
    std::fprintf(out_, "\r\033[K%s", text);
    drawn_ = true;
    if (last) finish();
    std::fflush(out_);
    return;
  }
  if (step % log_every_ != 0 && !last && step != 1) return;
  std::fprintf(out_, "%s\n", text);
  std::fflush(out_);
}

void Progress::line(const std::string& text) {
  if (!enabled_) return;
  if (drawn_) std::fprintf(out_, "\r\033[K");
  drawn_ = false;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(out_, "\n");
  drawn_ = false;
  std::fflush(out_);
}

}  // namespace ncclrec::trainer
