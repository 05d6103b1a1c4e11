#include <dlfcn.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/support/process.h"
#include "tests/support/stub_control.h"

// Interposers, as libncclrec.so defines them: this executable exports its symbols, so the stub's
// internal calls of these two land here when they go through the PLT.
std::atomic<int> gInterposedBroadcast{0};
std::atomic<int> gInterposedInitRankConfig{0};

extern "C" ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                      ncclDataType_t datatype, int root, ncclComm_t comm,
                                      cudaStream_t stream) {
  gInterposedBroadcast.fetch_add(1);
  return pncclBroadcast(sendbuff, recvbuff, count, datatype, root, comm, stream);
}

extern "C" ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                               int rank, ncclConfig_t* config) {
  gInterposedInitRankConfig.fetch_add(1);
  return pncclCommInitRankConfig(comm, nranks, commId, rank, config);
}

namespace ncclrec::support {
namespace {

using std::chrono::milliseconds;

class StubNcclTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stubNcclResetAll();
    gInterposedBroadcast = 0;
    gInterposedInitRankConfig = 0;
  }
  void TearDown() override { stubNcclResetAll(); }

  static ncclComm_t makeComm(int nranks, int rank) {
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclComm_t comm = nullptr;
    EXPECT_EQ(ncclCommInitRank(&comm, nranks, id, rank), ncclSuccess);
    return comm;
  }
};

// The names nccl.h declares, read from the header itself so a new entry point is not missed.
std::vector<std::string> headerFunctionNames() {
  const std::optional<std::string> header = readFile(NCCLREC_NCCL_HEADER);
  EXPECT_TRUE(header.has_value()) << NCCLREC_NCCL_HEADER;
  std::vector<std::string> names;
  const std::regex declare(R"(NCCL_API_DECLARE\(\s*[^,]+,\s*(nccl\w+)\s*,)");
  for (std::sregex_iterator it(header->begin(), header->end(), declare), end; it != end; ++it) {
    names.push_back((*it)[1]);
  }
  return names;
}

TEST_F(StubNcclTest, ExportsEveryHeaderFunctionUnderBothNames) {
  const std::vector<std::string> names = headerFunctionNames();
  ASSERT_GE(names.size(), 40u);
  void* library = dlopen(NCCLREC_STUB_NCCL, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(library, nullptr) << dlerror();
  for (const std::string& name : names) {
    void* plain = dlsym(library, name.c_str());
    void* alias = dlsym(library, ("p" + name).c_str());
    EXPECT_NE(plain, nullptr) << name;
    EXPECT_EQ(plain, alias) << name << ": pnccl* must alias nccl*";
    EXPECT_GE(stubNcclCallCount(name.c_str()), 0) << name << " is not counted";
  }
  dlclose(library);
}

TEST_F(StubNcclTest, UniqueIdsCarryPatternAndCounter) {
  ncclUniqueId a, b;
  ASSERT_EQ(ncclGetUniqueId(&a), ncclSuccess);
  ASSERT_EQ(ncclGetUniqueId(&b), ncclSuccess);
  EXPECT_EQ(std::string(a.internal, 8), "STUBNCCL");
  EXPECT_NE(std::string(a.internal, sizeof(a.internal)),
            std::string(b.internal, sizeof(b.internal)));
  EXPECT_EQ(ncclGetUniqueId(nullptr), ncclInvalidArgument);
  // The recorded argument of a by-value id is its counter word.
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 2, b, 1), ncclSuccess);
  uint64_t counter = 0;
  std::memcpy(&counter, b.internal + 8, sizeof(counter));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(stubNcclLastArg("ncclCommInitRank", 2)), counter);
}

TEST_F(StubNcclTest, InitRankChecksArgumentsAndFillsComm) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 0, id, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 4, id, 4), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 4, id, -1), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(nullptr, 4, id, 0), ncclInvalidArgument);
  EXPECT_STRNE(ncclGetLastError(nullptr), "");
  ASSERT_EQ(ncclCommInitRank(&comm, 16, id, 11), ncclSuccess);
  int value = -1;
  EXPECT_EQ(ncclCommCount(comm, &value), ncclSuccess);
  EXPECT_EQ(value, 16);
  EXPECT_EQ(ncclCommUserRank(comm, &value), ncclSuccess);
  EXPECT_EQ(value, 11);
  EXPECT_EQ(ncclCommCuDevice(comm, &value), ncclSuccess);
  EXPECT_EQ(value, 3);
  EXPECT_EQ(ncclCommCount(comm, nullptr), ncclInvalidArgument);
  ncclConfig_t bad = NCCL_CONFIG_INITIALIZER;
  bad.magic = 0;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &bad), ncclInvalidArgument);
  ncclConfig_t good = NCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &good), ncclSuccess);
}

TEST_F(StubNcclTest, InternalCallsGoThroughThePlt) {
  ncclComm_t comm = makeComm(1, 0);
  EXPECT_EQ(gInterposedInitRankConfig.load(), 1);
  EXPECT_EQ(stubNcclCallCount("ncclCommInitRank"), 1);
  EXPECT_EQ(stubNcclCallCount("ncclCommInitRankConfig"), 1);

  float data[4] = {1, 2, 3, 4};
  EXPECT_EQ(ncclBcast(data, 4, ncclFloat, 0, comm, nullptr), ncclSuccess);
  EXPECT_EQ(gInterposedBroadcast.load(), 1);
  EXPECT_EQ(stubNcclCallCount("ncclBcast"), 1);
  EXPECT_EQ(stubNcclCallCount("ncclBroadcast"), 1);
  // The alias reaches the stub directly, not the interposer.
  EXPECT_EQ(pncclBcast(data, 4, ncclFloat, 0, comm, nullptr), ncclSuccess);
  EXPECT_EQ(gInterposedBroadcast.load(), 2);
  EXPECT_EQ(stubNcclCallCount("ncclBcast"), 2);
}

TEST_F(StubNcclTest, OneRankCollectivesCopyBuffersUnchanged) {
  ncclComm_t comm = makeComm(1, 0);
  const float send[8] = {1.5f, -2, 3, 4, 5, 6, 7, 8.25f};
  auto check = [&](const char* what, auto call) {
    float recv[8] = {};
    EXPECT_EQ(call(recv), ncclSuccess) << what;
    EXPECT_EQ(std::memcmp(send, recv, sizeof(send)), 0) << what;
  };
  check("allreduce",
        [&](float* r) { return ncclAllReduce(send, r, 8, ncclFloat, ncclAvg, comm, nullptr); });
  check("reduce",
        [&](float* r) { return ncclReduce(send, r, 8, ncclFloat, ncclMax, 0, comm, nullptr); });
  check("broadcast",
        [&](float* r) { return ncclBroadcast(send, r, 8, ncclFloat, 0, comm, nullptr); });
  check("reducescatter",
        [&](float* r) { return ncclReduceScatter(send, r, 8, ncclFloat, ncclSum, comm, nullptr); });
  check("allgather", [&](float* r) { return ncclAllGather(send, r, 8, ncclFloat, comm, nullptr); });
  check("alltoall", [&](float* r) { return ncclAlltoAll(send, r, 8, ncclFloat, comm, nullptr); });
  check("gather", [&](float* r) { return ncclGather(send, r, 8, ncclFloat, 0, comm, nullptr); });
  check("scatter", [&](float* r) { return ncclScatter(send, r, 8, ncclFloat, 0, comm, nullptr); });
  // Two bytes per element for half precision: the whole buffer, not half of it.
  check("half",
        [&](float* r) { return ncclAllReduce(send, r, 16, ncclHalf, ncclSum, comm, nullptr); });
}

TEST_F(StubNcclTest, ManyRankCollectivesOnlyValidate) {
  ncclComm_t comm = makeComm(4, 2);
  const float send[4] = {1, 2, 3, 4};
  float recv[4] = {};
  EXPECT_EQ(ncclAllReduce(send, recv, 4, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(recv[0], 0.0f);
  EXPECT_EQ(ncclAllReduce(send, recv, 4, ncclFloat, ncclSum, nullptr, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(send, recv, 4, static_cast<ncclDataType_t>(ncclNumTypes), ncclSum, comm,
                          nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(
      ncclAllReduce(send, recv, 4, ncclFloat, static_cast<ncclRedOp_t>(ncclNumOps), comm, nullptr),
      ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(nullptr, recv, 4, ncclFloat, ncclSum, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 0, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclBroadcast(send, recv, 4, ncclFloat, 4, comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclReduce(send, recv, 4, ncclFloat, ncclSum, -1, comm, nullptr), ncclInvalidArgument);
  // Only the root's receive buffer matters to a reduce.
  EXPECT_EQ(ncclReduce(send, nullptr, 4, ncclFloat, ncclSum, 0, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclReduce(send, nullptr, 4, ncclFloat, ncclSum, 2, comm, nullptr),
            ncclInvalidArgument);
  EXPECT_EQ(ncclSend(send, 4, ncclFloat, 3, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclSend(send, 4, ncclFloat, 4, comm, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclRecv(recv, 4, ncclFloat, -1, comm, nullptr), ncclInvalidArgument);

  ncclRedOp_t op;
  float scalar = 2;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, comm),
            ncclSuccess);
  EXPECT_EQ(op, ncclNumOps);
  EXPECT_EQ(ncclAllReduce(send, recv, 4, ncclFloat, op, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(op, comm), ncclSuccess);
  EXPECT_EQ(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument);
}

TEST_F(StubNcclTest, DestroyedCommIsReportedNotTouched) {
  ncclComm_t comm = makeComm(2, 0);
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  const float send[4] = {};
  float recv[4];
  EXPECT_EQ(ncclAllReduce(send, recv, 4, ncclFloat, ncclSum, comm, nullptr), ncclInvalidUsage);
  EXPECT_EQ(ncclCommDestroy(comm), ncclInvalidUsage);
  EXPECT_EQ(ncclCommAbort(comm), ncclInvalidUsage);
}

TEST_F(StubNcclTest, SplitAndShrink) {
  ncclComm_t parent = makeComm(8, 5);
  ncclComm_t child = reinterpret_cast<ncclComm_t>(1);
  EXPECT_EQ(ncclCommSplit(parent, NCCL_SPLIT_NOCOLOR, 0, &child, nullptr), ncclSuccess);
  EXPECT_EQ(child, nullptr);
  EXPECT_EQ(ncclCommSplit(parent, -7, 0, &child, nullptr), ncclInvalidArgument);
  ASSERT_EQ(ncclCommSplit(parent, 1, 0, &child, nullptr), ncclSuccess);
  ASSERT_NE(child, nullptr);
  int value = 0;
  EXPECT_EQ(ncclCommCount(child, &value), ncclSuccess);
  EXPECT_EQ(value, 8);

  int exclude[] = {1, 7, 2};
  ncclComm_t shrunk = nullptr;
  ASSERT_EQ(ncclCommShrink(parent, exclude, 3, &shrunk, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess);
  EXPECT_EQ(ncclCommCount(shrunk, &value), ncclSuccess);
  EXPECT_EQ(value, 5);
  EXPECT_EQ(ncclCommUserRank(shrunk, &value), ncclSuccess);
  EXPECT_EQ(value, 3);  // ranks 1 and 2 below it are gone
  int self[] = {5};
  EXPECT_EQ(ncclCommShrink(parent, self, 1, &shrunk, nullptr, 0), ncclInvalidArgument);
  int twice[] = {1, 1};
  EXPECT_EQ(ncclCommShrink(parent, twice, 2, &shrunk, nullptr, 0), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(parent, exclude, 1, &shrunk, nullptr, 9), ncclInvalidArgument);
}

TEST_F(StubNcclTest, InitAllMakesOneCommPerDevice) {
  ncclComm_t comms[3] = {};
  const int devices[3] = {4, 6, 2};
  ASSERT_EQ(ncclCommInitAll(comms, 3, devices), ncclSuccess);
  for (int i = 0; i < 3; ++i) {
    int rank = -1, device = -1;
    EXPECT_EQ(ncclCommUserRank(comms[i], &rank), ncclSuccess);
    EXPECT_EQ(ncclCommCuDevice(comms[i], &device), ncclSuccess);
    EXPECT_EQ(rank, i);
    EXPECT_EQ(device, devices[i]);
  }
  EXPECT_EQ(ncclCommInitAll(comms, 0, nullptr), ncclInvalidArgument);
}

TEST_F(StubNcclTest, GroupsNestAndUnbalancedEndIsInvalidUsage) {
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess);
  EXPECT_EQ(info.estimatedTime, 0.0f);
  EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclInvalidUsage);
}

TEST_F(StubNcclTest, MiscellaneousEntryPoints) {
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
  EXPECT_STREQ(ncclGetErrorString(ncclInvalidUsage),
               "invalid usage (run with NCCL_DEBUG=WARN for details)");
  void* memory = nullptr;
  ASSERT_EQ(ncclMemAlloc(&memory, 64), ncclSuccess);
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(ncclMemFree(memory), ncclSuccess);
  ncclComm_t comm = makeComm(2, 1);
  void* handle = nullptr;
  char buffer[16];
  EXPECT_EQ(ncclCommRegister(comm, buffer, sizeof(buffer), &handle), ncclSuccess);
  EXPECT_EQ(ncclCommDeregister(comm, handle), ncclSuccess);
  ncclWindow_t window = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comm, buffer, sizeof(buffer), &window, NCCL_WIN_DEFAULT),
            ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(comm, window), ncclSuccess);
  EXPECT_EQ(ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT), ncclSuccess);
  EXPECT_EQ(ncclCommRevoke(comm, 3), ncclInvalidArgument);
  EXPECT_EQ(ncclCommFinalize(comm), ncclSuccess);
  ncclUniqueId ids[2];
  ncclGetUniqueId(&ids[0]);
  ncclComm_t scalable = nullptr;
  EXPECT_EQ(ncclCommInitRankScalable(&scalable, 4, 3, 1, ids, nullptr), ncclSuccess);
  EXPECT_EQ(ncclCommInitRankScalable(&scalable, 4, 3, 0, ids, nullptr), ncclInvalidArgument);
}

TEST_F(StubNcclTest, AsyncErrorIsSettable) {
  ncclComm_t comm = makeComm(2, 0);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  stubNcclSetAsyncError(ncclRemoteError);
  EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
  ncclComm_t later = makeComm(2, 1);
  EXPECT_EQ(ncclCommGetAsyncError(later, &async), ncclSuccess);
  EXPECT_EQ(async, ncclRemoteError);
}

TEST_F(StubNcclTest, ForcedResultReplacesTheCall) {
  ncclComm_t comm = makeComm(1, 0);
  const float send[2] = {1, 2};
  float recv[2] = {};
  stubNcclSetResult("ncclAllReduce", ncclRemoteError);
  EXPECT_EQ(ncclAllReduce(send, recv, 2, ncclFloat, ncclSum, comm, nullptr), ncclRemoteError);
  EXPECT_EQ(recv[1], 0.0f);
  EXPECT_EQ(stubNcclCallCount("ncclAllReduce"), 1);
  stubNcclSetResult("ncclAllReduce", -1);
  EXPECT_EQ(ncclAllReduce(send, recv, 2, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(recv[1], 2.0f);
  EXPECT_EQ(stubNcclCallCount("ncclNoSuchThing"), -1);
}

TEST_F(StubNcclTest, LastArgumentsAreRecorded) {
  ncclComm_t comm = makeComm(4, 0);
  const float send[2] = {};
  float recv[2];
  ASSERT_EQ(ncclSend(send, 2, ncclFloat, 3, comm, nullptr), ncclSuccess);
  ASSERT_EQ(ncclAllReduce(send, recv, 2, ncclFloat, ncclMin, comm, nullptr), ncclSuccess);
  EXPECT_EQ(stubNcclLastArg("ncclAllReduce", 0), send);
  EXPECT_EQ(stubNcclLastArg("ncclAllReduce", 1), recv);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(stubNcclLastArg("ncclAllReduce", 2)), 2u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(stubNcclLastArg("ncclAllReduce", 4)), 3u);  // ncclMin
  EXPECT_EQ(stubNcclLastArg("ncclAllReduce", 5), comm);
  EXPECT_EQ(stubNcclLastArg("ncclAllReduce", 7), nullptr);  // past the last argument
  EXPECT_EQ(reinterpret_cast<uintptr_t>(stubNcclLastArg("ncclSend", 3)), 3u);
  stubNcclResetCounts();
  EXPECT_EQ(stubNcclLastArg("ncclAllReduce", 0), nullptr);
  EXPECT_EQ(stubNcclCallCount("ncclAllReduce"), 0);
}

TEST_F(StubNcclTest, TimedBlockDelaysTheCall) {
  stubNcclSetBlock("ncclGetVersion", 150);
  int version = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(150));
  stubNcclSetBlock("ncclGetVersion", 0);
}

TEST_F(StubNcclTest, IndefiniteBlockWaitsForRelease) {
  ncclComm_t comm = makeComm(2, 0);
  stubNcclSetBlock("ncclAllReduce", -1);
  std::atomic<bool> returned{false};
  std::thread caller([&] {
    const float send[1] = {};
    float recv[1];
    EXPECT_EQ(ncclAllReduce(send, recv, 1, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
    returned = true;
  });
  while (stubNcclCallCount("ncclAllReduce") == 0) std::this_thread::yield();
  std::this_thread::sleep_for(milliseconds(50));
  EXPECT_FALSE(returned.load());
  stubNcclRelease();
  caller.join();
  EXPECT_TRUE(returned.load());
}

TEST_F(StubNcclTest, CountingIsExactUnderThreads) {
  constexpr int kThreads = 8;
  constexpr int kCalls = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([] {
      int version;
      for (int i = 0; i < kCalls; ++i) ncclGetVersion(&version);
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(stubNcclCallCount("ncclGetVersion"), kThreads * kCalls);
}

// nccl_caller runs against the stub in a child, so the environment controls are read at load.
ProcessResult runCaller(std::vector<std::string> ops, std::map<std::string, std::string> env = {},
                        milliseconds timeout = milliseconds(20000)) {
  SpawnOptions options;
  options.argv = {NCCLREC_NCCL_CALLER};
  options.argv.insert(options.argv.end(), ops.begin(), ops.end());
  options.env = std::move(env);
  options.unset_env = {"STUB_NCCL_BLOCK", "STUB_NCCL_RESULT", "STUB_NCCL_DEVICE", "LD_PRELOAD"};
  return runProcess(options, timeout);
}

TEST(NcclCallerTest, RunsOperationsAndPrintsOneLineEach) {
  const ProcessResult r = runCaller({"getuniqueid", "init:4:1", "allreduce:3", "bcast:2", "group",
                                     "send:2:3", "recv:1:0", "groupend", "split:1:0", "split:-1:0",
                                     "destroy", "asyncerror", "threads:3:10", "abort", "exit:0"});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_EQ(r.out,
            "getuniqueid rc=0\ninit:4:1 rc=0\nallreduce:3 rc=0\nbcast:2 rc=0\ngroup rc=0\n"
            "send:2:3 rc=0\nrecv:1:0 rc=0\ngroupend rc=0\nsplit:1:0 rc=0 comm=new\n"
            "split:-1:0 rc=0 comm=null\ndestroy rc=0\nasyncerror rc=0 async=0\n"
            "threads:3:10 rc=0\nabort rc=0\nexit:0 rc=0\n");
}

TEST(NcclCallerTest, EnvironmentForcesResultsAndAsyncErrors) {
  const ProcessResult r = runCaller(
      {"init:2:0", "allreduce:2", "bcast:1", "asyncerror"},
      {{"STUB_NCCL_RESULT", "ncclAllReduce:6,ncclBroadcast:5"}, {"STUB_NCCL_ASYNC_ERROR", "3"}});
  ASSERT_TRUE(r.exitedWith(1)) << r.describe();
  EXPECT_EQ(r.out, "init:2:0 rc=0\nallreduce:2 rc=6\nbcast:1 rc=5\nasyncerror rc=0 async=3\n");
}

TEST(NcclCallerTest, EnvironmentBlockHangsTheCall) {
  const ProcessResult r = runCaller({"init:2:0", "allreduce:1", "exit:0"},
                                    {{"STUB_NCCL_BLOCK", "ncclAllReduce:-1"}}, milliseconds(500));
  EXPECT_TRUE(r.timed_out) << r.describe();
  EXPECT_EQ(r.term_signal, SIGKILL);
  EXPECT_EQ(r.out, "init:2:0 rc=0\n");
}

TEST(NcclCallerTest, MalformedEnvironmentIsReportedAndIgnored) {
  const ProcessResult r = runCaller({"init:1:0", "allreduce:1"},
                                    {{"STUB_NCCL_RESULT", "ncclAllReduce:x,ncclNothing:2"}});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.err.find("malformed"), std::string::npos) << r.err;
}

TEST(NcclCallerTest, CrashesAndForks) {
  EXPECT_EQ(runCaller({"init:1:0", "kill"}).term_signal, SIGKILL);
  // Under a sanitizer the fault must stay a signal rather than become a report and an exit.
  std::map<std::string, std::string> env;
  for (const char* name : {"ASAN_OPTIONS", "TSAN_OPTIONS", "UBSAN_OPTIONS"}) {
    const char* options = std::getenv(name);
    env[name] = std::string(options != nullptr ? options : "") + ":handle_segv=0";
  }
  const ProcessResult segv = runCaller({"segv", "exit:0"}, env);
  EXPECT_EQ(segv.term_signal, SIGSEGV) << segv.describe();
  EXPECT_EQ(segv.out, "segv rc=0\n");
  const ProcessResult forked = runCaller({"init:1:0", "fork", "allreduce:1", "exit:7"});
  EXPECT_TRUE(forked.exitedWith(7)) << forked.describe();
  EXPECT_NE(forked.out.find("allreduce:1 rc=0\nexit:7 rc=0\n"), std::string::npos) << forked.out;
  EXPECT_NE(forked.out.find("fork rc=0 child="), std::string::npos) << forked.out;
  EXPECT_NE(forked.out.find(" status=7\n"), std::string::npos) << forked.out;
}

TEST(NcclCallerTest, BadOperationIsAUsageError) {
  for (const char* bad : {"allreduce", "allreduce:x", "frobnicate", "init:1", "init:1:0:2"}) {
    const ProcessResult r = runCaller({"init:1:0", bad});
    EXPECT_TRUE(r.exitedWith(2)) << bad << ": " << r.describe();
    EXPECT_EQ(r.out, "") << bad;  // nothing runs before the whole script is checked
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ncclrec::support
