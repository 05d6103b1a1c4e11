#include "tui/frame.h"

#include <algorithm>

namespace ncclrec::tui {

Frame::Frame(int width, int height)
    : width_(std::max(1, width)),
      height_(std::max(1, height)),
      text_(static_cast<size_t>(height_), std::string(static_cast<size_t>(width_), ' ')),
      styles_(static_cast<size_t>(height_),
              std::string(static_cast<size_t>(width_), static_cast<char>(Style::kNormal))) {}

int Frame::put(int row, int col, std::string_view text, Style style) {
  if (row < 0 || row >= height_) return col + static_cast<int>(text.size());
  for (char c : text) {
    if (col >= 0 && col < width_) {
      const auto u = static_cast<unsigned char>(c);
      text_[size_t(row)][size_t(col)] = u >= 0x20 && u < 0x7f ? c : '?';
      styles_[size_t(row)][size_t(col)] = static_cast<char>(style);
    }
    ++col;
  }
  return col;
}

void Frame::styleRow(int row, Style style) { styleCells(row, 0, width_, style); }

void Frame::styleCells(int row, int col, int n, Style style) {
  if (row < 0 || row >= height_) return;
  for (int c = std::max(0, col); c < std::min(width_, col + n); ++c)
    styles_[size_t(row)][size_t(c)] = static_cast<char>(style);
}

namespace {
std::string trimmed(const std::string& s, char blank) {
  const size_t end = s.find_last_not_of(blank);
  return end == std::string::npos ? std::string() : s.substr(0, end + 1);
}
}  // namespace

std::string Frame::plainText() const {
  std::string out;
  for (const std::string& line : text_) out += trimmed(line, ' ') + '\n';
  return out;
}

std::string Frame::golden() const {
  std::string out = plainText() + "--- styles\n";
  for (const std::string& line : styles_)
    out += trimmed(line, static_cast<char>(Style::kNormal)) + '\n';
  return out;
}

}  // namespace ncclrec::tui
