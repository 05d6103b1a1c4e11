#include "trainer/options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ncclrec::trainer {
namespace {

ParsedOptions parse(std::vector<std::string> args, int world = 4) {
  args.insert(args.begin(), "ncclrec-trainer");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parseOptions(static_cast<int>(argv.size()), argv.data(), world);
}

TEST(OptionsTest, Defaults) {
  const ParsedOptions p = parse({});
  ASSERT_TRUE(p.options) << p.message;
  EXPECT_EQ(p.options->steps, 300);
  EXPECT_EQ(p.options->batch_size, 32);
  EXPECT_EQ(p.options->accum_steps, 1);
  EXPECT_DOUBLE_EQ(p.options->bucket_cap_mb, 25);
  EXPECT_TRUE(p.options->scale_lr);
  EXPECT_TRUE(p.options->shuffle);
  EXPECT_FALSE(p.options->drop_last);
  EXPECT_FALSE(p.options->injection.active());
  EXPECT_EQ(p.options->device, DeviceChoice::kAuto);
}

TEST(OptionsTest, EveryFlag) {
  const ParsedOptions p = parse({"--steps",
                                 "7",
                                 "--batch-size",
                                 "8",
                                 "--accum-steps",
                                 "2",
                                 "--lr",
                                 "0.5",
                                 "--no-lr-scaling",
                                 "--momentum",
                                 "0",
                                 "--hidden",
                                 "16",
                                 "--depth",
                                 "3",
                                 "--train-samples",
                                 "256",
                                 "--eval-samples",
                                 "64",
                                 "--seed",
                                 "9",
                                 "--no-shuffle",
                                 "--drop-last",
                                 "--bucket-cap-mb",
                                 "0.5",
                                 "--skip-shape-check",
                                 "--device",
                                 "cpu",
                                 "--id-file",
                                 "/tmp/x",
                                 "--init-timeout",
                                 "5",
                                 "--eval-every",
                                 "3",
                                 "--ckpt-dir",
                                 "/tmp/c",
                                 "--ckpt-every",
                                 "2",
                                 "--resume",
                                 "--log-every",
                                 "5",
                                 "--time-limit",
                                 "60",
                                 "--inject=op_order:rank=1:step=4"});
  ASSERT_TRUE(p.options) << p.message;
  const TrainerOptions& o = *p.options;
  EXPECT_EQ(o.steps, 7);
  EXPECT_EQ(o.batch_size, 8);
  EXPECT_EQ(o.accum_steps, 2);
  EXPECT_DOUBLE_EQ(o.lr, 0.5);
  EXPECT_FALSE(o.scale_lr);
  EXPECT_EQ(o.hidden, 16);
  EXPECT_EQ(o.depth, 3);
  EXPECT_EQ(o.train_samples, 256);
  EXPECT_EQ(o.eval_samples, 64);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_FALSE(o.shuffle);
  EXPECT_TRUE(o.drop_last);
  EXPECT_DOUBLE_EQ(o.bucket_cap_mb, 0.5);
  EXPECT_TRUE(o.skip_shape_check);
  EXPECT_EQ(o.device, DeviceChoice::kCpu);
  EXPECT_EQ(o.id_file, "/tmp/x");
  EXPECT_EQ(o.eval_every, 3);
  EXPECT_EQ(o.ckpt_dir, "/tmp/c");
  EXPECT_EQ(o.ckpt_every, 2);
  EXPECT_TRUE(o.resume);
  EXPECT_EQ(o.log_every, 5);
  EXPECT_DOUBLE_EQ(o.time_limit_s, 60);
  EXPECT_EQ(o.injection.fault, FaultClass::kOpOrder);
  EXPECT_EQ(o.injection.rank, 1);
  EXPECT_EQ(o.injection.step, 4);
}

TEST(OptionsTest, HelpIsNotAnError) {
  const ParsedOptions p = parse({"--help"});
  EXPECT_FALSE(p.options);
  EXPECT_EQ(p.exit_code, kExitOk);
  EXPECT_NE(p.message.find("--inject"), std::string::npos);
  EXPECT_NE(p.message.find("Exit codes"), std::string::npos);
}

TEST(OptionsTest, BadInputIsOneLineAndExitCode2) {
  struct Case {
    std::vector<std::string> args;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {{"--steps", "0"}, "--steps must be at least 1"},
           {{"--steps", "x"}, "--steps"},
           {{"--bogus"}, "--bogus"},
           {{"--device", "tpu"}, "--device"},
           {{"--lr", "-1"}, "--lr must be positive"},
           {{"--momentum", "1"}, "--momentum"},
           {{"--bucket-cap-mb", "0"}, "--bucket-cap-mb"},
           {{"--accum-steps", "0"}, "--accum-steps"},
           {{"--resume"}, "need --ckpt-dir"},
           {{"--ckpt-every", "5"}, "need --ckpt-dir"},
           {{"--train-samples", "100", "--batch-size", "32"}, "fewer than one batch of 32"},
           {{"--eval-samples", "2"}, "below the world size 4"},
           {{"--inject=boom"}, "unknown class 'boom'"},
           {{"--inject=crash:rank=9"}, "rank 9 is not in the job"},
           {{"--inject=crash:step=500"}, "after the last step"},
           {{"--inject=gated_save"}, "give --ckpt-dir"},
           {{"--inject=gated_eval_barrier", "--eval-every", "0"}, "give --eval-every"},
       }) {
    const ParsedOptions p = parse(c.args);
    EXPECT_FALSE(p.options) << c.says;
    EXPECT_EQ(p.exit_code, kExitUsage) << c.says;
    EXPECT_EQ(p.message.rfind("ncclrec-trainer: ", 0), 0u) << p.message;
    EXPECT_EQ(p.message.find('\n'), std::string::npos) << p.message;
    EXPECT_NE(p.message.find(c.says), std::string::npos) << p.message;
  }
}

}  // namespace
}  // namespace ncclrec::trainer
