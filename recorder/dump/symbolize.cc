#include "recorder/dump/symbolize.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/text.h"
#include "format/debug_info.h"

namespace ncclrec::dump {
namespace {

std::string selfExePath() {
  char path[4096];
  const ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return len > 0 ? std::string(path, static_cast<size_t>(len)) : std::string();
}

}  // namespace

#ifdef NCCLREC_HAVE_LIBDW
// A libdw view of this process, built from /proc/self/maps. Objects dlopen'ed after it was
// built are picked up by one re-report on the first address no module claims.
struct Symbolizer::DebugInfo {
  Dwfl* dwfl = nullptr;
  bool refreshed = false;

  DebugInfo() {
    static char* debuginfo_path = nullptr;  // libdw's default search path
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = nullptr,
        .debuginfo_path = &debuginfo_path,
    };
    dwfl = dwfl_begin(&callbacks);
    if (dwfl != nullptr && !report()) {
      dwfl_end(dwfl);
      dwfl = nullptr;
    }
  }
  ~DebugInfo() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }

  bool report() {
    dwfl_report_begin(dwfl);
    const int rc = dwfl_linux_proc_report(dwfl, getpid());
    return dwfl_report_end(dwfl, nullptr, nullptr) == 0 && rc == 0;
  }

  // dwfl_addrmodule answers the last module for any address above all modules, so the range is
  // checked here.
  Dwfl_Module* containing(Dwarf_Addr pc) {
    Dwfl_Module* module = dwfl_addrmodule(dwfl, pc);
    Dwarf_Addr start = 0;
    Dwarf_Addr end = 0;
    if (module == nullptr ||
        dwfl_module_info(module, nullptr, &start, &end, nullptr, nullptr, nullptr, nullptr) ==
            nullptr ||
        pc < start || pc >= end) {
      return nullptr;
    }
    return module;
  }

  Dwfl_Module* moduleFor(Dwarf_Addr pc) {
    if (dwfl == nullptr) return nullptr;
    Dwfl_Module* module = containing(pc);
    if (module == nullptr && !refreshed) {
      refreshed = true;
      if (report()) module = containing(pc);
    }
    return module;
  }

  void fill(uint64_t address, uint64_t pc, format::Frame* frame) {
    Dwfl_Module* module = moduleFor(pc);
    if (module == nullptr) return;
    if (frame->module.empty()) {
      Dwarf_Addr bias = 0;
      const char* name =
          dwfl_module_info(module, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
      if (name != nullptr && dwfl_module_getelf(module, &bias) != nullptr) {
        frame->module = name;
        frame->module_offset = address - bias;
      }
    }
    format::addDebugInfo(module, pc, frame);
  }
};
#else
struct Symbolizer::DebugInfo {
  void fill(uint64_t, uint64_t, format::Frame*) {}
};
#endif

Symbolizer::Symbolizer(bool use_debug_info) : use_debug_info_(use_debug_info) {}

Symbolizer::~Symbolizer() = default;

format::Frame Symbolizer::symbolize(uint64_t address) {
  auto it = cache_.find(address);
  if (it != cache_.end()) return it->second;
  format::Frame frame = lookUp(address);
  cache_.emplace(address, frame);
  return frame;
}

format::Frame Symbolizer::lookUp(uint64_t address) {
  format::Frame frame;
  frame.address = address;
  if (address == 0) return frame;
  const uint64_t pc = address - 1;

  Dl_info info{};
  link_map* map = nullptr;
  if (dladdr1(reinterpret_cast<void*>(pc), &info, reinterpret_cast<void**>(&map),
              RTLD_DL_LINKMAP) != 0) {
    if (map != nullptr) {
      // Offsets are from the load bias, as in the module map (ModuleRecord::base).
      frame.module_offset = address - map->l_addr;
      if (map->l_name != nullptr && map->l_name[0] != '\0') {
        frame.module = map->l_name;
      } else {
        if (exe_path_.empty()) exe_path_ = selfExePath();
        frame.module = exe_path_;
      }
    } else if (info.dli_fname != nullptr) {
      frame.module = info.dli_fname;
      frame.module_offset = address - reinterpret_cast<uint64_t>(info.dli_fbase);
    }
    if (info.dli_sname != nullptr) frame.function = base::demangle(info.dli_sname);
  }

  if (use_debug_info_) {
    if (debug_info_ == nullptr) debug_info_ = std::make_unique<DebugInfo>();
    debug_info_->fill(address, pc, &frame);
  }
  return frame;
}

}  // namespace ncclrec::dump
