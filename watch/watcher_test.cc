#include "watch/watcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/clock.h"
#include "base/text.h"
#include "format/recording_files.h"
#include "format/testing/bbox_builder.h"
#include "format/testing/temp_dir.h"

namespace ncclrec::watch {
namespace {

using format::OpType;
using format::testing::BboxBuilder;
using format::testing::TempDir;

constexpr uint64_t kComm = 0x5eed000000000001ull;
constexpr int64_t kS = 1'000'000'000;

// A black box of rank `rank` of `world` on this host, process `pid` of run `run`: `done`
// completed all-reduces one per 100 ms from `t0`, then (pending) one more entered 100 ms later
// and still incomplete.
BboxBuilder rankBox(int rank, int world, int pid, const char* run, int done, bool pending,
                    int64_t t0) {
  BboxBuilder b;
  b.header()->pid = pid;
  b.header()->global_rank = rank;
  b.header()->world_size = world;
  b.header()->heartbeat_ns = t0;
  b.header()->start_realtime_ns = t0 - kS;
  std::strncpy(b.header()->host, base::hostName().c_str(), sizeof(b.header()->host) - 1);
  std::strncpy(b.header()->run_id, run, sizeof(b.header()->run_id) - 1);
  format::CommRecord c{};
  c.comm_id = kComm;
  c.rank = rank;
  c.nranks = world;
  c.coll_seq = uint64_t(done + (pending ? 1 : 0));
  b.addComm(c);
  for (int i = 1; i <= done + (pending ? 1 : 0); ++i) {
    format::Event e = format::testing::makeCollective(OpType::kAllReduce, kComm, rank, world,
                                                      uint64_t(i), 8, t0 + i * kS / 10);
    if (i > done) {
      e.state = static_cast<uint8_t>(format::EventState::kEnqueued);
      e.end_ns = 0;
      e.start_ns = 0;
    }
    b.addEvent(e);
  }
  return b;
}

std::string fileText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const int kSelf = static_cast<int>(getpid());

WatchOptions options(const std::string& dir, const std::string& run_id = "", double linger_s = 60,
                     double dump_wait_s = 10) {
  WatchOptions o;
  o.dir = dir;
  o.run_id = run_id;
  o.linger_s = linger_s;
  o.dump_wait_s = dump_wait_s;
  return o;
}
const auto kNoSleep = [](double) {};

// Rank 0 (this process: alive) waits in all-reduce #3 for rank 1, which exited after #2.
void writeHungJob(const TempDir& dir, const char* run, int64_t t0) {
  ASSERT_TRUE(rankBox(0, 2, kSelf, run, 2, true, t0).writeTo(dir.file("h.0.bbox")));
  BboxBuilder gone = rankBox(1, 2, 999999, run, 2, false, t0);
  gone.header()->exit_ns = t0 + kS / 2;
  ASSERT_TRUE(gone.writeTo(dir.file("h.1.bbox")));
}

TEST(Watcher, ACertainHangTriggersTheDumpsAndReports) {
  TempDir dir;
  const int64_t t0 = base::realtimeNs() - 10 * kS;
  writeHungJob(dir, "runA", t0);
  std::ostringstream err;
  Watcher w(options(dir.path(), "runA", 60, 0.2), live::DetectorParams{}, err);
  ASSERT_EQ(w.step(t0 + 5 * kS), Watcher::State::kHang);
  const std::string line = w.hang().line;
  EXPECT_EQ(line.rfind("hang (certain", 0), 0u) << line;
  EXPECT_EQ(w.hang().assessment.since_ns, t0 + 3 * kS / 10);  // rank 0 entered #3
  EXPECT_EQ(w.report(t0 + 5 * kS, kNoSleep), kWatchDone);
  const auto trigger =
      format::TriggerFile::parse(fileText(dir.file(std::string(format::kTriggerFileName))));
  EXPECT_EQ(trigger.run_id, "runA");
  EXPECT_EQ(trigger.rank, -1);
  EXPECT_EQ(trigger.reason, "hang");
  EXPECT_EQ(trigger.detail, line);
  const std::string out = err.str();
  EXPECT_EQ(out.rfind("ncclrec: " + line + "\n", 0), 0u) << out;  // the hang line first, at once
  EXPECT_NE(out.find("ncclrec: hang reported (run runA"), std::string::npos) << out;
  EXPECT_NE(out.find("report: " + dir.file("report.json")), std::string::npos) << out;
  const std::string report = fileText(dir.file("report.json"));
  EXPECT_NE(report.find("\"reason\": \"hang\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"run_id\": \"runA\""), std::string::npos) << report;
  // The same stall is not reported twice.
  EXPECT_EQ(w.step(t0 + 6 * kS), Watcher::State::kWatching);
}

TEST(Watcher, RanksOfAnotherRunAreIgnored) {
  TempDir dir;
  const int64_t t0 = base::realtimeNs() - 10 * kS;
  writeHungJob(dir, "old", t0);
  std::ostringstream err;
  Watcher w(options(dir.path(), "new", 1), live::DetectorParams{}, err);
  EXPECT_EQ(w.step(t0 + 5 * kS), Watcher::State::kWatching);
  EXPECT_EQ(w.step(t0 + 7 * kS), Watcher::State::kLingered);
  EXPECT_EQ(err.str(), "");
}

TEST(Watcher, LeavesWhenNothingStallsForTheLingerTime) {
  TempDir dir;
  const int64_t t0 = base::realtimeNs();
  ASSERT_TRUE(rankBox(0, 1, kSelf, "r", 3, false, t0).writeTo(dir.file("h.0.bbox")));
  std::ostringstream err;
  Watcher w(options(dir.path(), "", 2), live::DetectorParams{}, err);
  EXPECT_EQ(w.step(t0 + kS), Watcher::State::kWatching);
  EXPECT_EQ(w.step(t0 + 2 * kS), Watcher::State::kWatching);
  EXPECT_EQ(w.step(t0 + 3 * kS), Watcher::State::kLingered);
  EXPECT_EQ(err.str(), "");  // a healthy job hears nothing
}

TEST(Watcher, LeavesWhenEveryRankEnded) {
  TempDir dir;
  const int64_t t0 = base::realtimeNs();
  for (int r = 0; r < 2; ++r) {
    BboxBuilder b = rankBox(r, 2, 999990 + r, "r", 3, false, t0);
    b.header()->exit_ns = t0 + kS;
    ASSERT_TRUE(b.writeTo(dir.file("h." + std::to_string(r) + ".bbox")));
  }
  std::ostringstream err;
  Watcher w(options(dir.path()), live::DetectorParams{}, err);
  EXPECT_EQ(w.step(t0 + 2 * kS), Watcher::State::kEnded);
}

TEST(Watcher, SaysOnceWhenTheDirectoryHoldsOnlyThisNodesRanks) {
  TempDir dir;
  const int64_t t0 = base::realtimeNs();
  // Rank 0 of 4 waits in all-reduce #4; ranks 1-3 are not in this directory.
  ASSERT_TRUE(rankBox(0, 4, kSelf, "r", 3, true, t0).writeTo(dir.file("h.0.bbox")));
  std::ostringstream err;
  Watcher w(options(dir.path()), live::DetectorParams{}, err);
  EXPECT_EQ(w.step(t0 + kS), Watcher::State::kWatching);
  EXPECT_EQ(err.str(), "");  // nothing to say yet: the other ranks may still be starting
  for (int s = 2; s < 20 && err.str().empty(); ++s) w.step(t0 + s * kS);
  const std::string notice = "ncclrec: " + dir.path() +
                             " holds 1 of the job's 4 ranks, all on this host: the directory is "
                             "not shared, so this watches this node's ranks only (NCCLREC_DIR "
                             "shared by the job gives a job-wide verdict)\n";
  ASSERT_EQ(err.str().rfind(notice, 0), 0u) << err.str();
  // Then the warning about the ranks it cannot see, and the notice only once.
  EXPECT_NE(err.str().find("ncclrec: stalled", notice.size()), std::string::npos) << err.str();
  for (int s = 20; s < 40; ++s) w.step(t0 + s * kS);
  EXPECT_EQ(err.str().find(notice, 1), std::string::npos) << err.str();
}

TEST(Watcher, AnotherWatcherHoldingTheLockMeansNothingToDo) {
  TempDir dir;
  writeHungJob(dir, "r", base::realtimeNs() - 10 * kS);
  const int held = open(dir.file("ncclrec.watch.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(held, 0);
  ASSERT_EQ(flock(held, LOCK_EX | LOCK_NB), 0);
  std::ostringstream err;
  EXPECT_EQ(runWatcher(options(dir.path()), err), kWatchDone);
  EXPECT_EQ(err.str(), "");
  EXPECT_FALSE(std::filesystem::exists(dir.file(std::string(format::kTriggerFileName))));
  close(held);
}

TEST(Watcher, AnEndReportNeedsNoLiveStall) {
  TempDir dir;
  // A job that ended: rank 1 exited after #2, rank 0 (this process) still waits in #3.
  const int64_t t0 = base::realtimeNs() - 10 * kS;
  writeHungJob(dir, "runE", t0);
  std::ostringstream out, err;
  WatchOptions o = options(dir.path(), "runE");
  o.ended = "exit code 1";
  EXPECT_EQ(writeEndReport(o, out, err), kWatchDone) << err.str();
  EXPECT_EQ(
      out.str().rfind("ncclrec: verdict after the job ended (run runE, attempt 0; exit code 1)", 0),
      0u)
      << out.str();
  EXPECT_NE(out.str().find("report: " + dir.file("report.json")), std::string::npos) << out.str();
  const std::string report = fileText(dir.file("report.json"));
  EXPECT_NE(report.find("\"reason\": \"ended\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"ended\": \"exit code 1\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"class\""), std::string::npos) << report;  // the analyzer's verdict
  // No trigger: the job is over, nobody is left to dump.
  EXPECT_FALSE(std::filesystem::exists(dir.file(std::string(format::kTriggerFileName))));
}

TEST(Watcher, AnEndReportOnAnUnwritableDirectoryIsOneError) {
  std::ostringstream out, err;
  WatchOptions o = options("/proc/no-such-dir");
  o.ended = "exit code 0";
  EXPECT_EQ(writeEndReport(o, out, err), kWatchFailed);
  EXPECT_NE(err.str().find("report.json"), std::string::npos) << err.str();
}

TEST(Watcher, CommandLine) {
  TempDir dir;
  const std::string d = dir.path();
  auto parse = [](std::vector<const char*> args) {
    args.insert(args.begin(), "ncclrec-watch");
    return parseWatchCommandLine(static_cast<int>(args.size()), args.data());
  };
  auto ok = parse(
      {"--dir", d.c_str(), "--run-id", "r9", "--interval", "0.25", "--linger", "5", "--daemonize"});
  ASSERT_TRUE(ok.options) << ok.message;
  EXPECT_EQ(ok.options->run_id, "r9");
  EXPECT_DOUBLE_EQ(ok.options->interval_s, 0.25);
  EXPECT_DOUBLE_EQ(ok.options->linger_s, 5);
  EXPECT_TRUE(ok.daemonize);
  auto bad = parse({"--dir", d.c_str(), "--interval", "-1"});
  EXPECT_FALSE(bad.options);
  EXPECT_EQ(bad.exit_code, kWatchUsage);
  EXPECT_EQ(bad.message, "ncclrec-watch: --interval must be a number of seconds > 0");
  EXPECT_EQ(parse({"--dir", d.c_str(), "--bogus"}).exit_code, kWatchUsage);
  EXPECT_EQ(parse({"--help"}).exit_code, kWatchDone);
  auto ended = parse({"--dir", d.c_str(), "--ended", "exit code 3"});
  ASSERT_TRUE(ended.options) << ended.message;
  EXPECT_EQ(ended.options->ended, "exit code 3");
  EXPECT_EQ(parse({"--dir", d.c_str(), "--ended", ""}).message,
            "ncclrec-watch: --ended needs how the job ended, e.g. --ended 'exit code 0'");
  EXPECT_EQ(parse({"--dir", d.c_str(), "--ended", "x", "--daemonize"}).exit_code, kWatchUsage);
}

}  // namespace
}  // namespace ncclrec::watch
