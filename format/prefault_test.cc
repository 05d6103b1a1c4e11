#include "format/prefault.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

namespace ncclrec::format {
namespace {

constexpr size_t kPages = 16;

size_t residentPages(void* base, size_t pages) {
  std::vector<unsigned char> vec(pages);
  if (::mincore(base, pages * 4096, vec.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char v : vec) n += v & 1;
  return n;
}

class PrefaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::sysconf(_SC_PAGESIZE), 4096) << "the test counts 4 KiB pages";
    base_ =
        ::mmap(nullptr, kPages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(base_, MAP_FAILED);
    ASSERT_EQ(residentPages(base_, kPages), 0u);
  }
  void TearDown() override {
    if (base_ != MAP_FAILED) ::munmap(base_, kPages * 4096);
  }
  char* at(size_t offset) { return static_cast<char*>(base_) + offset; }
  void* base_ = MAP_FAILED;
};

TEST_F(PrefaultTest, PopulatesTheWholePagesInsideTheRange) {
  if (::madvise(base_, 4096, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) {
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE (Linux 5.14); readers fault lazily";
  }
  ::madvise(base_, 4096, MADV_DONTNEED);
  // From the middle of page 1 to the middle of page 9: pages 2-8 are whole.
  prefaultForWrite(at(4096 + 100), at(9 * 4096 + 100));
  std::vector<unsigned char> vec(kPages);
  ASSERT_EQ(::mincore(base_, kPages * 4096, vec.data()), 0);
  for (size_t p = 0; p < kPages; ++p) EXPECT_EQ(vec[p] & 1, p >= 2 && p <= 8 ? 1 : 0) << p;
}

TEST_F(PrefaultTest, RangesWithoutAWholePageAreLeftAlone) {
  prefaultForWrite(at(100), at(4000));
  prefaultForWrite(at(4000), at(4096 + 10));
  prefaultForWrite(at(8192), at(8192));
  prefaultForWrite(at(8192), at(4096));  // reversed: nothing
  EXPECT_EQ(residentPages(base_, kPages), 0u);
}

TEST(ReserveAndPrefault, KeepsTheElementsAndMakesRoom) {
  std::vector<uint64_t> v = {1, 2, 3};
  reserveAndPrefault(&v, 10000);
  EXPECT_GE(v.capacity(), 10003u);
  EXPECT_EQ(v, (std::vector<uint64_t>{1, 2, 3}));
  std::vector<uint64_t> empty;
  reserveAndPrefault(&empty, 0);
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace ncclrec::format
