#include "recorder/modules.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "format/bbox_ring.h"

namespace ncclrec::recorder {
namespace {

struct WalkState {
  format::ModuleRecord* records;
  uint32_t capacity;
  uint32_t written;
  const char* exe_path;  // the main program's path, from /proc/self/exe
};

size_t alignUp(size_t n, size_t align) { return (n + align - 1) & ~(align - 1); }

// Copies the GNU build id of a loaded object out of its PT_NOTE segments (they lie inside a
// PT_LOAD segment, so they are mapped). Returns its length, 0 when the object has none.
uint32_t findBuildId(const dl_phdr_info* info, uint8_t* out, size_t out_size) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type != PT_NOTE) continue;
    // Notes in a segment aligned to 8 are padded to 8 (gABI); all others to 4.
    const size_t align = phdr.p_align == 8 ? 8 : 4;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + phdr.p_vaddr);
    size_t left = phdr.p_filesz;
    while (left >= sizeof(ElfW(Nhdr))) {
      ElfW(Nhdr) note;
      std::memcpy(&note, p, sizeof(note));
      const size_t name_bytes = alignUp(note.n_namesz, align);
      const size_t desc_bytes = alignUp(note.n_descsz, align);
      const size_t total = sizeof(note) + name_bytes + desc_bytes;
      if (name_bytes < note.n_namesz || desc_bytes < note.n_descsz || total > left) break;
      const uint8_t* name = p + sizeof(note);
      if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && note.n_descsz > 0) {
        const size_t len = std::min<size_t>(note.n_descsz, out_size);
        std::memcpy(out, name + name_bytes, len);
        return static_cast<uint32_t>(len);
      }
      p += total;
      left -= total;
    }
  }
  return 0;
}

void copyPath(char* dst, size_t dst_size, const char* src) {
  const size_t len = std::min(std::strlen(src), dst_size - 1);
  std::memcpy(dst, src, len);
  dst[len] = '\0';
}

// Runs with the dynamic loader's lock held: no allocation, nothing that could dlopen.
int onObject(dl_phdr_info* info, size_t /*size*/, void* data) {
  auto* state = static_cast<WalkState*>(data);
  if (state->written >= state->capacity) return 1;  // stop: the table is full

  format::ModuleRecord fresh{};
  fresh.base = info->dlpi_addr;
  uint64_t end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& phdr = info->dlpi_phdr[i];
    if (phdr.p_type == PT_LOAD) end = std::max<uint64_t>(end, phdr.p_vaddr + phdr.p_memsz);
  }
  fresh.size = end;
  fresh.build_id_len = findBuildId(info, fresh.build_id, sizeof(fresh.build_id));
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  // The first object is the main program, which the loader reports with an empty name.
  if (state->written == 0 && name[0] == '\0') name = state->exe_path;
  copyPath(fresh.path, sizeof(fresh.path), name);
  fresh.valid = format::kValidMark;

  format::ModuleRecord& slot = state->records[state->written++];
  // An unchanged record stays published, so a live reader never sees it flicker.
  if (format::atomicField(slot.valid).load(std::memory_order_acquire) == format::kValidMark &&
      std::memcmp(&slot, &fresh, sizeof(fresh)) == 0) {
    return 0;
  }
  format::atomicField(slot.valid).store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  slot.build_id_len = fresh.build_id_len;
  slot.base = fresh.base;
  slot.size = fresh.size;
  std::memcpy(slot.build_id, fresh.build_id, sizeof(slot.build_id));
  std::memcpy(slot.path, fresh.path, sizeof(slot.path));
  format::atomicField(slot.valid).store(format::kValidMark, std::memory_order_release);
  return 0;
}

}  // namespace

int writeModuleMap(format::BboxHeader* header) {
  if (header == nullptr || header->module_offset == 0) return -1;
  static std::mutex mutex;  // init and dump may race; the table has one writer at a time
  std::lock_guard<std::mutex> lock(mutex);

  char exe_path[sizeof(format::ModuleRecord::path)];
  const ssize_t len = readlink("/proc/self/exe", exe_path, sizeof(exe_path) - 1);
  exe_path[len > 0 ? len : 0] = '\0';

  WalkState state{format::moduleRecords(header), header->module_capacity, 0, exe_path};
  if (state.capacity > 0) dl_iterate_phdr(onObject, &state);
  for (uint32_t i = state.written; i < state.capacity; ++i) {
    if (format::atomicField(state.records[i].valid).load(std::memory_order_relaxed) != 0) {
      format::atomicField(state.records[i].valid).store(0, std::memory_order_release);
    }
  }
  format::atomicField(header->module_count).store(state.written, std::memory_order_release);
  return static_cast<int>(state.written);
}

}  // namespace ncclrec::recorder
