// The ncurses session of the interactive ncclrec-top. Owned by the main thread, which alone
// touches the terminal: the collector thread never draws.
//
// paint() erases ncurses' virtual screen, writes a prepared Frame into it and refreshes once, so
// ncurses sends only the cells that changed: no clear(), no flicker. The destructor (and
// restore()) ends the session and gives the terminal back as it was.
#pragma once

#include <memory>

#include "base/status.h"
#include "tui/frame.h"

namespace ncclrec::tui {

inline constexpr int kKeyResize = -2;  // the terminal changed size (readKey)
inline constexpr int kNoKey = -1;

class Terminal {
 public:
  // Starts ncurses on stdin/stdout (which must be a terminal).
  static base::StatusOr<std::unique_ptr<Terminal>> open();
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  int width() const;
  int height() const;
  void paint(const Frame& frame);
  // The next key without waiting: a Key of view_state.h, a printable character, kKeyResize, or
  // 0 for a key nothing is bound to, kNoKey when none is pending.
  int readKey();
  // Ends the session now (idempotent); the destructor does it too.
  void restore();

 private:
  Terminal() = default;
  bool active_ = false;
};

}  // namespace ncclrec::tui
