#include "analyzer/frames.h"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace ncclrec::analyzer {
std::string moduleBaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string moduleAndOffset(const format::Frame& f) {
  char text[64];
  std::snprintf(text, sizeof(text), "%s+0x%llx",
                f.module.empty() ? "?" : moduleBaseName(f.module).c_str(),
                static_cast<unsigned long long>(f.module_offset));
  return text;
}

void printFrames(const std::vector<format::Frame>& frames, int marked, const char* indent,
                 std::ostream& out) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const format::Frame& f = frames[i];
    out << indent << (static_cast<int>(i) == marked && marked > 0 ? "> " : "  ") << "#" << i
        << "  ";
    const std::string line = f.line > 0 ? ":" + std::to_string(f.line) : "";
    if (f.python) {
      out << (f.file.empty() ? "?" : f.file) << line << "  "
          << (f.function.empty() ? "??" : f.function) << "  [py]\n";
      continue;
    }
    out << (f.function.empty() ? "??" : f.function);
    if (!f.file.empty()) out << "  " << f.file << line;
    out << "  [" << moduleAndOffset(f) << "]\n";
  }
}

nlohmann::ordered_json framesJson(const std::vector<format::Frame>& frames) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const format::Frame& f : frames) {
    out.push_back({{"function", f.function},
                   {"file", f.file},
                   {"line", f.line},
                   {"module", f.module},
                   {"module_offset", f.module_offset},
                   {"python", f.python}});
  }
  return out;
}

}  // namespace ncclrec::analyzer
