// Internal state of the stub NCCL: the entry-point table, per-entry call counts, recorded
// arguments, forced results and blocks, and the communicator object. Shared by stub_nccl.cc (the
// NCCL API) and stub_state.cc (the test controls); nothing here is exported from the library.
#ifndef NCCLREC_TESTS_SUPPORT_STUB_STATE_H_
#define NCCLREC_TESTS_SUPPORT_STUB_STATE_H_

#include <atomic>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "nccl.h"

// Every entry point of nccl.h, without its "nccl" prefix.
#define NCCLREC_STUB_ENTRY_POINTS(X) \
  X(MemAlloc)                        \
  X(MemFree)                         \
  X(GetVersion)                      \
  X(GetUniqueId)                     \
  X(CommInitRankConfig)              \
  X(CommInitRank)                    \
  X(CommInitAll)                     \
  X(CommInitRankScalable)            \
  X(CommFinalize)                    \
  X(CommDestroy)                     \
  X(CommAbort)                       \
  X(CommRevoke)                      \
  X(CommSplit)                       \
  X(CommShrink)                      \
  X(GetErrorString)                  \
  X(GetLastError)                    \
  X(CommGetAsyncError)               \
  X(CommCount)                       \
  X(CommCuDevice)                    \
  X(CommUserRank)                    \
  X(CommRegister)                    \
  X(CommDeregister)                  \
  X(CommWindowRegister)              \
  X(CommWindowDeregister)            \
  X(RedOpCreatePreMulSum)            \
  X(RedOpDestroy)                    \
  X(Reduce)                          \
  X(Bcast)                           \
  X(Broadcast)                       \
  X(AllReduce)                       \
  X(ReduceScatter)                   \
  X(AllGather)                       \
  X(AlltoAll)                        \
  X(Gather)                          \
  X(Scatter)                         \
  X(Send)                            \
  X(Recv)                            \
  X(GroupStart)                      \
  X(GroupEnd)                        \
  X(GroupSimulateEnd)

// The communicator behind ncclComm_t. Never freed: destroy only marks it, so a call on a destroyed
// communicator is reported (ncclInvalidUsage) instead of reading freed memory, and every one stays
// reachable from the registry, which keeps LeakSanitizer quiet.
struct ncclComm {
  static constexpr uint32_t kMagic = 0x4e425453;  // "STBN"
  uint32_t magic = kMagic;
  int nranks = 0;
  int rank = 0;
  int device = 0;
  // Equal on every rank of one communicator: a hash of the unique id, or of the parent's id and the
  // split/shrink inputs.
  uint64_t id = 0;
  std::atomic<bool> destroyed{false};
  std::atomic<int> asyncError{ncclSuccess};
  std::atomic<int> splits{0};
  std::atomic<int> redOps{0};  // ops made by ncclRedOpCreatePreMulSum: ncclNumOps + [0, redOps)
  ncclComm* next = nullptr;    // registry link, written once before publication
};

namespace ncclrec::support::stub {

enum class Entry : int {
#define NCCLREC_STUB_ENUM(name) k##name,
  NCCLREC_STUB_ENTRY_POINTS(NCCLREC_STUB_ENUM)
#undef NCCLREC_STUB_ENUM
      kCount
};

inline constexpr int kEntryCount = static_cast<int>(Entry::kCount);
inline constexpr int kMaxArgs = 8;
inline constexpr int kNotForced = -1;

// The nccl* name of an entry point, or -1 when `name` is none of them.
int entryIndex(const char* name);

// Counts the call, records its argument words and blocks when a test asked for it. Returns the
// result a test forced on this entry point, or kNotForced.
int enterWords(Entry entry, const uintptr_t* words, int count);

inline uintptr_t argWord(const ncclUniqueId& id) {
  uint64_t counter = 0;
  std::memcpy(&counter, id.internal + 8, sizeof(counter));
  return static_cast<uintptr_t>(counter);
}
template <typename T>
uintptr_t argWord(T value) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uintptr_t>(value);
  } else {
    static_assert(std::is_integral_v<T> || std::is_enum_v<T>);
    return static_cast<uintptr_t>(value);
  }
}

template <typename... Args>
int enter(Entry entry, const Args&... args) {
  static_assert(sizeof...(Args) <= kMaxArgs);
  const uintptr_t words[] = {argWord(args)..., 0};
  return enterWords(entry, words, static_cast<int>(sizeof...(Args)));
}

// Device of a new communicator: STUB_NCCL_DEVICE when set, else rank % 8.
int deviceForRank(int rank);

// Adds a communicator to the registry and gives it the current async error. Thread-safe.
void registerComm(ncclComm* comm);

}  // namespace ncclrec::support::stub

#endif  // NCCLREC_TESTS_SUPPORT_STUB_STATE_H_
