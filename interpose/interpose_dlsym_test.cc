// End-to-end tests of libncclrec.so's dlsym and dlvsym (dl_hook.cc, dl_trampoline.cc): NCCL bound
// through dlopen + dlsym, as ctypes bindings do, is recorded; every other lookup answers as
// without the shim, RTLD_NEXT relative to its caller included. dlsym_probe does the lookups.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "interpose/testing/shim_harness.h"

namespace ncclrec::interpose {
namespace {

namespace fs = std::filesystem;
using format::EventRecord;
using format::EventState;
using format::OpType;
using format::RankData;
using support::ProcessResult;
using testing::Env;
using testing::eventsOf;
using testing::ShimHarness;

const std::string kStub = NCCLREC_TEST_STUB_LIBRARY;
const std::string kHostnccl = NCCLREC_TEST_HOSTNCCL_LIBRARY;

ProcessResult runProbe(const ShimHarness& h, const std::vector<std::string>& args, Env env = {},
                       bool preload = true) {
  std::vector<std::string> argv = {NCCLREC_TEST_DLSYM_PROBE};
  argv.insert(argv.end(), args.begin(), args.end());
  return support::runProcess(h.options(argv, env, preload), testing::kRunTimeout);
}

// The four calls of a `nccl:` step, each recorded once and completed.
void expectRecordedRun(const ShimHarness& h) {
  const RankData box = h.blackBox();
  for (OpType op :
       {OpType::kGetUniqueId, OpType::kCommInitRank, OpType::kAllReduce, OpType::kCommDestroy}) {
    const std::vector<EventRecord> events = eventsOf(box, op);
    ASSERT_EQ(events.size(), 1u) << format::opName(op);
    EXPECT_EQ(events[0].state, EventState::kCompleted) << format::opName(op);
    EXPECT_EQ(events[0].result, 0) << format::opName(op);
  }
  const EventRecord reduce = eventsOf(box, OpType::kAllReduce)[0];
  EXPECT_EQ(reduce.count, 8u);
  EXPECT_EQ(reduce.nranks(), 1);
  EXPECT_EQ(reduce.op_seq, 1u);
}

std::string directoryOf(const std::string& path) { return fs::path(path).parent_path().string(); }

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    out.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

struct Binding {
  std::string name;
  std::string library;  // what dlopen is given
  std::string dir;      // LD_LIBRARY_PATH
  std::string mode;     // local, global
};

void PrintTo(const Binding& b, std::ostream* os) { *os << b.name; }

class DlsymHandleTest : public ::testing::TestWithParam<Binding> {};

// ctypes.CDLL(name or path[, RTLD_GLOBAL]) then attribute calls: dlsym on the handle.
TEST_P(DlsymHandleTest, CallsThroughTheHandleAreRecorded) {
  const Binding& b = GetParam();
  const Env env = {{"LD_LIBRARY_PATH", b.dir}};
  const std::vector<std::string> args = {b.library, "open:" + b.mode, "nccl:handle"};
  ShimHarness plain;
  const ProcessResult without = runProbe(plain, args, env, /*preload=*/false);
  ASSERT_TRUE(without.exitedWith(0)) << without.describe();
  EXPECT_NE(without.out.find("ncclAllReduce in libnccl.so.2\n"), std::string::npos) << without.out;

  ShimHarness h;
  const ProcessResult with = runProbe(h, args, env);
  ASSERT_TRUE(with.exitedWith(0)) << with.describe();
  EXPECT_EQ(with.err, "");
  for (const char* name :
       {"ncclGetUniqueId", "ncclCommInitRank", "ncclAllReduce", "ncclCommDestroy"})
    EXPECT_NE(with.out.find(std::string(name) + " in libncclrec.so\n"), std::string::npos)
        << with.out;
  EXPECT_NE(with.out.find("nccl:handle rc=0,0,0,0 data=ok\n"), std::string::npos) << with.out;
  expectRecordedRun(h);
}

INSTANTIATE_TEST_SUITE_P(
    Libraries, DlsymHandleTest,
    ::testing::Values(Binding{"StubSonameLocal", "libnccl.so.2", directoryOf(kStub), "local"},
                      Binding{"StubSonameGlobal", "libnccl.so.2", directoryOf(kStub), "global"},
                      Binding{"StubPathLocal", kStub, "/nonexistent", "local"},
                      Binding{"HostncclSonameLocal", "libnccl.so.2", directoryOf(kHostnccl),
                              "local"},
                      Binding{"HostncclPathLocal", kHostnccl, "/nonexistent", "local"},
                      Binding{"HostncclPathGlobal", kHostnccl, "/nonexistent", "global"}),
    [](const ::testing::TestParamInfo<Binding>& info) { return info.param.name; });

// CDLL(path, RTLD_GLOBAL) then CDLL(None): the lookups that do not name the library.
TEST(DlsymTest, MainHandleDefaultAndNextFindTheWrappers) {
  for (const std::string how : {"main", "default", "next"}) {
    for (const std::string mode : {"global", "local"}) {
      SCOPED_TRACE(how + " after open:" + mode);
      ShimHarness h;
      const ProcessResult r =
          runProbe(h, {kHostnccl, "open:" + mode, "nccl:" + how}, {{"LD_LIBRARY_PATH", "/none"}});
      ASSERT_TRUE(r.exitedWith(0)) << r.describe();
      EXPECT_NE(r.out.find("ncclAllReduce in libncclrec.so\n"), std::string::npos) << r.out;
      expectRecordedRun(h);
    }
  }
}

// The wrappers found no NCCL at their first call; the library dlopen'ed later is adopted when a
// lookup on its handle finds a wrapped name.
TEST(DlsymTest, LibraryLoadedAfterAFailedFirstCallIsAdopted) {
  ShimHarness h;
  const ProcessResult r = runProbe(h, {kStub, "nccl:default", "open:local", "nccl:handle"},
                                   {{"LD_LIBRARY_PATH", "/none"}});
  EXPECT_TRUE(r.exitedWith(1)) << r.describe();  // the first step fails: no NCCL yet
  EXPECT_NE(r.out.find("nccl:default rc=5,-1,-1,-1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nccl:handle rc=0,0,0,0 data=ok\n"), std::string::npos) << r.out;
  EXPECT_EQ(testing::lineCount(r.err), 1) << r.err;  // "no such function", once
  const RankData box = h.blackBox();
  // The failed call never reached a library: nothing to record.
  expectRecordedRun(h);
}

// One library per process: a second NCCL's entry points are answered unchanged (unrecorded),
// never redirected to the first one.
TEST(DlsymTest, SecondNcclLibraryIsLeftAlone) {
  ShimHarness h;
  const ProcessResult r = runProbe(h, {kStub, "open:local", "nccl:handle", "other:" + kHostnccl},
                                   {{"LD_LIBRARY_PATH", "/none"}});
  ASSERT_TRUE(r.exitedWith(0)) << r.describe();
  EXPECT_NE(r.out.find("ncclAllReduce in libncclrec.so\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("other ncclAllReduce in libnccl.so.2\n"), std::string::npos) << r.out;
}

// A NULL answer stays NULL, with its dlerror(); a found one leaves no error.
TEST(DlsymTest, SymbolsTheHandleLacksStayNull) {
  ShimHarness plain;
  const std::vector<std::string> args = {kStub, "open:local", "missing"};
  const ProcessResult without = runProbe(plain, args, {}, /*preload=*/false);
  ASSERT_TRUE(without.exitedWith(0)) << without.describe();
  ShimHarness h;
  const ProcessResult with = runProbe(h, args);
  ASSERT_TRUE(with.exitedWith(0)) << with.describe();
  EXPECT_NE(with.out.find("found ncclCommSplit in libncclrec.so dlerror=unset\n"),
            std::string::npos)
      << with.out;
  // Everything but where the found wrapped name is.
  std::string expected = without.out;
  const std::string from = "found ncclCommSplit in libnccl.so.2";
  ASSERT_NE(expected.find(from), std::string::npos) << expected;
  expected.replace(expected.find(from), from.size(), "found ncclCommSplit in libncclrec.so");
  EXPECT_EQ(with.out, expected);
  EXPECT_FALSE(fs::exists(h.recordDir()));
}

// Lookups of other names give the very pointers libc's dlsym gives, on every kind of handle.
TEST(DlsymTest, OtherLookupsAnswerAsWithoutTheShim) {
  const std::vector<std::string> args = {kStub, "open:local", "hook", "same"};
  ShimHarness plain;
  const ProcessResult without = runProbe(plain, args, {}, /*preload=*/false);
  ASSERT_TRUE(without.exitedWith(0)) << without.describe();
  EXPECT_NE(without.out.find("hook dlsym in libc.so.6\n"), std::string::npos) << without.out;
  ShimHarness h;
  const ProcessResult with = runProbe(h, args);
  ASSERT_TRUE(with.exitedWith(0)) << with.describe();
  EXPECT_NE(with.out.find("hook dlsym in libncclrec.so\n"), std::string::npos) << with.out;
  EXPECT_EQ(with.out.find("DIFFERENT"), std::string::npos) << with.out;
  // Where the program's own dlsym is now the shim's, lookups of "dlsym" find that one.
  std::string expected = without.out;
  for (const std::string& line : lines(expected)) {
    if (line.find("hook dlsym") == 0 || line.find("same default:dlsym ") == 0 ||
        line.find("same next:dlsym ") == 0) {
      std::string now = line;
      now.replace(now.find("libc.so.6"), 9, "libncclrec.so");
      expected.replace(expected.find(line), line.size(), now);
    }
  }
  EXPECT_EQ(with.out, expected);
  // Inert: no NCCL call, nothing written.
  EXPECT_FALSE(fs::exists(h.recordDir()));
  EXPECT_EQ(with.err, "");
}

// dlsym(RTLD_NEXT) answers relative to the library that calls it, not to libncclrec.so.
TEST(DlsymTest, RtldNextStaysRelativeToItsCaller) {
  const std::vector<std::string> args = {kStub, "next"};
  ShimHarness plain;
  const ProcessResult without = runProbe(plain, args, {}, /*preload=*/false);
  ASSERT_TRUE(without.exitedWith(0)) << without.describe();
  for (const char* round : {"1", "2"})
    EXPECT_NE(without.out.find("next " + std::string(round) +
                               " probeTwin libncclrec_next_probe_b.so:probeTwin\n"),
              std::string::npos)
        << without.out;
  ShimHarness h;
  const ProcessResult with = runProbe(h, args);
  ASSERT_TRUE(with.exitedWith(0)) << with.describe();
  EXPECT_EQ(with.out, without.out);
}

// libncclrec.so's own code never calls dlsym or dlvsym by name: such a call would bind to its own
// exported definitions.
TEST(DlsymTest, TheShimHasNoCallToItsOwnDlsym) {
  if (!fs::exists("/usr/bin/readelf")) GTEST_SKIP() << "no /usr/bin/readelf";
  ShimHarness h;
  const ProcessResult relocs = support::runProcess(
      h.options({"/usr/bin/readelf", "-rW", testing::shimPath()}, {}, false), testing::kRunTimeout);
  ASSERT_TRUE(relocs.exitedWith(0)) << relocs.describe();
  // "... R_X86_64_JUMP_SLOT 0000000000000000 dlsym + 0" (ours) or "dlsym@GLIBC_2.34 + 0".
  const std::regex call(R"(\s(dlsym|dlvsym)(@\S*)? \+)");
  EXPECT_FALSE(std::regex_search(relocs.out, call)) << relocs.out;
  const ProcessResult syms = support::runProcess(
      h.options({"/usr/bin/readelf", "--dyn-syms", "-W", testing::shimPath()}, {}, false),
      testing::kRunTimeout);
  ASSERT_TRUE(syms.exitedWith(0)) << syms.describe();
  for (const char* name : {" dlsym\n", " dlvsym\n"})
    EXPECT_NE(syms.out.find(name), std::string::npos) << syms.out;
}

}  // namespace
}  // namespace ncclrec::interpose
