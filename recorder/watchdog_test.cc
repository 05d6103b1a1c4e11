#include "recorder/watchdog.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>

#include "format/bbox_ring.h"
#include "recorder/testing/recorder_fixture.h"

namespace ncclrec::recorder {
namespace {

using format::EventState;
using format::OpType;
using testing::beginOp;
using testing::RecorderTest;
using testing::registerComm;

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

TEST_F(RecorderTest, HangIsDumpedWithinTimeoutPlusTwoSecondsAndTriggersTheJob) {
  runInChild({{"NCCLREC_TIMEOUT", "1"}, {"NCCLREC_RUN_ID", "job7"}}, [this] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    int comm = 0;
    registerComm(r, &comm, 21, 0, 2);
    CallHandle done = beginOp(r, OpType::kAllReduce, &comm, 1);
    r->end(done, 0);
    const auto t0 = std::chrono::steady_clock::now();
    CallHandle stuck = beginOp(r, OpType::kAllReduce, &comm, 2);  // never ends
    (void)stuck;
    const std::string dump = waitForFile(".hang.ncclrec.pb", 3.0);
    ASSERT_NE(dump, "") << "no hang dump within timeout + 2 s";
    EXPECT_LT(secondsSince(t0), 3.0);
    EXPECT_GE(secondsSince(t0), 1.0);
  });
  const format::RankData dump = loadOnly(".hang.ncclrec.pb");
  EXPECT_EQ(dump.dump_reason, format::DumpReason::kHang);
  EXPECT_EQ(dump.hang_event_index, 1);
  EXPECT_NE(dump.dump_detail.find("ncclAllReduce #2"), std::string::npos) << dump.dump_detail;
  std::ifstream trigger(dir_.file(std::string(format::kTriggerFileName)));
  ASSERT_TRUE(trigger.good());
  std::string text((std::istreambuf_iterator<char>(trigger)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("run_id=job7"), std::string::npos) << text;
  EXPECT_NE(text.find("reason=hang"), std::string::npos) << text;
}

void writeTrigger(const std::string& path, const std::string& run_id) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << "run_id=" << run_id << "\nhost=elsewhere\npid=1\nrank=3\nreason=hang\n";
  ASSERT_EQ(rename(tmp.c_str(), path.c_str()), 0);
}

TEST_F(RecorderTest, TriggerFileFromAnotherProcessMakesThisOneDumpWithinOneSecond) {
  runInChild({{"NCCLREC_RUN_ID", "job8"}}, [this] {
    Recorder* r = Recorder::get();
    ASSERT_NE(r, nullptr);
    // Another run's trigger is ignored...
    writeTrigger(dir_.file(std::string(format::kTriggerFileName)), "other-job");
    EXPECT_EQ(waitForFile(".trigger.ncclrec.pb", 0.6), "");
    // ... ours is not.
    const auto t0 = std::chrono::steady_clock::now();
    writeTrigger(dir_.file(std::string(format::kTriggerFileName)), "job8");
    EXPECT_NE(waitForFile(".trigger.ncclrec.pb", 2.0), "");
    EXPECT_LT(secondsSince(t0), 1.0 + 0.5);
  });
  const format::RankData dump = loadOnly(".trigger.ncclrec.pb");
  EXPECT_EQ(dump.dump_reason, format::DumpReason::kTrigger);
  EXPECT_NE(dump.dump_detail.find("rank=3"), std::string::npos) << dump.dump_detail;
}

TEST_F(RecorderTest, StaleTriggerFileFromAnEarlierRunIsIgnored) {
  writeTrigger(dir_.file(std::string(format::kTriggerFileName)), "");
  runInChild({}, [this] {
    ASSERT_NE(Recorder::get(), nullptr);
    EXPECT_EQ(waitForFile(".trigger.ncclrec.pb", 0.8), "");
  });
}

TEST_F(RecorderTest, DumpSignalMakesADump) {
  runInChild({{"NCCLREC_DUMP_SIGNAL", "SIGUSR1"}}, [this] {
    ASSERT_NE(Recorder::get(), nullptr);
    raise(SIGUSR1);
    EXPECT_NE(waitForFile(".signal.ncclrec.pb", 2.0), "");
  });
  EXPECT_EQ(loadOnly(".signal.ncclrec.pb").dump_reason, format::DumpReason::kSignal);
}

// CUDA completion, through the fake driver: an op whose stream is held stays incomplete after
// its call returned, is declared hung, and completes when the stream is released.
TEST_F(RecorderTest, CudaTimedOpStaysIncompleteUntilItsStreamRuns) {
  runInChild({{"NCCLREC_COMPLETION", "cuda"},
              {"NCCLREC_CUDA_LIBRARY", NCCLREC_TEST_FAKE_CUDA},
              {"NCCLREC_TIMEOUT", "0.5"},
              {"NCCLREC_POLL_MS", "20"}},
             [this] {
               void* fake = dlopen(NCCLREC_TEST_FAKE_CUDA, RTLD_NOW);
               ASSERT_NE(fake, nullptr);
               auto set_blocked =
                   reinterpret_cast<void (*)(void*, int)>(dlsym(fake, "fakeCudaSetStreamBlocked"));
               ASSERT_NE(set_blocked, nullptr);
               Recorder* r = Recorder::get();
               ASSERT_NE(r, nullptr);
               ASSERT_NE(r->cuda(), nullptr);
               EXPECT_EQ(r->header()->completion_mode, 1u);
               int comm = 0;
               registerComm(r, &comm, 31, 0, 2);
               int stream_object = 0;
               void* stream = &stream_object;
               set_blocked(stream, 1);
               CallHandle c = beginOp(r, OpType::kAllReduce, &comm, 8, stream);
               r->end(c, 0);  // returned: enqueued only
               format::Event e;
               ASSERT_TRUE(format::readEvent(r->header(), c.index, &e));
               EXPECT_NE(e.flags & format::kEventCudaTimed, 0u);
               EXPECT_NE(e.state, uint8_t(EventState::kCompleted));
               EXPECT_NE(waitForFile(".hang.ncclrec.pb", 2.0), "");
               set_blocked(stream, 0);
               bool completed = false;
               for (int i = 0; i < 100 && !completed; ++i) {
                 std::this_thread::sleep_for(std::chrono::milliseconds(20));
                 ASSERT_TRUE(format::readEvent(r->header(), c.index, &e));
                 completed = e.state == uint8_t(EventState::kCompleted);
               }
               EXPECT_TRUE(completed);
               EXPECT_GE(e.end_ns, e.start_ns);
             });
}

// An op issued while its stream captures a CUDA graph: its marker is captured, not run, and the
// watchdog completes it marked captured rather than waiting for it (no hang).
TEST_F(RecorderTest, OpUnderGraphCaptureCompletesMarkedCaptured) {
  runInChild({{"NCCLREC_COMPLETION", "cuda"},
              {"NCCLREC_CUDA_LIBRARY", NCCLREC_TEST_FAKE_CUDA},
              {"NCCLREC_TIMEOUT", "0.5"},
              {"NCCLREC_POLL_MS", "20"}},
             [this] {
               void* fake = dlopen(NCCLREC_TEST_FAKE_CUDA, RTLD_NOW);
               ASSERT_NE(fake, nullptr);
               auto set_capturing = reinterpret_cast<void (*)(void*, int)>(
                   dlsym(fake, "fakeCudaSetStreamCapturing"));
               ASSERT_NE(set_capturing, nullptr);
               Recorder* r = Recorder::get();
               ASSERT_NE(r, nullptr);
               ASSERT_NE(r->cuda(), nullptr);
               int comm = 0;
               registerComm(r, &comm, 32, 0, 2);
               int stream_object = 0;
               void* stream = &stream_object;
               set_capturing(stream, 1);
               CallHandle c = beginOp(r, OpType::kAllReduce, &comm, 8, stream);
               r->end(c, 0);
               format::Event e;
               bool completed = false;
               for (int i = 0; i < 100 && !completed; ++i) {
                 std::this_thread::sleep_for(std::chrono::milliseconds(20));
                 ASSERT_TRUE(format::readEvent(r->header(), c.index, &e));
                 completed = e.state == uint8_t(EventState::kCompleted);
               }
               EXPECT_TRUE(completed);
               EXPECT_NE(e.flags & format::kEventGraphCaptured, 0u);
               EXPECT_NE(e.flags & format::kEventCudaTimed, 0u);
               std::this_thread::sleep_for(std::chrono::milliseconds(700));
               EXPECT_EQ(waitForFile(".hang.ncclrec.pb", 0.1), "") << "a captured op is no hang";
             });
}

}  // namespace
}  // namespace ncclrec::recorder
