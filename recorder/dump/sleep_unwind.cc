#include "recorder/dump/sleep_unwind.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "recorder/safe_read.h"

#ifdef NCCLREC_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif

namespace ncclrec::dump {
namespace {

std::optional<BlockedCall> readBlockedCall(int tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[256];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return std::nullopt;
  return parseBlockedCall(std::string_view(text, static_cast<size_t>(n)));
}

#ifdef NCCLREC_HAVE_LIBDW
// The DWARF number of the stack pointer register; the program counter goes apart.
#if defined(__x86_64__)
constexpr int kDwarfSp = 7;
#elif defined(__aarch64__)
constexpr int kDwarfSp = 31;
#else
constexpr int kDwarfSp = -1;
#endif

struct Walk {
  int tid = 0;
  BlockedCall at;
  size_t max_frames = 0;
  std::vector<uint64_t> frames;
};

// The walk under way: libdw's callbacks get the session's argument, fixed when it attaches.
struct Current {
  Walk* walk = nullptr;
};

pid_t nextThread(Dwfl*, void* arg, void** thread_arg) {
  // One thread: the one asked for, once.
  if (*thread_arg != nullptr) return 0;
  Walk* walk = static_cast<Current*>(arg)->walk;
  *thread_arg = walk;
  return walk->tid;
}

bool getThread(Dwfl*, pid_t tid, void* arg, void** thread_arg) {
  Walk* walk = static_cast<Current*>(arg)->walk;
  if (tid != walk->tid) return false;
  *thread_arg = walk;
  return true;
}

bool memoryRead(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void*) {
  return recorder::safeRead(static_cast<uintptr_t>(address), result, sizeof(*result));
}

bool setInitialRegisters(Dwfl_Thread* thread, void* arg) {
  const Walk* walk = static_cast<Walk*>(arg);
  const Dwarf_Word sp = walk->at.sp;
  if (!dwfl_thread_state_registers(thread, kDwarfSp, 1, &sp)) return false;
  dwfl_thread_state_register_pc(thread, walk->at.pc);
  return true;
}

int onFrame(Dwfl_Frame* frame, void* arg) {
  Walk* walk = static_cast<Walk*>(arg);
  Dwarf_Addr pc = 0;
  bool activation = false;
  if (!dwfl_frame_pc(frame, &pc, &activation) || pc == 0) return DWARF_CB_ABORT;
  walk->frames.push_back(pc);
  return walk->frames.size() >= walk->max_frames ? DWARF_CB_ABORT : DWARF_CB_OK;
}
#endif

}  // namespace

std::optional<BlockedCall> parseBlockedCall(std::string_view line) {
  const std::string text(line);
  const char* p = text.c_str();
  char* end = nullptr;
  const long nr = strtol(p, &end, 10);
  if (end == p || nr < 0) return std::nullopt;
  unsigned long long values[8] = {};  // six arguments, the stack pointer, the program counter
  for (unsigned long long& v : values) {
    p = end;
    while (*p == ' ') ++p;
    if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X')) return std::nullopt;
    v = strtoull(p, &end, 16);
    if (end == p) return std::nullopt;
  }
  while (*end == ' ' || *end == '\n') ++end;
  if (*end != '\0' || values[6] == 0 || values[7] == 0) return std::nullopt;
  return BlockedCall{nr, values[6], values[7]};
}

#ifdef NCCLREC_HAVE_LIBDW
struct BlockedThreadUnwinder::Session {
  Dwfl* dwfl = nullptr;
  Current current;

  ~Session() {
    if (dwfl != nullptr) dwfl_end(dwfl);
  }

  bool open() {
    static char* debuginfo_path = nullptr;
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
        .section_address = nullptr,
        .debuginfo_path = &debuginfo_path,
    };
    static const Dwfl_Thread_Callbacks thread_callbacks = {
        .next_thread = nextThread,
        .get_thread = getThread,
        .memory_read = memoryRead,
        .set_initial_registers = setInitialRegisters,
        .detach = nullptr,
        .thread_detach = nullptr,
    };
    dwfl = dwfl_begin(&callbacks);
    if (dwfl == nullptr) return false;
    dwfl_report_begin(dwfl);
    const int reported = dwfl_linux_proc_report(dwfl, getpid());
    return dwfl_report_end(dwfl, nullptr, nullptr) == 0 && reported == 0 &&
           dwfl_attach_state(dwfl, nullptr, getpid(), &thread_callbacks, &current);
  }
};
#else
struct BlockedThreadUnwinder::Session {};
#endif

BlockedThreadUnwinder::BlockedThreadUnwinder() = default;
BlockedThreadUnwinder::~BlockedThreadUnwinder() = default;

std::vector<uint64_t> BlockedThreadUnwinder::unwind(int tid, size_t max_frames) {
#ifdef NCCLREC_HAVE_LIBDW
  if (kDwarfSp < 0 || max_frames == 0 || failed_) return {};
  const std::optional<BlockedCall> before = readBlockedCall(tid);
  if (!before) return {};
  if (session_ == nullptr) {
    session_ = std::make_unique<Session>();
    if (!session_->open()) {
      failed_ = true;
      return {};
    }
  }
  Walk walk;
  walk.tid = tid;
  walk.at = *before;
  walk.max_frames = max_frames;
  session_->current.walk = &walk;
  // The end of the walk reads as an error on some systems: the frames found are kept.
  dwfl_getthread_frames(session_->dwfl, tid, onFrame, &walk);
  session_->current.walk = nullptr;
  // Still in the same call at the same place: the stack read is the one it sleeps on.
  if (readBlockedCall(tid) != before || walk.frames.empty() || walk.frames.front() != before->pc)
    return {};
  return std::move(walk.frames);
#else
  (void)tid;
  (void)max_frames;
  return {};
#endif
}

}  // namespace ncclrec::dump
