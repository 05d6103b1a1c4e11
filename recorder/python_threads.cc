// PythonFrames' dump-path half: the Python frames of threads other than the caller, for the thread
// snapshots of threads that did not answer the snapshot signal (the signal blocked, the thread
// stopped). The interpreter's thread list is read without the GIL, as a debugger would: through
// CPython's PyInterpreterState_Head/_Next/_ThreadHead and each thread state's `next` pointer. The
// other thread may run (and free frames) while we read, so every read of its memory goes through
// the kernel (safe_read.h), which answers "not mapped" instead of faulting; the chain is walked
// twice and only the frames both walks agree on are kept. Never on the record path.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "format/bbox_layout.h"
#include "recorder/python_frames.h"
#include "recorder/real_dl.h"
#include "recorder/safe_read.h"

namespace ncclrec::recorder {
namespace {

using Chain = PythonLayout::Chain;

constexpr uint32_t kObType = 8;  // PyObject.ob_type in default builds
constexpr int kMaxWalkSteps = 1024;
constexpr int kMaxThreadStates = 4096;
constexpr int kMaxThreadFrames = format::kThreadMaxFrames;
// How far into glibc's thread descriptor the kernel thread id is looked for (it sits at 0x2d0 on
// x86_64 and 0xd0 on aarch64 in the glibc versions of Debian 11 to 13).
constexpr int kGlibcDescriptorScan = 2048;

template <class T>
bool safeLoad(uintptr_t base, uint32_t offset, T* value) {
  return safeRead(base + offset, value, sizeof(T));
}

}  // namespace

namespace detail {

int stableFrames(WalkedFrame* a, int na, bool a_complete, const WalkedFrame* b, int nb,
                 bool b_complete) {
  const auto same = [](const WalkedFrame& x, const WalkedFrame& y) {
    return x.frame == y.frame && x.code == y.code && x.offset == y.offset;
  };
  int k = 0;
  if (a_complete && b_complete) {
    while (k < na && k < nb && same(a[na - 1 - k], b[nb - 1 - k])) ++k;
    std::memmove(a, a + (na - k), sizeof(WalkedFrame) * static_cast<size_t>(k));
    return k;
  }
  while (k < na && k < nb && same(a[k], b[k])) ++k;
  return k;
}

}  // namespace detail

void PythonFrames::resolveThreadList() {
  interpreter_head_ =
      reinterpret_cast<InterpreterHeadFn>(realDlsym(RTLD_DEFAULT, "PyInterpreterState_Head"));
  interpreter_next_ =
      reinterpret_cast<InterpreterFn>(realDlsym(RTLD_DEFAULT, "PyInterpreterState_Next"));
  interpreter_thread_head_ =
      reinterpret_cast<InterpreterFn>(realDlsym(RTLD_DEFAULT, "PyInterpreterState_ThreadHead"));
  if (layout_->tstate_native_id == 0) {
    // Before 3.11 a thread state knows its thread only as a pthread_t, which glibc makes the
    // address of the thread's descriptor; the kernel id is a field of that descriptor at an offset
    // glibc keeps private. The calling thread knows both its pthread_t and its kernel id: the
    // first place its descriptor holds that id is the field (listThreads checks it again on the
    // dumping thread, so two threads must agree).
    const auto* self = reinterpret_cast<const uint8_t*>(pthread_self());
    const int tid = static_cast<int>(syscall(SYS_gettid));
    for (int offset = 0; offset + 4 <= kGlibcDescriptorScan; offset += 4) {
      int value = 0;
      if (!safeLoad(reinterpret_cast<uintptr_t>(self), offset, &value)) break;
      if (value == tid) {
        glibc_tid_offset_ = offset;
        break;
      }
    }
  }
}

bool PythonFrames::tidOf(uintptr_t tstate, int* tid) const {
  unsigned long id = 0;
  if (layout_->tstate_native_id != 0) {
    if (!safeLoad(tstate, layout_->tstate_native_id, &id) || id == 0) return false;
    *tid = static_cast<int>(id);
    return true;
  }
  if (glibc_tid_offset_ < 0 || !safeLoad(tstate, layout_->tstate_thread_id, &id) || id == 0)
    return false;
  return safeLoad(static_cast<uintptr_t>(id), static_cast<uint32_t>(glibc_tid_offset_), tid) &&
         *tid > 0;
}

int PythonFrames::listThreads(ThreadState* out, int max) const {
  if (interpreter_head_ == nullptr || interpreter_next_ == nullptr ||
      interpreter_thread_head_ == nullptr || max <= 0)
    return 0;
  if (layout_->tstate_native_id == 0) {
    // The calibration must hold on this thread too (see resolveThreadList).
    int tid = 0;
    if (glibc_tid_offset_ < 0 ||
        !safeLoad(reinterpret_cast<uintptr_t>(pthread_self()),
                  static_cast<uint32_t>(glibc_tid_offset_), &tid) ||
        tid != static_cast<int>(syscall(SYS_gettid)))
      return 0;
  }
  int n = 0;
  int visited = 0;
  for (void* interp = interpreter_head_(); interp != nullptr && n < max;
       interp = interpreter_next_(interp)) {
    auto tstate = reinterpret_cast<uintptr_t>(interpreter_thread_head_(interp));
    while (tstate != 0 && n < max && ++visited <= kMaxThreadStates) {
      int tid = 0;
      if (tidOf(tstate, &tid)) out[n++] = {tid, tstate};
      uintptr_t next = 0;
      if (!safeLoad(tstate, layout_->tstate_next, &next)) break;
      tstate = next;
    }
  }
  return n;
}

int PythonFrames::walkThread(uintptr_t tstate, WalkedFrame* out, int max_depth,
                             bool* complete) const {
  const PythonLayout& l = *layout_;
  *complete = false;
  uintptr_t frame = 0;
  if (!safeLoad(tstate, l.tstate_frame, &frame)) return 0;
  if (l.chain == Chain::kCFrame && frame != 0 && !safeLoad(frame, l.cframe_current, &frame))
    return 0;
  int n = 0;
  for (int steps = 0; steps < kMaxWalkSteps; ++steps) {
    if (frame == 0) {
      *complete = true;
      return n;
    }
    if (n >= max_depth) return n;
    uintptr_t next = 0;
    uintptr_t code = 0;
    if (!safeLoad(frame, l.frame_back, &next) || !safeLoad(frame, l.frame_code, &code)) return n;
    if (l.frame_owner >= 0) {
      uint8_t owner = 0;
      if (!safeLoad(frame, static_cast<uint32_t>(l.frame_owner), &owner)) return n;
      if (static_cast<int>(owner) == l.cstack_owner) {
        frame = next;
        continue;
      }
    }
    uintptr_t type = 0;
    if (code == 0 || !safeLoad(code, kObType, &type) ||
        type != reinterpret_cast<uintptr_t>(code_type_)) {
      frame = next;  // a shim or non-code frame, as capture() skips them
      continue;
    }
    uint32_t offset = format::kPyNoOffset;
    if (l.lasti_scale != 0) {
      int lasti = -1;
      if (safeLoad(frame, l.frame_instr, &lasti) && lasti >= 0)
        offset = static_cast<uint32_t>(lasti) * l.lasti_scale;
    } else {
      uintptr_t ip = 0;
      const uintptr_t start = code + l.code_adaptive;
      if (safeLoad(frame, l.frame_instr, &ip) && ip >= start && ip - start < format::kPyNoOffset)
        offset = static_cast<uint32_t>(ip - start);
    }
    out[n++] = {frame, code, offset};
    frame = next;
  }
  return n;
}

int PythonFrames::captureThread(uintptr_t tstate, uint64_t* out, int max_depth) {
  if (header_ == nullptr || max_depth <= 0) return 0;
  if (max_depth > kMaxThreadFrames) max_depth = kMaxThreadFrames;
  WalkedFrame first[kMaxThreadFrames];
  WalkedFrame second[kMaxThreadFrames];
  bool first_complete = false;
  bool second_complete = false;
  const int a = walkThread(tstate, first, max_depth, &first_complete);
  const int b = walkThread(tstate, second, max_depth, &second_complete);
  const int n = detail::stableFrames(first, a, first_complete, second, b, second_complete);
  for (int i = 0; i < n; ++i) {
    // Both walks found this code object in a live frame: its metadata is read as capture() does.
    const uint32_t index = codeIndex(reinterpret_cast<const uint8_t*>(first[i].code));
    out[i] = format::pythonFrameWord(index, first[i].offset);
  }
  return n;
}

}  // namespace ncclrec::recorder
