#include "trainer/checkpoint_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "format/testing/temp_dir.h"

namespace ncclrec::trainer {
namespace {

Checkpoint sample() {
  Checkpoint c;
  c.step = 42;
  c.fingerprint = 0x1234;
  c.tensors.push_back({"param/net.0.weight", {2, 3}, {1, 2, 3, 4, 5, 6}});
  c.tensors.push_back({"momentum/net.0.bias", {2}, {-0.5f, 0.25f}});
  c.tensors.push_back({"scalar", {}, {7}});
  return c;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(CheckpointFileTest, RoundTrip) {
  format::testing::TempDir dir;
  const std::string path = dir.path() + "/ckpt.bin";
  ASSERT_TRUE(writeCheckpointFile(path, sample()).ok());
  auto back = readCheckpointFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->step, 42);
  EXPECT_EQ(back->fingerprint, 0x1234u);
  ASSERT_EQ(back->tensors.size(), 3u);
  EXPECT_EQ(back->tensors[0].name, "param/net.0.weight");
  EXPECT_EQ(back->tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back->tensors[0].data, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(back->tensors[1].data, (std::vector<float>{-0.5f, 0.25f}));
  EXPECT_TRUE(back->tensors[2].shape.empty());
  // Written through a temporary name: nothing else is left in the directory.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST(CheckpointFileTest, OverwritesAtomically) {
  format::testing::TempDir dir;
  const std::string path = dir.path() + "/ckpt.bin";
  ASSERT_TRUE(writeCheckpointFile(path, sample()).ok());
  Checkpoint next = sample();
  next.step = 43;
  ASSERT_TRUE(writeCheckpointFile(path, next).ok());
  EXPECT_EQ(readCheckpointFile(path)->step, 43);
}

TEST(CheckpointFileTest, BadFilesAreRefusedWithAReason) {
  format::testing::TempDir dir;
  const std::string path = dir.path() + "/ckpt.bin";
  ASSERT_TRUE(writeCheckpointFile(path, sample()).ok());
  const std::string good = slurp(path);

  const auto expectError = [&](const std::string& bytes, const std::string& says) {
    spit(path, bytes);
    auto r = readCheckpointFile(path);
    ASSERT_FALSE(r.ok()) << says;
    EXPECT_NE(r.status().message().find(says), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  };
  expectError("hello", "no NCRTCKPT magic");
  expectError(good.substr(0, good.size() / 2), "checksum mismatch");
  std::string flipped = good;
  flipped[40] ^= 1;
  expectError(flipped, "checksum mismatch");
  std::string newer = good;
  newer[8] = 9;
  expectError(newer, "format version 9");
  EXPECT_FALSE(readCheckpointFile(dir.path() + "/none.bin").ok());
}

TEST(CheckpointFileTest, CreatesItsDirectory) {
  format::testing::TempDir dir;
  const std::string path = dir.path() + "/a/b/ckpt.bin";
  ASSERT_TRUE(writeCheckpointFile(path, sample()).ok());
  EXPECT_TRUE(readCheckpointFile(path).ok());
}

TEST(CheckpointFileTest, UnwritableDirectoryIsAnError) {
  format::testing::TempDir dir;
  const std::string file = dir.path() + "/file";
  std::ofstream(file) << "x";
  // A directory cannot be made under a regular file.
  const std::string path = file + "/ckpt.bin";
  const auto s = writeCheckpointFile(path, sample());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
}

TEST(Fnv1aTest, KnownValues) {
  EXPECT_EQ(fnv1a64("", 0), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a", 1), 0xaf63dc4c8601ec8cull);
  // Continuing a hash equals hashing the concatenation.
  EXPECT_EQ(fnv1a64("bc", 2, fnv1a64("a", 1)), fnv1a64("abc", 3));
}

}  // namespace
}  // namespace ncclrec::trainer
