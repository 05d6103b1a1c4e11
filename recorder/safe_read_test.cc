#include "recorder/safe_read.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace ncclrec::recorder {
namespace {

TEST(SafeReadTest, CopiesMappedMemory) {
  const char text[] = "where every thread is";
  char out[sizeof(text)] = {};
  ASSERT_TRUE(safeRead(reinterpret_cast<uintptr_t>(text), out, sizeof(text)));
  EXPECT_STREQ(out, text);
}

TEST(SafeReadTest, UnmappedMemoryIsFalseNotAFault) {
  char out[16] = {};
  EXPECT_FALSE(safeRead(0, out, sizeof(out)));
  const long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  std::memset(p, 'x', static_cast<size_t>(page));
  const auto address = reinterpret_cast<uintptr_t>(p);
  ASSERT_TRUE(safeRead(address, out, sizeof(out)));
  EXPECT_EQ(out[0], 'x');
  ASSERT_EQ(munmap(p, static_cast<size_t>(page)), 0);
  EXPECT_FALSE(safeRead(address, out, sizeof(out)));  // freed meanwhile
  // A read that runs off the end of a mapping is refused whole.
  EXPECT_FALSE(safeRead(address - 8, out, sizeof(out)));
}

}  // namespace
}  // namespace ncclrec::recorder
