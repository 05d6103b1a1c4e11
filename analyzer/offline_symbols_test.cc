#include "analyzer/offline_symbols.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "analyzer/callsite.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::analyzer {
namespace {

__attribute__((noinline)) void* returnAddressInHere() {
  return __builtin_extract_return_addr(__builtin_return_address(0));
}

__attribute__((noinline)) void* callerOfTheProbe() {
  void* ra = returnAddressInHere();
  asm volatile("" ::: "memory");  // keeps the call from becoming a tail call
  return ra;
}

// A black-box rank whose one stack holds a return address inside callerOfTheProbe(), as the
// recorder stores it: module path and offset from the load bias, no names.
format::RankData blackBoxRank(const std::string& build_id) {
  const auto address = reinterpret_cast<uint64_t>(callerOfTheProbe());
  Dl_info info{};
  link_map* map = nullptr;
  EXPECT_NE(dladdr1(reinterpret_cast<void*>(address - 1), &info, reinterpret_cast<void**>(&map),
                    RTLD_DL_LINKMAP),
            0);
  char exe[4096] = {};
  EXPECT_GT(readlink("/proc/self/exe", exe, sizeof(exe) - 1), 0);
  format::RankData r;
  format::Stack st;
  st.id = 1;
  st.frames.push_back({address, exe, address - (map != nullptr ? map->l_addr : 0), "", "", 0});
  r.stacks[st.id] = st;
  r.modules.push_back({exe, 0, 0, build_id});
  return r;
}

#ifdef NCCLREC_HAVE_LIBDW
TEST(OfflineSymbolsTest, NamesABlackBoxFrameFromTheModuleFile) {
  const format::RankData r = blackBoxRank("");
  SymbolTable symbols;
  addOfflineSymbols({r}, symbols);
  ASSERT_EQ(symbols.size(), 1u);
  const format::Frame& f = symbols.begin()->second;
  EXPECT_EQ(shortFunctionName(f.function), "ncclrec::analyzer::callerOfTheProbe") << f.function;
  EXPECT_NE(f.file.find("offline_symbols_test.cc"), std::string::npos) << f.file;
  EXPECT_GT(f.line, 0);
}

TEST(OfflineSymbolsTest, AnotherBuildOfTheModuleIsNotUsed) {
  const format::RankData r = blackBoxRank("00112233445566778899aabbccddeeff00112233");
  SymbolTable symbols;
  addOfflineSymbols({r}, symbols);
  EXPECT_TRUE(symbols.empty());
}

TEST(OfflineSymbolsTest, MissingModuleFileAndKnownNamesAreLeftAlone) {
  format::RankData r = blackBoxRank("");
  r.stacks[1].frames[0].module = "/nonexistent/libgone.so";
  SymbolTable symbols;
  addOfflineSymbols({r}, symbols);
  EXPECT_TRUE(symbols.empty());
  // A path that is not a regular file is never opened (a FIFO would block the analyzer).
  format::testing::TempDir dir;
  const std::string fifo = dir.file("libfifo.so");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  r.stacks[1].frames[0].module = fifo;
  addOfflineSymbols({r}, symbols);
  EXPECT_TRUE(symbols.empty());

  // A frame a dump already named is not looked up again.
  const format::RankData mine = blackBoxRank("");
  const format::Frame& raw = mine.stacks.at(1).frames[0];
  const std::string key =
      raw.module.substr(raw.module.rfind('/') + 1) + "+" + std::to_string(raw.module_offset);
  SymbolTable named = {{key, format::Frame{0, raw.module, raw.module_offset, "fromDump()", "", 0}}};
  addOfflineSymbols({mine}, named);
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named.begin()->second.function, "fromDump()");
}
#else
TEST(OfflineSymbolsTest, NeedsLibdw) {
  GTEST_SKIP() << "built without libdw (elfutils/libdwfl.h): black boxes stay unsymbolized";
}
#endif

}  // namespace
}  // namespace ncclrec::analyzer
