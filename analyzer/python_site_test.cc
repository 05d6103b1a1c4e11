// Call sites of Python programs (and of C++ ones that call NCCL through a helper): the verdict
// names the user's function and line, not torch/distributed, ctypes or the project's own wrapper.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analyzer/diagnose.h"
#include "analyzer/exit_codes.h"
#include "analyzer/report.h"
#include "analyzer/testing/job_builder.h"
#include "analyzer/testing/run_cli.h"
#include "format/dump_io.h"
#include "format/testing/frames.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::analyzer {
namespace {

using namespace testing;  // Job, Op, Site (analyzer/testing/job_builder.h)
using format::Frame;

const auto py = format::testing::pythonFrame;

Frame native(const char* module, uint64_t offset, const char* function, const char* file = "",
             int line = 0) {
  return Frame{0, module, offset, function, file, line};
}

// What a PyTorch-free Python job leaves below its frames: ctypes, libffi, the interpreter.
const Frame kBinding = py("/usr/lib/python3.11/ctypes/__init__.py", "_FuncPtr.__call__", 400);
const Frame kWrapper = py("/job/comm_utils.py", "all_reduce", 14);
const std::vector<Frame> kNativeBelow = {
    native("/usr/lib/x86_64-linux-gnu/libffi.so.8", 0x6a0a, "ffi_call"),
    native("/usr/bin/python3.11", 0x1d2b3, "_PyEval_EvalFrameDefault")};

std::vector<Frame> pyStack(std::vector<Frame> python) {
  python.insert(python.end(), kNativeBelow.begin(), kNativeBelow.end());
  return python;
}

// train_step and Trainer.save_checkpoint both call the project's all_reduce(buf) wrapper, which
// calls NCCL through ctypes.
const Site kPyTrain{
    "", 0,
    pyStack({kBinding, kWrapper, py("/job/train.py", "train_step", 40),
             py("/job/train.py", "main", 88), py("/job/train.py", "<module>", 95)})};
const Site kPySave{"", 0,
                   pyStack({kBinding, kWrapper, py("/job/train.py", "Trainer.save_checkpoint", 31),
                            py("/job/train.py", "main", 90), py("/job/train.py", "<module>", 95)})};

TEST(PythonSiteTest, RankZeroOnlyCollectiveThroughASharedWrapperIsNamedAtItsCaller) {
  // Ranks 1-3 only ever reach the wrapper from train_step: the wrapper is plumbing on their
  // stacks too, because the rule learns from the whole job, so their call site is train_step.
  Job job(4);
  job.ops(0, concat(repeat({kPyTrain}, 4), {{kPySave, 1}}), true);
  for (int r = 1; r < 4; ++r) job.ops(r, repeat({kPyTrain}, 5), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.ranks, std::vector<int>{0});
  EXPECT_EQ(v.seq, 5u);
  EXPECT_TRUE(v.site.python);
  EXPECT_EQ(v.site.frame, 2);
  EXPECT_EQ(v.site.function, "Trainer.save_checkpoint");
  EXPECT_EQ(v.headline,
            "rank 0 alone (rank == 0) issued ncclAllReduce #5 on comm c0ffee00 from "
            "save_checkpoint() train.py:31; ranks 1-3 issued ncclAllReduce from train_step() "
            "train.py:40 as their #5; ranks 1-3 wait for it in #5 from train_step() train.py:40");
  ASSERT_EQ(v.stacks.size(), 2u);
  EXPECT_EQ(v.stacks[0].frames.size(), 7u);  // the wrapper and the native frames stay visible
  ASSERT_EQ(v.evidence.size(), 2u);
  EXPECT_TRUE(v.evidence[1].ops.back().site.python);
  EXPECT_EQ(v.evidence[1].ops.back().site.function, "train_step");

  std::ostringstream text;
  printVerdictText(v, ReportOptions{}, text);
  EXPECT_NE(text.str().find("ncclAllReduce 1 float32 save_checkpoint:31 PENDING"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("  save_checkpoint() train.py:31\n"
                            "    #0  /usr/lib/python3.11/ctypes/__init__.py:400  "
                            "_FuncPtr.__call__  [py]\n"
                            "    #1  /job/comm_utils.py:14  all_reduce  [py]\n"
                            "  > #2  /job/train.py:31  Trainer.save_checkpoint  [py]\n"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("    #5  ffi_call  [libffi.so.8+0x6a0a]\n"), std::string::npos)
      << text.str();

  std::ostringstream json;
  printVerdictJson(v, {}, json);
  const nlohmann::json j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j["verdict"]["callsite"]["function"], "save_checkpoint");
  EXPECT_EQ(j["verdict"]["callsite"]["full_function"], "Trainer.save_checkpoint");
  EXPECT_EQ(j["verdict"]["callsite"]["file"], "/job/train.py");
  EXPECT_EQ(j["verdict"]["callsite"]["line"], 31);
  EXPECT_EQ(j["verdict"]["callsite"]["python"], true);
  EXPECT_EQ(j["verdict"]["callsite"]["frame"], 2);
  EXPECT_EQ(j["verdict"]["callsite"]["module"], nullptr);
  EXPECT_EQ(j["stacks"][0]["frames"][2]["python"], true);
  EXPECT_EQ(j["stacks"][0]["frames"][5]["python"], false);
}

TEST(PythonSiteTest, TorchDistributedFramesAreLibraryLayers) {
  const Frame c10d = py("/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
                        "all_reduce", 2050);
  const Frame logger =
      py("/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", "wrapper", 79);
  const Site train{"", 0,
                   pyStack({c10d, logger, py("/job/ddp.py", "train_step", 40),
                            py("/job/ddp.py", "<module>", 95)})};
  const Site save{"", 0,
                  pyStack({c10d, logger, py("/job/ddp.py", "save_checkpoint", 31),
                           py("/job/ddp.py", "<module>", 96)})};
  Job job(2);
  job.ops(0, concat(repeat({train}, 3), {{save, 1}}), true);
  job.ops(1, repeat({train}, 4), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(describeCallSite(v.site), "save_checkpoint() ddp.py:31");
  EXPECT_EQ(v.site.frame, 2);
}

// The C++ version: reduceOn(comm, buf) called from trainStep and saveCheckpoint.
TEST(PythonSiteTest, NativeHelperIsPlumbingToo) {
  const Frame reduce_on =
      native("/opt/train", 0x1010, "reduceOn(ncclComm*, float*, unsigned long)", "train.cc", 12);
  const Frame main_loop = native("/opt/train", 0x4040, "main", "train.cc", 60);
  const Site train{
      "",
      0,
      {reduce_on, native("/opt/train", 0x2020, "trainStep(ncclComm*)", "train.cc", 27), main_loop}};
  const Site save{
      "",
      0,
      {reduce_on, native("/opt/train", 0x3030, "saveCheckpoint(ncclComm*, int)", "train.cc", 33),
       native("/opt/train", 0x4080, "main", "train.cc", 62)}};
  Job job(4);
  job.ops(0, concat(repeat({train}, 4), {{save, 1}}), true);
  for (int r = 1; r < 4; ++r) job.ops(r, repeat({train}, 5), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.cls, VerdictClass::kRankGatedCollective) << v.headline;
  EXPECT_EQ(v.headline,
            "rank 0 alone (rank == 0) issued ncclAllReduce #5 on comm c0ffee00 from "
            "saveCheckpoint() train.cc:33; ranks 1-3 issued ncclAllReduce from trainStep() "
            "train.cc:27 as their #5; ranks 1-3 wait for it in #5 from trainStep() train.cc:27");
  EXPECT_FALSE(v.site.python);
  EXPECT_EQ(v.site.frame, 1);
  EXPECT_EQ(v.site.module, "train");
  EXPECT_EQ(v.site.module_offset, 0x3030u);
}

// A stack without Python frames is read as before: the innermost frame.
TEST(PythonSiteTest, NativeStacksWithoutAWrapperAreUnchanged) {
  Job job(4);
  job.ops(0, concat(repeat({kTrain}, 6), {{kSave, 1}}), true);
  for (int r = 1; r < 4; ++r) job.ops(r, repeat({kTrain}, 7), true);
  const Verdict v = job.diagnose();
  EXPECT_EQ(v.site.frame, 0);
  EXPECT_FALSE(v.site.python);
  EXPECT_EQ(describeCallSite(v.site), "saveCheckpoint() train.cc:33");
}

// A directory of dumps written by the format library, read by the command line.
class PythonDumpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Job job(3);
    job.ops(0, concat(repeat({kPyTrain}, 4), {{kPySave, 1}}), true);
    for (int r = 1; r < 3; ++r) job.ops(r, repeat({kPyTrain}, 5), true);
    for (int r = 0; r < 3; ++r) {
      format::RankData d = job.rank(r);
      d.host = "node0";
      d.source = format::SourceKind::kDump;
      d.dump_reason = format::DumpReason::kHang;
      d.dump_ns = kT0 + 60 * kSec;
      ASSERT_TRUE(
          format::writeDumpFile(d, dir_.file("rank" + std::to_string(r) + ".ncclrec.pb")).ok());
    }
  }
  format::testing::TempDir dir_;
};

TEST_F(PythonDumpsTest, TheVerdictNamesThePythonFunctionAndLine) {
  const CliResult json = runAnalyzeCli({"--json", "--trace", dir_.file("trace.json"), dir_.path()});
  ASSERT_EQ(json.code, kExitHang) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["verdict"]["class"], "rank_gated_collective");
  EXPECT_EQ(j["verdict"]["callsite"],
            nlohmann::json::parse(R"({"function": "save_checkpoint", "file": "/job/train.py",
              "line": 31, "full_function": "Trainer.save_checkpoint", "module": null,
              "module_offset": 0, "python": true, "frame": 2})"));
  EXPECT_EQ(j["verdict"]["headline"],
            "rank 0 alone (rank == 0) issued ncclAllReduce #5 on comm c0ffee00 from "
            "save_checkpoint() train.py:31; ranks 1-2 issued ncclAllReduce from train_step() "
            "train.py:40 as their #5; ranks 1-2 wait for it in #5 from train_step() train.py:40");
  EXPECT_EQ(j["verdict"]["waiting"], nlohmann::json::parse("[1, 2]"));
  const CliResult text = runAnalyzeCli({dir_.path()});
  EXPECT_EQ(text.code, kExitHang);
  EXPECT_EQ(text.out.substr(0, text.out.find('\n')),
            "rank_gated_collective: " + j["verdict"]["headline"].get<std::string>());
  EXPECT_NE(text.out.find("  > #2  /job/train.py:31  Trainer.save_checkpoint  [py]\n"),
            std::string::npos)
      << text.out;

  std::ifstream trace_file(dir_.file("trace.json"));
  const nlohmann::json trace = nlohmann::json::parse(trace_file);
  bool saw_save = false;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e.contains("args") && e["args"].contains("call_site") &&
        e["args"]["call_site"] == "Trainer.save_checkpoint train.py:31") {
      saw_save = true;
    }
  }
  EXPECT_TRUE(saw_save);
}

TEST_F(PythonDumpsTest, EventsListTheCallSiteAndTheFrames) {
  const CliResult text = runAnalyzeCli({"--events", "--rank", "1", "--last", "1", dir_.path()});
  ASSERT_EQ(text.code, kExitOk) << text.err;
  EXPECT_NE(text.out.find(" train_step train.py:40\n"), std::string::npos) << text.out;

  const CliResult json = runAnalyzeCli({"--events", "--json", "--rank", "0", dir_.path()});
  ASSERT_EQ(json.code, kExitOk) << json.err;
  const nlohmann::json r0 = nlohmann::json::parse(json.out)["ranks"][0];
  EXPECT_EQ(r0["events"].back()["call_site"], "Trainer.save_checkpoint train.py:31");
  const uint32_t id = r0["events"].back()["stack_id"];
  const auto stack = std::find_if(r0["stacks"].begin(), r0["stacks"].end(),
                                  [&](const nlohmann::json& s) { return s["id"] == id; });
  ASSERT_NE(stack, r0["stacks"].end()) << r0["stacks"].dump(2);
  EXPECT_EQ((*stack)["call_site_frame"], 2);
  EXPECT_EQ((*stack)["frames"][1]["function"], "all_reduce");
  EXPECT_EQ((*stack)["frames"][1]["python"], true);
  EXPECT_EQ((*stack)["frames"][5]["python"], false);
  EXPECT_EQ((*stack)["frames"][5]["module"], "/usr/lib/x86_64-linux-gnu/libffi.so.8");
}

// A project's own binding called from one place only: not plumbing, so only --library-frames
// moves the call site out of it.
TEST(PythonSiteCliTest, LibraryFramesFlag) {
  format::testing::TempDir dir;
  const Site site{
      "", 0,
      pyStack({py("/job/pynccl/comm.py", "NcclComm.all_reduce", 12),
               py("/job/train.py", "train_step", 40), py("/job/train.py", "<module>", 95)})};
  Job job(1);
  job.ops(0, repeat({site}, 2));
  ASSERT_TRUE(format::writeDumpFile(job.rank(0), dir.file("r0.ncclrec.pb")).ok());
  const auto lastSite = [&](std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--events", "--json"});
    flags.push_back(dir.path());
    const CliResult r = runAnalyzeCli(flags);
    EXPECT_EQ(r.code, kExitOk) << r.err;
    return nlohmann::json::parse(r.out)["ranks"][0]["events"].back()["call_site"];
  };
  EXPECT_EQ(lastSite({}), "NcclComm.all_reduce comm.py:12");
  EXPECT_EQ(lastSite({"--library-frames", "pynccl/"}), "train_step train.py:40");
  EXPECT_EQ(lastSite({"--library-frames", "nothing/,pynccl/"}), "train_step train.py:40");
  EXPECT_EQ(lastSite({"--library-frames", "nothing/", "--library-frames", "pynccl/"}),
            "train_step train.py:40");

  // Usage errors: one line, exit 1.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--library-frames"},
        std::vector<std::string>{"--print-params", "--library-frames", "x/"}}) {
    const CliResult r = runAnalyzeCli(bad);
    EXPECT_EQ(r.code, kExitBadInput);
    EXPECT_EQ(r.err.rfind("ncclrec-analyze: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  }
}

}  // namespace
}  // namespace ncclrec::analyzer
