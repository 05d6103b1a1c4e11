// hostnccl as the driver of NCCL profiler plugins: the event stream a plugin sees (order, fields,
// parent links, sequence numbers), the activation mask, and plugins that fail or cannot load.
// Ranks are processes running profiler_worker; the plugin is event_log_plugin.so.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "third_party/nccl/nccl_profiler.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct Ranks {
  fs::path dir;
  std::vector<int> status;
  std::string log(int rank) const { return read(dir / ("events." + std::to_string(rank))); }
  std::string err(int rank) const { return read(dir / ("stderr." + std::to_string(rank))); }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

// Runs `scenario` on `n` ranks with the extra environment `env`; every rank must exit 0.
Ranks runRanks(const std::string& scenario, int n, const std::vector<std::string>& env) {
  Ranks run;
  run.dir = fs::temp_directory_path() /
            ("hostnccl-prof-" + std::to_string(getpid()) + "-" + std::to_string(std::rand()));
  fs::create_directories(run.dir);
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> envs;
    // The given variables replace inherited ones of the same name (the first one counts).
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view var(*e);
      const std::string_view name = var.substr(0, var.find('='));
      if (std::none_of(env.begin(), env.end(), [&](const std::string& v) {
            return v.size() > name.size() && v.compare(0, name.size(), name) == 0 &&
                   v[name.size()] == '=';
          })) {
        envs.emplace_back(*e);
      }
    }
    envs.insert(envs.end(), env.begin(), env.end());
    envs.push_back("PROFTEST_LOG=" + (run.dir / ("events." + std::to_string(r))).string());
    std::vector<char*> envp;
    for (auto& e : envs) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string rank = std::to_string(r), nranks = std::to_string(n), d = run.dir.string(),
                name = scenario, errPath = (run.dir / ("stderr." + rank)).string();
    char* argv[] = {const_cast<char*>(PROFILER_WORKER),
                    name.data(),
                    rank.data(),
                    nranks.data(),
                    d.data(),
                    nullptr};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 2, errPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc = posix_spawn(&pids[r], PROFILER_WORKER, &fa, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << "cannot start " << PROFILER_WORKER;
  }
  run.status.assign(n, -1);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (int r = 0; r < n; ++r) {
    while (pids[r] > 0 && waitpid(pids[r], &run.status[r], WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &run.status[r], 0);
        ADD_FAILURE() << scenario << ": rank " << r << " hung";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(WIFEXITED(run.status[r]) && WEXITSTATUS(run.status[r]) == 0)
        << scenario << ": rank " << r << " failed (status " << run.status[r] << "): " << run.err(r);
  }
  return run;
}

std::string plugin() { return std::string("NCCL_PROFILER_PLUGIN=") + PROFILER_PLUGIN; }

// The lines of `text` from the first one starting with `prefix`.
std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string l; std::getline(s, l);) out.push_back(l);
  return out;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// What NCCL sends for one lone collective whose events get ids `g`.. g+3, with `tail` the
// fields after the function name of the CollApi and Coll lines.
void lone(std::vector<std::string>& e, int g, int rank, const std::string& func,
          const std::string& api, const std::string& coll) {
  auto R = " rank=" + std::to_string(rank) + " ";
  auto id = [&](int k) { return std::to_string(g + k); };
  e.push_back("start " + id(0) + " ctx=1 parent=0" + R + "GroupApi depth=1");
  e.push_back("state " + id(0) + " 23");
  e.push_back("start " + id(1) + " ctx=1 parent=" + id(0) + R + "CollApi " + func + " " + api);
  e.push_back("stop " + id(1));
  e.push_back("state " + id(0) + " 24");
  e.push_back("start " + id(2) + " ctx=1 parent=" + id(1) + R + "Coll " + func + " " + coll);
  e.push_back("start " + id(3) + " ctx=1 parent=" + id(2) + R + "KernelCh channel=0");
  e.push_back("state " + id(3) + " 22");
  e.push_back("stop " + id(3));
  e.push_back("stop " + id(2));
  e.push_back("stop " + id(0));
}

std::vector<std::string> expectedStream(int rank, int n) {
  const auto R = " rank=" + std::to_string(rank) + " ";
  const auto peer = std::to_string((rank + 1) % n), from = std::to_string((rank + n - 1) % n);
  std::vector<std::string> e;
  lone(e, 1, rank, "AllReduce", "count=4 ncclFloat32 root=0",
       "seq=0 count=4 ncclFloat32 root=0 ch=1");
  lone(e, 5, rank, "AllReduce", "count=2 ncclInt32 root=0", "seq=1 count=2 ncclInt32 root=0 ch=1");
  lone(e, 9, rank, "Broadcast", "count=3 ncclFloat64 root=1",
       "seq=0 count=3 ncclFloat64 root=1 ch=1");
  // The group: API events at each call, then the operations at ncclGroupEnd (p2p posted first,
  // the collective run, the p2p completed).
  for (const char* l : {"start 13 ctx=1 parent=0%sGroupApi depth=2", "state 13 23",
                        "start 14 ctx=1 parent=13%sP2pApi Send count=2 ncclFloat32", "stop 14",
                        "start 15 ctx=1 parent=13%sP2pApi Recv count=2 ncclFloat32", "stop 15",
                        "start 16 ctx=1 parent=13%sCollApi AllReduce count=1 ncclFloat32 root=0",
                        "stop 16", "state 13 24"}) {
    char b[160];
    std::snprintf(b, sizeof b, l, R.c_str());
    e.push_back(b);
  }
  e.push_back("start 17 ctx=1 parent=14" + R + "P2p Send count=2 ncclFloat32 peer=" + peer +
              " ch=1");
  e.push_back("start 18 ctx=1 parent=17" + R + "KernelCh channel=0");
  e.push_back("start 19 ctx=1 parent=15" + R + "P2p Recv count=2 ncclFloat32 peer=" + from +
              " ch=1");
  e.push_back("start 20 ctx=1 parent=19" + R + "KernelCh channel=0");
  e.push_back("start 21 ctx=1 parent=16" + R +
              "Coll AllReduce seq=2 count=1 ncclFloat32 root=0 ch=1");
  e.push_back("start 22 ctx=1 parent=21" + R + "KernelCh channel=0");
  for (const char* l : {"state 22 22", "stop 22", "stop 21", "state 18 22", "stop 18", "stop 17",
                        "state 20 22", "stop 20", "stop 19", "stop 13"}) {
    e.push_back(l);
  }
  // A nested group: depth 3 (two user groups and NCCL's own).
  std::vector<std::string> nested;
  lone(nested, 23, rank, "AllGather", "count=1 ncclFloat32 root=0",
       "seq=0 count=1 ncclFloat32 root=0 ch=1");
  nested[0] = "start 23 ctx=1 parent=0" + R + "GroupApi depth=3";
  e.insert(e.end(), nested.begin(), nested.end());
  e.push_back("finalize ctx=1");
  return e;
}

// Every event type but the proxy's and those below them (ProxyEventsFollowEachMessage checks
// those): NCCL's tree is ProxyOp > ProxyStep > NetPlugin.
std::string allButProxy() {
  return "PROFTEST_MASK=" +
         std::to_string(0xffff & ~(ncclProfProxyOp | ncclProfProxyStep | ncclProfNetPlugin));
}

// How many "state ID STATE" lines record `state`.
int states(const std::string& log, int state) {
  int n = 0;
  for (const std::string& l : lines(log)) {
    const std::string tail = " " + std::to_string(state);
    if (l.rfind("state ", 0) == 0 && l.size() > tail.size() &&
        l.compare(l.size() - tail.size(), tail.size(), tail) == 0) {
      ++n;
    }
  }
  return n;
}

TEST(ProfilerPlugin, EventStreamMatchesNcclOrderAndFields) {
  const int n = 2;
  Ranks run = runRanks("stream", n, {plugin(), allButProxy()});
  std::string commLine;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> got = lines(run.log(r));
    ASSERT_FALSE(got.empty()) << "rank " << r << ": no events; stderr: " << run.err(r);
    // The communicator id is equal on all ranks.
    std::string init = got.front();
    ASSERT_EQ(init.rfind("init ctx=1 comm=", 0), 0u) << init;
    EXPECT_NE(init.find(" nodes=1 rank=" + std::to_string(r) + "/2"), std::string::npos) << init;
    std::string comm = init.substr(0, init.find(" nodes="));
    if (r == 0) commLine = comm;
    EXPECT_EQ(comm, commLine);
    got.erase(got.begin());
    std::vector<std::string> want = expectedStream(r, n);
    for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
      ASSERT_EQ(i < got.size() ? got[i] : "(end)", i < want.size() ? want[i] : "(end)")
          << "rank " << r << ", event line " << i + 1;
    }
  }
}

TEST(ProfilerPlugin, OneRankCommunicatorRunsNoKernelChannel) {
  // As NCCL: no kernel channel for a 1-rank communicator, so nChannels 0 and no KernelCh event.
  Ranks run = runRanks("two", 1, {plugin()});
  const std::string log = run.log(0);
  EXPECT_EQ(count(log, "Coll AllReduce"), 2) << log;
  EXPECT_EQ(count(log, " ch=0"), 2) << log;
  EXPECT_EQ(count(log, " ch=1"), 0) << log;
  EXPECT_EQ(count(log, "KernelCh"), 0) << log;
}

TEST(ProfilerPlugin, MaskLimitsEventsToTheActiveTypesAndTheirParents) {
  // CollApi only: its parent GroupApi is sent too, nothing below it.
  Ranks run = runRanks("two", 2, {plugin(), "PROFTEST_MASK=0x200"});
  std::string log = run.log(1);
  EXPECT_EQ(count(log, "init ctx="), 2) << log;
  EXPECT_EQ(count(log, "GroupApi depth=1"), 2) << log;
  EXPECT_EQ(count(log, "CollApi AllReduce count=4"), 2) << log;
  EXPECT_EQ(count(log, " Coll "), 0) << log;
  EXPECT_EQ(count(log, "KernelCh"), 0) << log;
  EXPECT_EQ(count(log, "finalize ctx="), 2) << log;
  EXPECT_NE(log.find("init ctx=2"), std::string::npos) << "contexts are per communicator";
}

// Issue 31: each all-reduce of 2 ranks is a ring of one step each way: a reduce-scatter message
// and an all-gather message to the other rank, and two from it. One ProxyOp per direction under
// the Coll event, announcing those 2 steps; one ProxyStep per message, SendWait (9) once a send is
// handed to the transport, RecvGPUWait (12) once a receive's data is in, each stopped.
TEST(ProfilerPlugin, ProxyEventsFollowEachMessage) {
  Ranks run = runRanks("two", 2, {plugin(), "PROFTEST_MASK=" + std::to_string(ncclProfProxyStep)});
  for (int r = 0; r < 2; ++r) {
    const std::string log = run.log(r);
    const std::string peer = std::to_string(1 - r);
    EXPECT_EQ(count(log, " Coll AllReduce"), 2) << log;  // the parents
    EXPECT_EQ(count(log, "ProxyOp channel=0 peer=" + peer + " steps=2 send=1 pid=self"), 2) << log;
    EXPECT_EQ(count(log, "ProxyOp channel=0 peer=" + peer + " steps=2 send=0 pid=self"), 2) << log;
    EXPECT_EQ(count(log, "ProxyStep step=0"), 4) << log;
    EXPECT_EQ(count(log, "ProxyStep step=1"), 4) << log;
    EXPECT_EQ(count(log, "ProxyStep step=2"), 0) << log;
    EXPECT_EQ(states(log, 9), 4) << log;
    EXPECT_EQ(states(log, 12), 4) << log;
    EXPECT_EQ(count(log, "KernelCh"), 0) << log;  // not asked for
    EXPECT_EQ(count(log, "\nstop "), count(log, "\nstart ")) << log;
  }
}

// The id of the event started by the first line containing `what` ("" if none).
std::string startedId(const std::string& log, const std::string& what) {
  for (const std::string& l : lines(log)) {
    if (l.rfind("start ", 0) == 0 && l.find(what) != std::string::npos) {
      return l.substr(6, l.find(' ', 6) - 6);
    }
  }
  return "";
}

// Issue 31: a gather's root counts each peer's data as it lands, not in post order. Rank 1's
// messages to rank 0 are dropped; rank 2's data, posted after rank 1's receive, lands, and its
// step must say so (RecvGPUWait, stopped) while rank 0 still waits for rank 1. Waiting in post
// order, rank 0 fails on rank 1 first and never marks rank 2's step.
TEST(ProfilerPlugin, GatherRootCountsEachPeersDataAsItLands) {
  Ranks run = runRanks("gather", 3,
                       {plugin(), "PROFTEST_MASK=" + std::to_string(ncclProfProxyStep),
                        "HOSTNCCL_DROP_LINK=1>0", "HOSTNCCL_TIMEOUT=20"});
  const std::string log = run.log(0);
  for (int peer = 1; peer <= 2; ++peer) {
    const std::string op =
        startedId(log, "ProxyOp channel=0 peer=" + std::to_string(peer) + " steps=1 send=0");
    ASSERT_NE(op, "") << "no receive ProxyOp from rank " << peer << ":\n" << log;
    const std::string step = startedId(log, "parent=" + op + " rank=0 ProxyStep step=0");
    ASSERT_NE(step, "") << "no ProxyStep under event " << op << ":\n" << log;
    const bool landed = log.find("\nstate " + step + " 12\n") != std::string::npos;
    EXPECT_EQ(landed, peer == 2) << "rank " << peer << "'s step " << step << ":\n" << log;
  }
  EXPECT_NE(run.err(0).find("connection lost while waiting to receive from rank 1"),
            std::string::npos)
      << run.err(0);
}

TEST(ProfilerPlugin, FailingEventCallbackIsSaidOnceThenNeverCalled) {
  Ranks run = runRanks("two", 2, {plugin(), "PROFTEST_FAIL=start"});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(count(run.log(r), "start failed"), 1) << run.log(r);
    EXPECT_EQ(count(run.log(r), "finalize"), 0) << run.log(r);
    EXPECT_EQ(count(run.err(r), "no longer calling it"), 1) << run.err(r);
  }
}

TEST(ProfilerPlugin, FailingInitLeavesTheCommunicatorWithoutProfiler) {
  Ranks run = runRanks("two", 2, {plugin(), "PROFTEST_FAIL=init"});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(run.log(r), "");
    EXPECT_EQ(count(run.err(r), "profiler plugin init failed"), 1) << run.err(r);
  }
}

TEST(ProfilerPlugin, UnloadablePluginIsSaidOnceAndIgnored) {
  Ranks run = runRanks("two", 2, {"NCCL_PROFILER_PLUGIN=/nonexistent/libnothing.so"});
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(count(run.err(r), "running without a profiler"), 1) << run.err(r);
  }
}

TEST(ProfilerPlugin, NoneAndUnsetLoadNothing) {
  for (const char* v : {"NCCL_PROFILER_PLUGIN=none", "NCCL_PROFILER_PLUGIN="}) {
    Ranks run = runRanks("two", 2, {v});
    EXPECT_EQ(run.log(0), "") << v;
    EXPECT_EQ(run.err(0), "") << v;
  }
}

TEST(ProfilerPlugin, StaticPluginIsFoundInTheGlobalScope) {
  // Under AddressSanitizer the preloaded plugin comes before libasan in the initial library
  // list, which it refuses unless told that this is meant.
  const char* inherited = std::getenv("ASAN_OPTIONS");
  const std::string asan =
      std::string("ASAN_OPTIONS=") +
      (inherited != nullptr && *inherited != '\0' ? inherited + std::string(":") : std::string()) +
      "verify_asan_link_order=0";
  Ranks run = runRanks(
      "two", 2,
      {"NCCL_PROFILER_PLUGIN=STATIC_PLUGIN", std::string("LD_PRELOAD=") + PROFILER_PLUGIN, asan});
  EXPECT_EQ(count(run.log(0), "init ctx="), 2) << run.err(0);
  EXPECT_EQ(count(run.log(0), "KernelCh channel=0"), 2) << run.log(0);
}

}  // namespace
