#include "format/live_map.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::format {
namespace {

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST(LiveMapTest, ABlackBoxIsMappedWithItsIdentity) {
  testing::TempDir dir;
  testing::BboxBuilder b;
  b.header()->pid = 4242;
  ASSERT_TRUE(b.writeTo(dir.file("r0.bbox")));
  bool starting = true;
  auto map = LiveMap::open(dir.file("r0.bbox"), &starting);
  ASSERT_TRUE(map.ok()) << map.status().message();
  EXPECT_FALSE(starting);
  EXPECT_EQ((*map)->header()->pid, 4242);
  EXPECT_GE((*map)->size(), sizeof(BboxHeader));
  EXPECT_NE((*map)->inode(), 0u);
}

TEST(LiveMapTest, AFileBeingMadeIsStartingAndOneLine) {
  testing::TempDir dir;
  const std::string empty = dir.file("empty.bbox");
  writeBytes(empty, "");
  bool starting = false;
  auto map = LiveMap::open(empty, &starting);
  ASSERT_FALSE(map.ok());
  EXPECT_TRUE(starting);
  EXPECT_EQ(map.status().message(), empty + ": empty file");

  const std::string short_file = dir.file("short.bbox");
  writeBytes(short_file, "NCC");
  starting = false;
  map = LiveMap::open(short_file, &starting);
  EXPECT_TRUE(starting);
  EXPECT_EQ(map.status().message(), short_file + ": shorter than a black box header");

  // Sized, header not written yet: zeros.
  const std::string blank = dir.file("blank.bbox");
  writeBytes(blank, std::string(sizeof(BboxHeader) + 64, '\0'));
  starting = false;
  map = LiveMap::open(blank, &starting);
  EXPECT_TRUE(starting);
  EXPECT_EQ(map.status().message(), blank + ": no header yet");
}

TEST(LiveMapTest, WhatIsNotABlackBoxIsNotStarting) {
  testing::TempDir dir;
  const std::string other = dir.file("other.bbox");
  writeBytes(other, std::string(sizeof(BboxHeader) + 64, 'x'));
  bool starting = true;
  auto map = LiveMap::open(other, &starting);
  ASSERT_FALSE(map.ok());
  EXPECT_FALSE(starting);
  EXPECT_EQ(map.status().message(), other + ": not an ncclrec black box (bad magic)");
  map = LiveMap::open(dir.file("absent.bbox"));
  ASSERT_FALSE(map.ok());
  EXPECT_NE(map.status().message().find("absent.bbox: "), std::string::npos);
  map = LiveMap::open(dir.path(), &starting);
  EXPECT_EQ(map.status().message(), dir.path() + ": not a regular file");
}

}  // namespace
}  // namespace ncclrec::format
