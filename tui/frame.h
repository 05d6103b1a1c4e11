// One screen of ncclrec-top as a value: a grid of ASCII cells, each with a Style. draw() (draw.h)
// returns one; the terminal (terminal.h) paints it, --once prints its text, and the golden tests
// compare golden() with files under tests/data/top/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ncclrec::tui {

// The letter of each style is what golden files show for its cells.
enum class Style : char {
  kNormal = '.',
  kTitle = 'T',      // title bar
  kTab = 'A',        // the active tab
  kHeader = 'H',     // column headers
  kSelected = 'S',   // the selected row
  kBanner = 'B',     // the hang banner
  kCompleted = 'C',  // op states, in the sequence grid and the lists
  kStarted = 'R',
  kEnqueued = 'E',
  kMissing = 'M',  // not issued yet; lagging counts
  kFailed = 'F',   // failed op, crashed or gone rank
  kDim = 'D',      // secondary text, exited ranks
  kWarning = 'W',  // what could not be read
};

class Frame {
 public:
  // A frame of blanks; sizes below 1 are taken as 1.
  Frame(int width, int height);

  int width() const { return width_; }
  int height() const { return height_; }

  // Writes `text` from (row, col), clipped to the frame (bytes outside printable ASCII become
  // '?'); returns the column after the last cell written or skipped.
  int put(int row, int col, std::string_view text, Style style = Style::kNormal);
  // Sets the style of every cell of `row` (bars, the selected row).
  void styleRow(int row, Style style);
  // Sets the style of cells [col, col + n) of `row`.
  void styleCells(int row, int col, int n, Style style);

  const std::string& text(int row) const { return text_[static_cast<size_t>(row)]; }
  const std::string& styles(int row) const { return styles_[static_cast<size_t>(row)]; }

  // Lines without trailing blanks, each ended by '\n' (what --once prints).
  std::string plainText() const;
  // plainText(), a "--- styles" line, then one line of style letters per row, trailing '.'
  // removed: the golden file format.
  std::string golden() const;

 private:
  int width_;
  int height_;
  std::vector<std::string> text_;
  std::vector<std::string> styles_;
};

}  // namespace ncclrec::tui
