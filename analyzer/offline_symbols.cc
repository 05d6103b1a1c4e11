#include "analyzer/offline_symbols.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>

#include "format/debug_info.h"

namespace ncclrec::analyzer {
namespace {

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

#ifdef NCCLREC_HAVE_LIBDW
// One libdw session holding every module opened so far. Each module is reported at base 0, so
// an address inside it is its offset from the load bias, which is what frames record
// (Frame::module_offset), for position-independent objects and fixed executables alike.
class ModuleFiles {
 public:
  ModuleFiles() {
    static char* debuginfo_path = nullptr;  // libdw's default search path
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = dwfl_offline_section_address,
        .debuginfo_path = &debuginfo_path,
    };
    dwfl_ = dwfl_begin(&callbacks);
  }
  ~ModuleFiles() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }
  ModuleFiles(const ModuleFiles&) = delete;
  ModuleFiles& operator=(const ModuleFiles&) = delete;

  // nullptr when the file cannot be read or is not the recorded build.
  Dwfl_Module* open(const std::string& path, const std::string& build_id) {
    const auto [it, inserted] = modules_.emplace(path, nullptr);
    if (!inserted || dwfl_ == nullptr) return it->second;
    // The path comes from a recording: only a regular file is opened (a FIFO would block).
    struct stat st {};
    if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return nullptr;
    dwfl_report_begin_add(dwfl_);
    Dwfl_Module* m = dwfl_report_elf(dwfl_, path.c_str(), path.c_str(), -1, 0, false);
    dwfl_report_end(dwfl_, nullptr, nullptr);
    if (m != nullptr && !build_id.empty() && hexBuildId(m) != build_id) m = nullptr;
    it->second = m;
    return m;
  }

 private:
  static std::string hexBuildId(Dwfl_Module* m) {
    const unsigned char* bits = nullptr;
    GElf_Addr vaddr = 0;
    const int len = dwfl_module_build_id(m, &bits, &vaddr);
    std::string hex;
    for (int i = 0; i < len; ++i) {
      char b[3];
      std::snprintf(b, sizeof(b), "%02x", bits[i]);
      hex += b;
    }
    return hex;
  }

  Dwfl* dwfl_ = nullptr;
  std::map<std::string, Dwfl_Module*> modules_;
};

format::Frame lookUp(Dwfl_Module* m, const format::Frame& raw) {
  format::Frame f = raw;
  // A return address: the call instruction is the byte before it.
  format::addDebugInfo(m, raw.module_offset - 1, &f);
  return f;
}
#endif

}  // namespace

void addOfflineSymbols(const std::vector<format::RankData>& ranks, FrameNames& symbols) {
#ifdef NCCLREC_HAVE_LIBDW
  std::unordered_map<std::string, std::string> build_ids;  // module path -> recorded build id
  std::unique_ptr<ModuleFiles> files;                      // opened on the first frame to resolve
  for (const format::RankData& r : ranks) {
    // Dumps come symbolized: at scale (thousands of ranks) they must cost nothing here.
    if (std::all_of(r.stacks.begin(), r.stacks.end(),
                    [](const auto& s) { return s.second.symbolized; })) {
      continue;
    }
    for (const format::Module& m : r.modules) build_ids.emplace(m.path, m.build_id);
    for (const auto& [id, stack] : r.stacks) {
      if (stack.symbolized) continue;
      for (const format::Frame& raw : stack.frames) {
        if (!raw.function.empty() || raw.module.empty() || raw.module_offset == 0) continue;
        std::string key = baseName(raw.module) + "+" + std::to_string(raw.module_offset);
        if (symbols.contains(key)) continue;
        if (files == nullptr) files = std::make_unique<ModuleFiles>();
        const auto known = build_ids.find(raw.module);
        Dwfl_Module* m =
            files->open(raw.module, known == build_ids.end() ? std::string() : known->second);
        if (m == nullptr) continue;
        format::Frame f = lookUp(m, raw);
        if (!f.function.empty()) symbols.emplace(std::move(key), std::move(f));
      }
    }
  }
#else
  (void)ranks;
  (void)symbols;
#endif
}

}  // namespace ncclrec::analyzer
