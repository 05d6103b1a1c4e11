#include "tui/terminal.h"

#include <curses.h>
#include <unistd.h>

#include <string>

#include "tui/view_state.h"

namespace ncclrec::tui {
namespace {

// Color pair numbers, one per colored style.
enum Pair : short {
  kPairTitle = 1,
  kPairBanner,
  kPairCompleted,
  kPairStarted,
  kPairEnqueued,
  kPairMissing,
  kPairFailed,
  kPairWarning,
};

void initColors() {
  if (!has_colors()) return;
  start_color();
  use_default_colors();  // -1 below: the terminal's own background
  init_pair(kPairTitle, COLOR_BLACK, COLOR_CYAN);
  init_pair(kPairBanner, COLOR_WHITE, COLOR_RED);
  init_pair(kPairCompleted, COLOR_GREEN, -1);
  init_pair(kPairStarted, COLOR_YELLOW, -1);
  init_pair(kPairEnqueued, COLOR_CYAN, -1);
  init_pair(kPairMissing, COLOR_RED, -1);
  init_pair(kPairFailed, COLOR_MAGENTA, -1);
  init_pair(kPairWarning, COLOR_YELLOW, -1);
}

attr_t attrOf(Style style) {
  const bool color = has_colors();
  auto pair = [&](short p) { return color ? COLOR_PAIR(p) : A_NORMAL; };
  switch (style) {
    case Style::kNormal:
      return A_NORMAL;
    case Style::kTitle:
      return color ? pair(kPairTitle) : A_REVERSE;
    case Style::kTab:
      return A_REVERSE | A_BOLD;
    case Style::kHeader:
      return A_BOLD;
    case Style::kSelected:
      return A_REVERSE;
    case Style::kBanner:
      return (color ? pair(kPairBanner) : A_REVERSE) | A_BOLD;
    case Style::kCompleted:
      return pair(kPairCompleted);
    case Style::kStarted:
      return pair(kPairStarted) | A_BOLD;
    case Style::kEnqueued:
      return pair(kPairEnqueued);
    case Style::kMissing:
      return color ? pair(kPairMissing) | A_BOLD : A_UNDERLINE;
    case Style::kFailed:
      return pair(kPairFailed) | A_BOLD;
    case Style::kDim:
      return A_DIM;
    case Style::kWarning:
      return pair(kPairWarning) | A_BOLD;
  }
  return A_NORMAL;
}

}  // namespace

base::StatusOr<std::unique_ptr<Terminal>> Terminal::open() {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
    return base::Status::error(
        "ncclrec-top: stdin and stdout must be a terminal (use --once for plain text)");
  }
  // newterm instead of initscr: initscr exits the process when it cannot start.
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  if (screen == nullptr) {
    const char* term = getenv("TERM");
    return base::Status::error(std::string("ncclrec-top: cannot use the terminal (TERM=") +
                               (term != nullptr ? term : "unset") + "); use --once");
  }
  std::unique_ptr<Terminal> t(new Terminal());
  t->active_ = true;
  set_escdelay(25);  // Esc alone should not wait a second to be told from an arrow key
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);
  curs_set(0);
  initColors();
  return t;
}

Terminal::~Terminal() { restore(); }

void Terminal::restore() {
  if (!active_) return;
  active_ = false;
  curs_set(1);
  endwin();
}

int Terminal::width() const { return COLS; }
int Terminal::height() const { return LINES; }

void Terminal::paint(const Frame& frame) {
  erase();
  const int rows = std::min(frame.height(), LINES);
  const int cols = std::min(frame.width(), COLS);
  for (int r = 0; r < rows; ++r) {
    const std::string& text = frame.text(r);
    const std::string& styles = frame.styles(r);
    for (int c = 0; c < cols;) {
      int end = c + 1;
      while (end < cols && styles[size_t(end)] == styles[size_t(c)]) ++end;
      const attr_t attr = attrOf(static_cast<Style>(styles[size_t(c)]));
      attrset(attr);
      // The bottom-right cell cannot be written without scrolling: leave it out.
      const int n = (r == LINES - 1 && end == COLS) ? end - c - 1 : end - c;
      if (n > 0) mvaddnstr(r, c, text.data() + c, n);
      c = end;
    }
  }
  attrset(A_NORMAL);
  wnoutrefresh(stdscr);
  doupdate();
}

int Terminal::readKey() {
  const int ch = getch();
  switch (ch) {
    case ERR:
      return kNoKey;
    case KEY_RESIZE:
      return kKeyResize;
    case KEY_UP:
      return kKeyUp;
    case KEY_DOWN:
      return kKeyDown;
    case KEY_LEFT:
      return kKeyLeft;
    case KEY_RIGHT:
      return kKeyRight;
    case KEY_PPAGE:
      return kKeyPageUp;
    case KEY_NPAGE:
      return kKeyPageDown;
    case KEY_HOME:
      return kKeyHome;
    case KEY_END:
      return kKeyEnd;
    case KEY_ENTER:
    case '\n':
    case '\r':
      return kKeyEnter;
    case 27:
      return kKeyEscape;
    case KEY_BACKSPACE:
    case 127:
    case 8:
      return kKeyBackspace;
    case '\t':
      return kKeyTab;
    default:
      return ch >= 0x20 && ch < 0x7f ? ch : 0;  // 0: a key nothing is bound to
  }
}

}  // namespace ncclrec::tui
