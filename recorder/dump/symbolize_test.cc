#include "recorder/dump/symbolize.h"

#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

// Kept whole: no inlining, and no cloning (a clone is named "f [clone .constprop.0]").
#if defined(__GNUC__) && !defined(__clang__)
#define NCCLREC_TEST_KEEP __attribute__((noipa))
#else
#define NCCLREC_TEST_KEEP __attribute__((noinline))
#endif

// Exported (the test is linked with -rdynamic), so dladdr names it.
namespace ncclrec::dump::symbolize_test {

NCCLREC_TEST_KEEP uint64_t returnAddress() {
  const auto address = reinterpret_cast<uint64_t>(__builtin_return_address(0));
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

NCCLREC_TEST_KEEP uint64_t exportedCaller(int* line) {
  *line = __LINE__ + 1;
  const uint64_t address = returnAddress();
  asm volatile("" : : "r"(address) : "memory");  // no tail call
  return address;
}

}  // namespace ncclrec::dump::symbolize_test

namespace {

// Internal linkage: absent from the dynamic symbol table, so only debug info can name it.
[[maybe_unused]] NCCLREC_TEST_KEEP uint64_t staticCaller(int* line) {
  *line = __LINE__ + 1;
  const uint64_t address = ncclrec::dump::symbolize_test::returnAddress();
  asm volatile("" : : "r"(address) : "memory");
  return address;
}

}  // namespace

namespace ncclrec::dump {
namespace {

[[maybe_unused]] std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string selfExe() {
  char path[4096];
  const ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
  return len > 0 ? std::string(path, len) : "";
}

uint64_t mainProgramBias() {
  uint64_t bias = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        *static_cast<uint64_t*>(data) = info->dlpi_addr;
        return 1;  // the first object is the main program
      },
      &bias);
  return bias;
}

TEST(Symbolizer, ExportedFunctionWithFileAndLine) {
  int line = 0;
  const uint64_t address = symbolize_test::exportedCaller(&line);
  Symbolizer symbolizer(/*use_debug_info=*/true);
  const format::Frame frame = symbolizer.symbolize(address);
  EXPECT_EQ(frame.address, address);
  EXPECT_EQ(frame.function, "ncclrec::dump::symbolize_test::exportedCaller(int*)");
  EXPECT_EQ(frame.module, selfExe());
  EXPECT_EQ(frame.module_offset, address - mainProgramBias());
#ifdef NCCLREC_HAVE_LIBDW
  EXPECT_EQ(baseName(frame.file), "symbolize_test.cc");
  EXPECT_NEAR(frame.line, line, 2);
#endif
}

TEST(Symbolizer, WithoutDebugInfoNamesOnlyTheFunction) {
  int line = 0;
  const uint64_t address = symbolize_test::exportedCaller(&line);
  Symbolizer symbolizer(/*use_debug_info=*/false);
  const format::Frame frame = symbolizer.symbolize(address);
  EXPECT_EQ(frame.function, "ncclrec::dump::symbolize_test::exportedCaller(int*)");
  EXPECT_EQ(frame.file, "");
  EXPECT_EQ(frame.line, 0);
}

#ifdef NCCLREC_HAVE_LIBDW
TEST(Symbolizer, StaticFunctionNamedFromDebugInfo) {
  int line = 0;
  const uint64_t address = staticCaller(&line);
  Symbolizer symbolizer(/*use_debug_info=*/true);
  const format::Frame frame = symbolizer.symbolize(address);
  EXPECT_EQ(frame.function, "(anonymous namespace)::staticCaller(int*)");
  EXPECT_EQ(baseName(frame.file), "symbolize_test.cc");
  EXPECT_NEAR(frame.line, line, 2);
  // Cached results are the same.
  const format::Frame again = symbolizer.symbolize(address);
  EXPECT_EQ(again.function, frame.function);
  EXPECT_EQ(again.line, frame.line);
}
#endif

TEST(Symbolizer, UnmappedAddressesGiveEmptyFrames) {
  const long page = sysconf(_SC_PAGESIZE);
  void* mapping = mmap(nullptr, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  ASSERT_EQ(munmap(mapping, page), 0);
  const uint64_t unmapped = reinterpret_cast<uint64_t>(mapping) + 16;
  for (bool debug_info : {true, false}) {
    Symbolizer symbolizer(debug_info);
    for (uint64_t address : {unmapped, uint64_t{0}, uint64_t{0x1000}, ~uint64_t{0}}) {
      const format::Frame frame = symbolizer.symbolize(address);
      EXPECT_EQ(frame.address, address);
      EXPECT_EQ(frame.function, "") << std::hex << address;
      EXPECT_EQ(frame.module, "") << std::hex << address;
      EXPECT_EQ(frame.file, "") << std::hex << address;
      EXPECT_EQ(frame.line, 0) << std::hex << address;
    }
  }
}

}  // namespace
}  // namespace ncclrec::dump
