#include "live/source_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "format/testing/temp_dir.h"

namespace ncclrec::live {
namespace {

namespace fs = std::filesystem;
using format::testing::TempDir;

void touch(const std::string& path) { std::ofstream(path) << "x"; }

void setAge(const std::string& path, int seconds_ago) {
  fs::last_write_time(path, fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
}

TEST(ResolveDir, ADirectoryWithBlackBoxesIsReadAsIs) {
  TempDir dir;
  touch(dir.file("h.1.bbox"));
  fs::create_directory(dir.file("logs"));
  const ResolvedDir r = resolveDir(dir.path());
  EXPECT_EQ(r.dir, dir.path());
  EXPECT_EQ(r.label, dir.path());
  EXPECT_EQ(r.problem, "");
}

TEST(ResolveDir, ARunTreeGoesToTheNewestRunAndItsHighestAttempt) {
  TempDir dir;
  for (const char* run : {"old", "new", "older"}) {
    for (int a = 0; a < 3; ++a) {
      fs::create_directories(dir.file(std::string(run) + "/attempt_" + std::to_string(a)));
      touch(dir.file(std::string(run) + "/attempt_" + std::to_string(a) + "/h.1.bbox"));
    }
  }
  fs::create_directories(dir.file("new/attempt_10"));
  setAge(dir.file("old"), 100);
  setAge(dir.file("older"), 200);
  setAge(dir.file("new"), 10);
  const ResolvedDir r = resolveDir(dir.path());
  EXPECT_EQ(r.dir, dir.path() + "/new/attempt_10");
  EXPECT_EQ(r.label, dir.path() + "/new/attempt_10 (newest of 3 runs, newest of 4 attempts)");
  EXPECT_EQ(r.problem, "");
  // Given a run, its highest attempt.
  EXPECT_EQ(resolveDir(dir.file("old")).dir, dir.path() + "/old/attempt_2");
}

TEST(ResolveDir, AnEmptyDirectoryIsNoProblemYet) {
  TempDir dir;
  const ResolvedDir r = resolveDir(dir.path());
  EXPECT_EQ(r.dir, dir.path());
  EXPECT_EQ(r.problem, "");
}

TEST(ResolveDir, MissingOrNotADirectory) {
  TempDir dir;
  EXPECT_EQ(resolveDir(dir.file("nope")).problem, dir.file("nope") + ": no such directory (yet)");
  touch(dir.file("f"));
  EXPECT_EQ(resolveDir(dir.file("f")).problem, dir.file("f") + ": not a directory");
}

}  // namespace
}  // namespace ncclrec::live
