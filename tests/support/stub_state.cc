#include "tests/support/stub_state.h"

#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <thread>

#include "tests/support/stub_control.h"

#define NCCLREC_STUB_EXPORT extern "C" __attribute__((visibility("default")))

namespace ncclrec::support::stub {
namespace {

constexpr const char* kEntryNames[] = {
#define NCCLREC_STUB_NAME(name) "nccl" #name,
    NCCLREC_STUB_ENTRY_POINTS(NCCLREC_STUB_NAME)
#undef NCCLREC_STUB_NAME
};
static_assert(std::size(kEntryNames) == kEntryCount);

// All of these are constant-initialized, so the load-time constructor below may use them.
std::atomic<int> gCounts[kEntryCount];
std::atomic<uintptr_t> gArgs[kEntryCount][kMaxArgs];
std::atomic<int> gForcedPlusOne[kEntryCount];  // 0: not forced
std::atomic<int> gBlockMs[kEntryCount];        // 0: no block, -1: until released
std::atomic<int> gAsyncError{ncclSuccess};
std::atomic<ncclComm*> gComms{nullptr};
std::atomic<int> gDevice{-1};  // STUB_NCCL_DEVICE, -1 when unset

pthread_mutex_t gReleaseMutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t gReleaseCond = PTHREAD_COND_INITIALIZER;
bool gReleased = true;  // guarded by gReleaseMutex

void warn(const char* what, const char* name) {
  char line[256];
  const int n = std::snprintf(line, sizeof(line), "stub_nccl: %s '%s'\n", what, name);
  if (n <= 0) return;
  const size_t length = static_cast<size_t>(n) < sizeof(line) ? n : sizeof(line) - 1;
  (void)!write(STDERR_FILENO, line, length);
}

void setBlock(int index, int blockMs) {
  if (blockMs < 0) {
    pthread_mutex_lock(&gReleaseMutex);
    gReleased = false;
    pthread_mutex_unlock(&gReleaseMutex);
    blockMs = -1;
  }
  gBlockMs[index].store(blockMs, std::memory_order_relaxed);
}

void waitForRelease() {
  pthread_mutex_lock(&gReleaseMutex);
  while (!gReleased) pthread_cond_wait(&gReleaseCond, &gReleaseMutex);
  pthread_mutex_unlock(&gReleaseMutex);
}

// Reads "<name>:<int>[,<name>:<int>...]" from an environment variable and applies each pair.
void applyEnvList(const char* var, void (*apply)(int index, int value)) {
  const char* spec = std::getenv(var);
  if (spec == nullptr) return;
  while (*spec != '\0') {
    const char* colon = std::strchr(spec, ':');
    const char* comma = std::strchr(spec, ',');
    if (comma == nullptr) comma = spec + std::strlen(spec);
    char name[64] = {};
    char* end = nullptr;
    long value = 0;
    if (colon != nullptr && colon < comma && static_cast<size_t>(colon - spec) < sizeof(name)) {
      std::memcpy(name, spec, static_cast<size_t>(colon - spec));
      errno = 0;
      value = std::strtol(colon + 1, &end, 10);
    }
    const int index = name[0] != '\0' ? entryIndex(name) : -1;
    if (index < 0 || end != comma || errno != 0) {
      warn("ignoring malformed entry (want <ncclName>:<int>) in", var);
    } else {
      apply(index, static_cast<int>(value));
    }
    spec = *comma == ',' ? comma + 1 : comma;
  }
}

__attribute__((constructor)) void loadEnvironment() {
  applyEnvList("STUB_NCCL_BLOCK", [](int index, int value) { setBlock(index, value); });
  applyEnvList("STUB_NCCL_RESULT", [](int index, int value) {
    gForcedPlusOne[index].store(value + 1, std::memory_order_relaxed);
  });
  if (const char* device = std::getenv("STUB_NCCL_DEVICE")) {
    gDevice.store(std::atoi(device), std::memory_order_relaxed);
  }
  if (const char* error = std::getenv("STUB_NCCL_ASYNC_ERROR")) {
    gAsyncError.store(std::atoi(error), std::memory_order_relaxed);
  }
}

int indexOrWarn(const char* name) {
  const int index = entryIndex(name);
  if (index < 0) warn("unknown entry point", name != nullptr ? name : "(null)");
  return index;
}

}  // namespace

int entryIndex(const char* name) {
  if (name == nullptr) return -1;
  for (int i = 0; i < kEntryCount; ++i) {
    if (std::strcmp(kEntryNames[i], name) == 0) return i;
  }
  return -1;
}

int enterWords(Entry entry, const uintptr_t* words, int count) {
  const int index = static_cast<int>(entry);
  gCounts[index].fetch_add(1, std::memory_order_relaxed);
  for (int i = 0; i < kMaxArgs; ++i) {
    gArgs[index][i].store(i < count ? words[i] : 0, std::memory_order_relaxed);
  }
  const int blockMs = gBlockMs[index].load(std::memory_order_relaxed);
  if (blockMs > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(blockMs));
  } else if (blockMs < 0) {
    waitForRelease();
  }
  return gForcedPlusOne[index].load(std::memory_order_relaxed) - 1;
}

int deviceForRank(int rank) {
  const int device = gDevice.load(std::memory_order_relaxed);
  return device >= 0 ? device : rank % 8;
}

void registerComm(ncclComm* comm) {
  comm->asyncError.store(gAsyncError.load(std::memory_order_relaxed), std::memory_order_relaxed);
  ncclComm* head = gComms.load(std::memory_order_relaxed);
  do {
    comm->next = head;
  } while (!gComms.compare_exchange_weak(head, comm, std::memory_order_release,
                                         std::memory_order_relaxed));
}

}  // namespace ncclrec::support::stub

namespace stub = ncclrec::support::stub;

NCCLREC_STUB_EXPORT int stubNcclCallCount(const char* name) {
  const int index = stub::entryIndex(name);
  return index < 0 ? -1 : stub::gCounts[index].load(std::memory_order_relaxed);
}

NCCLREC_STUB_EXPORT void stubNcclResetCounts(void) {
  for (int i = 0; i < stub::kEntryCount; ++i) {
    stub::gCounts[i].store(0, std::memory_order_relaxed);
    for (auto& word : stub::gArgs[i]) word.store(0, std::memory_order_relaxed);
  }
}

NCCLREC_STUB_EXPORT void stubNcclSetResult(const char* name, int result) {
  const int index = stub::indexOrWarn(name);
  if (index >= 0) stub::gForcedPlusOne[index].store(result < 0 ? 0 : result + 1);
}

NCCLREC_STUB_EXPORT void stubNcclSetBlock(const char* name, int block_ms) {
  const int index = stub::indexOrWarn(name);
  if (index >= 0) stub::setBlock(index, block_ms);
}

NCCLREC_STUB_EXPORT void stubNcclRelease(void) {
  pthread_mutex_lock(&stub::gReleaseMutex);
  stub::gReleased = true;
  pthread_cond_broadcast(&stub::gReleaseCond);
  pthread_mutex_unlock(&stub::gReleaseMutex);
}

NCCLREC_STUB_EXPORT const void* stubNcclLastArg(const char* name, int index) {
  const int entry = stub::entryIndex(name);
  if (entry < 0 || index < 0 || index >= stub::kMaxArgs) return nullptr;
  return reinterpret_cast<const void*>(stub::gArgs[entry][index].load(std::memory_order_relaxed));
}

NCCLREC_STUB_EXPORT void stubNcclSetAsyncError(int result) {
  stub::gAsyncError.store(result);
  for (ncclComm* comm = stub::gComms.load(std::memory_order_acquire); comm != nullptr;
       comm = comm->next) {
    comm->asyncError.store(result);
  }
}

NCCLREC_STUB_EXPORT void stubNcclResetAll(void) {
  stubNcclResetCounts();
  for (int i = 0; i < stub::kEntryCount; ++i) {
    stub::gForcedPlusOne[i].store(0);
    stub::gBlockMs[i].store(0);
  }
  stubNcclRelease();
  stubNcclSetAsyncError(ncclSuccess);
}
