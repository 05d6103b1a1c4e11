// Python frames on the record path. In a process running CPython, a thread that calls NCCL from
// Python (ctypes, PyTorch's c10d) has its Python call chain in its own thread state; ctypes and
// c10d release the GIL around the call, and only the thread itself changes its own frame chain,
// so the thread can read its own frames while it is inside our wrapper, without the GIL and
// without linking libpython. Each frame becomes one stack word (bbox_layout.h: code record index
// + instruction offset); the first time a code object is seen, its file name, qualified name,
// first line and line table are copied into the black box, so frames are named (lines computed)
// at dump or analysis time, even from the black box of a killed process.
//
// Supported: CPython 3.9 to 3.13 with the default object layout (not free-threaded, not
// Py_TRACE_REFS). Anything else is refused at detection (one warning from the recorder), and
// the process gets native stacks only.
//
// Threads: detect() and attach() once, under the recorder's init lock. capture() from any
// thread, concurrently: no allocation, lock, syscall or log; the first sight of a code object
// copies its metadata into the black box (bounded, lock-free).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "format/bbox_layout.h"

namespace ncclrec::recorder {

namespace detail {
// One frame of another thread's chain as captureThread() walks it.
struct WalkedFrame {
  uintptr_t frame;  // the frame's address
  uintptr_t code;   // its code object
  uint32_t offset;  // instruction offset, format::kPyNoOffset when unknown
};
// The frames two walks of one chain (innermost first) agree on, written over `a`: when both walks
// reached the end of the chain, the outer frames they share (the thread may have moved on in its
// inner ones); when either stopped early (depth bound), the inner frames they share. Its count.
int stableFrames(WalkedFrame* a, int na, bool a_complete, const WalkedFrame* b, int nb,
                 bool b_complete);
}  // namespace detail

// Where one CPython minor version keeps what the walk reads. Byte offsets, LP64 (x86_64 and
// aarch64 alike). Checked against each version's own headers by tests/python (layout test).
struct PythonLayout {
  enum class Chain {
    kFrameObject,   // 3.9, 3.10: PyThreadState.frame -> PyFrameObject.f_back ...
    kCFrame,        // 3.11, 3.12: PyThreadState.cframe->current_frame -> _PyInterpreterFrame
    kCurrentFrame,  // 3.13: PyThreadState.current_frame -> _PyInterpreterFrame
  };
  int minor;
  Chain chain;
  uint32_t tstate_frame;    // PyThreadState: frame, cframe or current_frame
  uint32_t cframe_current;  // _PyCFrame.current_frame (kCFrame)
  uint32_t frame_back;      // f_back / previous
  uint32_t frame_code;      // f_code / f_executable
  uint32_t frame_instr;     // int f_lasti (lasti_scale > 0), else the instruction pointer
  int32_t frame_owner;      // offset of the owner byte, -1 when frames have none
  int32_t cstack_owner;     // owner value of C-stack shim frames (skipped), -1 when none
  uint32_t lasti_scale;     // bytes per f_lasti unit (3.9: 1, 3.10: 2); 0 = pointer
  uint32_t code_filename;
  uint32_t code_name;
  uint32_t code_qualname;  // 0: none (before 3.11), co_name is used
  uint32_t code_firstlineno;
  uint32_t code_linetable;    // co_lnotab (3.9), co_linetable (3.10+)
  uint32_t code_adaptive;     // start of the bytecode inside the code object (3.11+)
  uint32_t line_format;       // format::kPyLines*
  uint32_t str_ascii_data;    // where a compact ASCII str's characters start
  uint32_t str_compact_data;  // where a compact non-ASCII str's characters start
  uint32_t tstate_next;       // PyThreadState.next
  uint32_t tstate_thread_id;  // PyThreadState.thread_id (the pthread_t, as an unsigned long)
  uint32_t tstate_native_id;  // PyThreadState.native_thread_id (the kernel tid); 0: none (< 3.11)
};

// The layout of CPython 3.<minor>, or nullptr when unsupported.
const PythonLayout* pythonLayout(int major, int minor);

class PythonFrames {
 public:
  // Code records and blob bytes a Python process's black box reserves.
  static constexpr uint32_t kCodeCapacity = 4096;
  static constexpr uint64_t kBlobBytes = 2u << 20;

  // Looks for a CPython interpreter in the process (its symbols in the global scope). nullptr
  // with `*why` empty when there is none (nothing to say), or with `*why` saying why this one is
  // not supported.
  static std::unique_ptr<PythonFrames> detect(std::string* why);

  // (major << 8) | minor.
  uint32_t version() const { return version_; }

  // Binds the black box whose Python regions were sized with kCodeCapacity and kBlobBytes.
  // Allocates the lookup table; false (nothing captured then) when it cannot.
  bool attach(format::BboxHeader* header);

  // Record path: the calling thread's Python frames, innermost first, as stack words
  // (format::pythonFrameWord), at most `max_depth`. 0 on a thread with no Python thread state.
  int capture(uint64_t* out, int max_depth);

  // Dump path only (thread snapshots, python_threads.cc), for threads that did not answer the
  // snapshot signal: the interpreter's thread states, read from its thread list without the GIL.
  struct ThreadState {
    int tid;           // the kernel thread id
    uintptr_t tstate;  // its PyThreadState
  };
  // Fills at most `max` thread states of every interpreter of the process; their count. A thread
  // state whose kernel id cannot be told is left out (before 3.11 the id comes from glibc's thread
  // descriptor, see python_threads.cc).
  int listThreads(ThreadState* out, int max) const;
  // The Python frames of another thread, innermost first, as capture() gives them. Every read
  // goes through the kernel (process_vm_readv), so memory the thread frees meanwhile gives an
  // error instead of a fault; the chain is walked twice and only the frames both walks agree on
  // are kept (the outer ones, when the thread moved in between).
  int captureThread(uintptr_t tstate, uint64_t* out, int max_depth);

 private:
  PythonFrames() = default;
  uint32_t codeIndex(const uint8_t* code);
  uint32_t insertCode(const uint8_t* code, uint64_t fingerprint, uint32_t slot);
  bool copyStr(const uint8_t* str, uint64_t* offset, uint32_t* length);
  bool copyBytes(const uint8_t* bytes, uint64_t* offset, uint32_t* length);
  bool claimBlob(uint64_t size, uint64_t* offset);

  using WalkedFrame = detail::WalkedFrame;
  int walkThread(uintptr_t tstate, WalkedFrame* out, int max_depth, bool* complete) const;
  void resolveThreadList();
  bool tidOf(uintptr_t tstate, int* tid) const;

  using GetThreadStateFn = void* (*)();
  using InterpreterFn = void* (*)(void*);
  using InterpreterHeadFn = void* (*)();
  const PythonLayout* layout_ = nullptr;
  uint32_t version_ = 0;
  GetThreadStateFn get_thread_state_ = nullptr;
  // PyInterpreterState_Head, _Next and _ThreadHead: the public API for debuggers; nullptr when
  // the interpreter lacks one of them (listThreads() then finds nothing).
  InterpreterHeadFn interpreter_head_ = nullptr;
  InterpreterFn interpreter_next_ = nullptr;
  InterpreterFn interpreter_thread_head_ = nullptr;
  // Before 3.11: where glibc keeps the kernel thread id inside a thread's descriptor (pthread_t),
  // found at attach() on the attaching thread; -1 when not found.
  int glibc_tid_offset_ = -1;
  const void* code_type_ = nullptr;
  const void* str_type_ = nullptr;
  const void* bytes_type_ = nullptr;
  format::BboxHeader* header_ = nullptr;
  // Open addressing from (code address, fingerprint) to code record index + 1; 0 = empty.
  std::unique_ptr<std::atomic<uint32_t>[]> slots_;
  uint32_t slot_mask_ = 0;
};

}  // namespace ncclrec::recorder
