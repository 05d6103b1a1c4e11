#include "analyzer/frames.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

namespace ncclrec::analyzer {
namespace {

std::vector<format::Frame> threeFrames() {
  format::Frame inner;
  inner.module = "/usr/lib/libnccl.so.2";
  inner.module_offset = 0x1a2b;
  format::Frame site;
  site.function = "trainStep()";
  site.file = "train.cc";
  site.line = 27;
  site.module = "/opt/app/train";
  site.module_offset = 0x40;
  format::Frame py;
  py.python = true;
  py.function = "train_step";
  py.file = "train.py";
  py.line = 40;
  return {inner, site, py};
}

TEST(FramesTest, NativeAndPythonFramesPrintAsTheReportShowsThem) {
  std::ostringstream out;
  printFrames(threeFrames(), 1, "  ", out);
  EXPECT_EQ(out.str(),
            "    #0  ??  [libnccl.so.2+0x1a2b]\n"
            "  > #1  trainStep()  train.cc:27  [train+0x40]\n"
            "    #2  train.py:40  train_step  [py]\n");
  // The innermost frame is never marked: it is where the stack starts anyway.
  std::ostringstream innermost;
  printFrames(threeFrames(), 0, "", innermost);
  EXPECT_EQ(innermost.str().substr(0, 4), "  #0");
}

TEST(FramesTest, JsonKeepsEveryFieldOfEveryFrame) {
  const nlohmann::ordered_json j = framesJson(threeFrames());
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["module"], "/usr/lib/libnccl.so.2");
  EXPECT_EQ(j[0]["module_offset"], 0x1a2b);
  EXPECT_EQ(j[1]["line"], 27);
  EXPECT_EQ(j[2]["python"], true);
  EXPECT_EQ(j[1].begin().key(), "function");
  EXPECT_EQ(moduleAndOffset(threeFrames()[0]), "libnccl.so.2+0x1a2b");
  EXPECT_EQ(moduleAndOffset(format::Frame{}), "?+0x0");
}

}  // namespace
}  // namespace ncclrec::analyzer
