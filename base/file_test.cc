#include "base/file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/proc_state.h"

namespace ncclrec::base {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  const fs::path p = fs::temp_directory_path() / (name + "." + std::to_string(getpid()));
  fs::remove_all(p);
  return p;
}

TEST(ReadFileTest, ReadsAFileWholeAndUpToALimit) {
  const fs::path p = scratch("read_file_test");
  std::string big(10000, 'x');
  big[9999] = 'y';
  std::ofstream(p, std::ios::binary) << big;
  EXPECT_EQ(readFile(p.string()), big);
  EXPECT_EQ(readFile(p.string(), 3), "xxx");
  fs::remove(p);
  EXPECT_FALSE(readFile(p.string()).has_value());
}

TEST(ReadFileTest, AReadThatFailsIsNoFileNotAnException) {
  // A directory opens but cannot be read (EISDIR): the same path as a /proc file whose process
  // exited between open and read (ESRCH), which made libstdc++'s stream iterator throw.
  const fs::path dir = scratch("read_file_dir");
  fs::create_directories(dir);
  EXPECT_FALSE(readFile(dir.string()).has_value());
  fs::remove_all(dir);
}

TEST(ReadFileTest, AProcessWhoseFilesCannotBeReadIsNoProcess) {
  // readProcessState over a /proc whose stat is unreadable: no state, no exception.
  const fs::path root = scratch("read_file_proc");
  fs::create_directories(root / "42" / "stat");
  EXPECT_NO_THROW(EXPECT_FALSE(readProcessState(42, root.string()).has_value()));
  // Readable stat, unreadable wchan and task stat: the state, without a wait channel.
  fs::remove_all(root / "42" / "stat");
  std::ofstream(root / "42" / "stat") << "42 (w) S 1 2 3 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0\n";
  fs::create_directories(root / "42" / "wchan");
  fs::create_directories(root / "42" / "task" / "42" / "stat");
  std::optional<ProcessState> s;
  EXPECT_NO_THROW(s = readProcessState(42, root.string()));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->wchan, "");
  fs::remove_all(root);
}

}  // namespace
}  // namespace ncclrec::base
