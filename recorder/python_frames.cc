#include "recorder/python_frames.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "format/bbox_ring.h"
#include "recorder/real_dl.h"

namespace ncclrec::recorder {
namespace {

using Chain = PythonLayout::Chain;

// Offsets read from each version's headers (Include/cpython/pystate.h, frameobject.h,
// internal/pycore_frame.h, cpython/code.h, cpython/unicodeobject.h) and checked by the layout
// test against the headers of every CPython found on the machine.
// clang-format off
constexpr PythonLayout kLayouts[] = {
  // minor chain                tstate cframe back code instr owner cstack scale
  //   filename name qualname first linetable adaptive line_format          ascii compact
  //   tstate: next thread_id native_thread_id
  {9,  Chain::kFrameObject,  24, 0, 24, 32, 104, -1, -1, 1,
       104, 112, 0,   40, 120, 0,   format::kPyLinesLnotab,    48, 72,
       8, 176, 0},
  {10, Chain::kFrameObject,  24, 0, 24, 32, 96,  -1, -1, 2,
       104, 112, 0,   40, 120, 0,   format::kPyLinesPep626,    48, 72,
       8, 176, 0},
  {11, Chain::kCFrame,       56, 8, 48, 32, 56,  69, -1, 0,
       112, 120, 128, 72, 136, 184, format::kPyLinesLocations, 48, 72,
       8, 152, 160},
  {12, Chain::kCFrame,       56, 0, 8,  0,  56,  70, 3,  0,
       112, 120, 128, 68, 136, 192, format::kPyLinesLocations, 40, 56,
       8, 136, 144},
  {13, Chain::kCurrentFrame, 72, 0, 8,  0,  56,  70, 3,  0,
       112, 120, 128, 68, 136, 200, format::kPyLinesLocations, 40, 56,
       8, 152, 160},
};
// clang-format on

// Every PyObject starts with ob_refcnt and ob_type (default builds); PyVarObject adds ob_size.
constexpr uint32_t kObType = 8;
constexpr uint32_t kObSize = 16;
constexpr uint32_t kStrLength = 16;
constexpr uint32_t kStrState = 32;
constexpr uint32_t kBytesData = 32;
// PyASCIIObject.state bits, the same in 3.9 .. 3.13.
constexpr uint32_t kStrKindShift = 2;
constexpr uint32_t kStrCompact = 1u << 5;
constexpr uint32_t kStrAscii = 1u << 6;

// Bounds on what one capture reads and one code record copies.
constexpr int kMaxWalkSteps = 1024;  // frames visited, skipped ones included (a damaged chain)
constexpr uint32_t kMaxStrChars = 512;
constexpr uint32_t kMaxLineTable = 16384;
constexpr int kMaxProbes = 64;

template <class T>
inline T load(const uint8_t* base, uint32_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof(T));
  return value;
}

inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return x;
}

// (major, minor) of the interpreter: Py_Version from 3.11, else parsed from Py_GetVersion()'s
// "3.10.13 (main, ...".
bool interpreterVersion(int* major, int* minor) {
  if (const auto* hex = static_cast<const unsigned long*>(realDlsym(RTLD_DEFAULT, "Py_Version"))) {
    *major = static_cast<int>((*hex >> 24) & 0xff);
    *minor = static_cast<int>((*hex >> 16) & 0xff);
    return true;
  }
  using GetVersionFn = const char* (*)();
  const auto get = reinterpret_cast<GetVersionFn>(realDlsym(RTLD_DEFAULT, "Py_GetVersion"));
  if (get == nullptr) return false;
  const char* text = get();
  return text != nullptr && std::sscanf(text, "%d.%d", major, minor) == 2;
}

}  // namespace

const PythonLayout* pythonLayout(int major, int minor) {
  if (major != 3) return nullptr;
  for (const PythonLayout& l : kLayouts) {
    if (l.minor == minor) return &l;
  }
  return nullptr;
}

std::unique_ptr<PythonFrames> PythonFrames::detect(std::string* why) {
  why->clear();
  const auto get_state =
      reinterpret_cast<GetThreadStateFn>(realDlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  const void* code_type = realDlsym(RTLD_DEFAULT, "PyCode_Type");
  if (get_state == nullptr || code_type == nullptr) return nullptr;  // not a Python process
  int major = 0;
  int minor = 0;
  if (!interpreterVersion(&major, &minor)) {
    *why = "cannot tell the CPython version of this process";
    return nullptr;
  }
  const PythonLayout* layout = pythonLayout(major, minor);
  char text[160];
  if (layout == nullptr) {
    std::snprintf(text, sizeof(text), "CPython %d.%d is not supported (3.9 to 3.13 are)", major,
                  minor);
    *why = text;
    return nullptr;
  }
  // A default build's type objects have ob_type at offset 8 pointing at PyType_Type; a
  // free-threaded or Py_TRACE_REFS build moves it, and every other offset with it.
  const void* type_type = realDlsym(RTLD_DEFAULT, "PyType_Type");
  const void* str_type = realDlsym(RTLD_DEFAULT, "PyUnicode_Type");
  const void* bytes_type = realDlsym(RTLD_DEFAULT, "PyBytes_Type");
  if (type_type == nullptr || str_type == nullptr || bytes_type == nullptr ||
      load<const void*>(static_cast<const uint8_t*>(code_type), kObType) != type_type) {
    std::snprintf(text, sizeof(text),
                  "CPython %d.%d with a non-default object layout (free-threaded or debug "
                  "build) is not supported",
                  major, minor);
    *why = text;
    return nullptr;
  }
  std::unique_ptr<PythonFrames> p(new (std::nothrow) PythonFrames());
  if (!p) return nullptr;
  p->layout_ = layout;
  p->version_ = static_cast<uint32_t>((major << 8) | minor);
  p->get_thread_state_ = get_state;
  p->code_type_ = code_type;
  p->str_type_ = str_type;
  p->bytes_type_ = bytes_type;
  p->resolveThreadList();
  return p;
}

bool PythonFrames::attach(format::BboxHeader* header) {
  if (header->pycode_capacity == 0) return false;
  uint32_t slots = 1;
  while (slots < 2 * header->pycode_capacity) slots <<= 1;
  slots_.reset(new (std::nothrow) std::atomic<uint32_t>[slots]);
  if (!slots_) return false;
  for (uint32_t i = 0; i < slots; ++i) slots_[i].store(0, std::memory_order_relaxed);
  slot_mask_ = slots - 1;
  header->python_version = version_;
  header_ = header;
  return true;
}

int PythonFrames::capture(uint64_t* out, int max_depth) {
  if (header_ == nullptr || max_depth <= 0) return 0;
  const auto* ts = static_cast<const uint8_t*>(get_thread_state_());
  if (ts == nullptr) return 0;
  const PythonLayout& l = *layout_;
  const auto* frame = load<const uint8_t*>(ts, l.tstate_frame);
  if (l.chain == Chain::kCFrame && frame != nullptr)
    frame = load<const uint8_t*>(frame, l.cframe_current);
  int n = 0;
  for (int steps = 0; frame != nullptr && n < max_depth && steps < kMaxWalkSteps; ++steps) {
    const auto* next = load<const uint8_t*>(frame, l.frame_back);
    if (l.frame_owner >= 0 && static_cast<int>(frame[l.frame_owner]) == l.cstack_owner) {
      frame = next;
      continue;
    }
    const auto* code = load<const uint8_t*>(frame, l.frame_code);
    if (code == nullptr || load<const void*>(code, kObType) != code_type_) {
      frame = next;  // a shim or non-code frame (3.13 f_executable may be None)
      continue;
    }
    uint32_t offset = format::kPyNoOffset;
    if (l.lasti_scale != 0) {
      const int lasti = load<int>(frame, l.frame_instr);
      if (lasti >= 0) offset = static_cast<uint32_t>(lasti) * l.lasti_scale;
    } else {
      const auto* ip = load<const uint8_t*>(frame, l.frame_instr);
      const uint8_t* start = code + l.code_adaptive;
      if (ip >= start && ip - start < format::kPyNoOffset) {
        offset = static_cast<uint32_t>(ip - start);
      }
    }
    out[n++] = format::pythonFrameWord(codeIndex(code), offset);
    frame = next;
  }
  return n;
}

uint32_t PythonFrames::codeIndex(const uint8_t* code) {
  const PythonLayout& l = *layout_;
  // A code object freed and another allocated at its address would otherwise inherit its name:
  // the fingerprint tells them apart by what they point at.
  const uint64_t fingerprint = load<uint64_t>(code, l.code_filename) ^
                               (load<uint64_t>(code, l.code_name) << 1) ^
                               (load<uint64_t>(code, l.code_linetable) << 2) ^
                               static_cast<uint32_t>(load<int>(code, l.code_firstlineno));
  const format::PyCodeRecord* records = format::pyCodeRecords(header_);
  uint32_t slot =
      static_cast<uint32_t>(mix(reinterpret_cast<uintptr_t>(code) ^ fingerprint)) & slot_mask_;
  for (int probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & slot_mask_) {
    const uint32_t v = slots_[slot].load(std::memory_order_acquire);
    if (v == 0) return insertCode(code, fingerprint, slot);
    const format::PyCodeRecord& r = records[v - 1];
    if (r.code == reinterpret_cast<uintptr_t>(code) && r.fingerprint == fingerprint) return v - 1;
  }
  format::atomicField(header_->pycode_dropped).fetch_add(1, std::memory_order_relaxed);
  return format::kPyNoCode;
}

// First sight of a code object: claim a record, copy what names it, publish the record, then
// make it findable. Two threads meeting the same new code object may both record it; either
// record names it, so the duplicate is harmless.
__attribute__((noinline)) uint32_t PythonFrames::insertCode(const uint8_t* code,
                                                            uint64_t fingerprint, uint32_t slot) {
  const PythonLayout& l = *layout_;
  const uint32_t index =
      format::atomicField(header_->pycode_count).fetch_add(1, std::memory_order_relaxed);
  if (index >= header_->pycode_capacity) {
    format::atomicField(header_->pycode_dropped).fetch_add(1, std::memory_order_relaxed);
    return format::kPyNoCode;
  }
  format::PyCodeRecord& r = format::pyCodeRecords(header_)[index];
  r.code = reinterpret_cast<uintptr_t>(code);
  r.fingerprint = fingerprint;
  r.first_line = load<int>(code, l.code_firstlineno);
  r.line_format = l.line_format;
  bool whole =
      copyStr(load<const uint8_t*>(code, l.code_filename), &r.filename_off, &r.filename_len);
  const uint32_t name_at = l.code_qualname != 0 ? l.code_qualname : l.code_name;
  whole = copyStr(load<const uint8_t*>(code, name_at), &r.qualname_off, &r.qualname_len) && whole;
  if (!copyBytes(load<const uint8_t*>(code, l.code_linetable), &r.linetable_off,
                 &r.linetable_len)) {
    r.line_format = format::kPyLinesNone;
    whole = false;
  }
  if (!whole) format::atomicField(header_->pycode_dropped).fetch_add(1, std::memory_order_relaxed);
  format::atomicField(r.valid).store(format::kValidMark, std::memory_order_release);
  for (int probe = 0; probe < kMaxProbes; ++probe, slot = (slot + 1) & slot_mask_) {
    uint32_t expected = 0;
    if (slots_[slot].compare_exchange_strong(expected, index + 1, std::memory_order_acq_rel)) break;
  }
  return index;
}

bool PythonFrames::claimBlob(uint64_t size, uint64_t* offset) {
  const uint64_t at =
      format::atomicField(header_->pyblob_used).fetch_add(size, std::memory_order_relaxed);
  if (at > header_->pyblob_bytes || size > header_->pyblob_bytes - at) return false;
  *offset = at;
  return true;
}

// A str object's characters, as UTF-8, into the blob. Compact strs only (every str the compiler
// makes is one); at most kMaxStrChars characters.
bool PythonFrames::copyStr(const uint8_t* str, uint64_t* offset, uint32_t* length) {
  *offset = 0;
  *length = 0;
  if (str == nullptr || load<const void*>(str, kObType) != str_type_) return false;
  const uint32_t state = load<uint32_t>(str, kStrState);
  if ((state & kStrCompact) == 0) return false;
  const uint32_t kind = (state >> kStrKindShift) & 7;
  const int64_t chars = load<int64_t>(str, kStrLength);
  if (chars < 0) return false;
  const uint32_t n = chars > kMaxStrChars ? kMaxStrChars : static_cast<uint32_t>(chars);
  const bool ascii = (state & kStrAscii) != 0;
  const uint8_t* data = str + (ascii ? layout_->str_ascii_data : layout_->str_compact_data);
  if (kind != 1 && kind != 2 && kind != 4) return false;
  // UTF-8 takes at most 4 bytes per character.
  const uint64_t room = ascii ? n : uint64_t{n} * 4;
  uint64_t at = 0;
  if (!claimBlob(room, &at)) return false;
  uint8_t* dst = format::pyBlob(header_) + at;
  uint32_t written = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t c = kind == 1   ? data[i]
                 : kind == 2 ? load<uint16_t>(data, 2 * i)
                             : load<uint32_t>(data, 4 * i);
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) c = '?';
    if (c < 0x80) {
      dst[written++] = static_cast<uint8_t>(c);
    } else if (c < 0x800) {
      dst[written++] = static_cast<uint8_t>(0xc0 | (c >> 6));
      dst[written++] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      dst[written++] = static_cast<uint8_t>(0xe0 | (c >> 12));
      dst[written++] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3f));
      dst[written++] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    } else {
      dst[written++] = static_cast<uint8_t>(0xf0 | (c >> 18));
      dst[written++] = static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3f));
      dst[written++] = static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3f));
      dst[written++] = static_cast<uint8_t>(0x80 | (c & 0x3f));
    }
  }
  *offset = at;
  *length = written;
  return n == static_cast<uint64_t>(chars);
}

bool PythonFrames::copyBytes(const uint8_t* bytes, uint64_t* offset, uint32_t* length) {
  *offset = 0;
  *length = 0;
  if (bytes == nullptr || load<const void*>(bytes, kObType) != bytes_type_) return false;
  int64_t size = load<int64_t>(bytes, kObSize);
  if (size < 0) return false;
  // A longer table is cut: lines of the instructions past the cut read as unknown.
  if (size > kMaxLineTable) size = kMaxLineTable;
  uint64_t at = 0;
  if (!claimBlob(static_cast<uint64_t>(size), &at)) return false;
  std::memcpy(format::pyBlob(header_) + at, bytes + kBytesData, static_cast<size_t>(size));
  *offset = at;
  *length = static_cast<uint32_t>(size);
  return true;
}

}  // namespace ncclrec::recorder
