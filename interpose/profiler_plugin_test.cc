// libncclrec.so's profiler plugin (profiler_plugin.cc) driven directly, in NCCL's own event order
// (hostnccl's order is covered end to end by the plugin-only samples): Coll stopped at enqueue,
// the KernelCh channels ending later on another thread; no channels; a failed channel; the p2p
// peer known only at launch; finalize. The library is dlopen'ed (no preload), as NCCL does.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "format/bbox_layout.h"
#include "format/reader.h"
#include "tests/support/process.h"
#include "third_party/nccl/nccl_profiler.h"

namespace {

using ncclrec::format::EventRecord;
using ncclrec::format::EventState;
using ncclrec::format::OpType;

class ProfilerPluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ncclrec::support::TempDir("ncclrec-plugin");
    setenv("NCCLREC_DIR", dir_->path().c_str(), 1);
    setenv("NCCLREC_WATCHER", "off", 1);
    setenv("NCCLREC_DUMP_ON_EXIT", "0", 1);
    void* lib = dlopen(NCCLREC_TEST_SHIM, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(lib, nullptr) << dlerror();
    plugin_ = static_cast<ncclProfPlugin*>(dlsym(lib, "ncclProfiler_v5"));
    ASSERT_NE(plugin_, nullptr);
    ASSERT_EQ(dlsym(lib, "ncclProfiler_v6") != nullptr, true);
  }

  // A communicator of its own per test (commId), so tests sharing the process stay apart.
  void* init(uint64_t comm_id) {
    void* ctx = nullptr;
    int mask = 0;
    EXPECT_EQ(plugin_->init(&ctx, comm_id, &mask, "", 1, 2, 0, nullptr), ncclSuccess);
    EXPECT_NE(ctx, nullptr);
    EXPECT_NE(mask & ncclProfCollApi, 0);
    EXPECT_NE(mask & ncclProfKernelCh, 0);
    return ctx;
  }

  void* start(void* ctx, ncclProfDescr d) {
    void* h = nullptr;
    EXPECT_EQ(plugin_->startEvent(ctx, &h, &d), ncclSuccess);
    return h;
  }

  void* collApi(void* ctx, void* group, const char* func, size_t count) {
    ncclProfDescr d{};
    d.type = ncclProfCollApi;
    d.parentObj = group;
    d.collApi.func = func;
    d.collApi.count = count;
    d.collApi.datatype = "ncclFloat32";
    return start(ctx, d);
  }

  void* coll(void* ctx, void* api, uint8_t channels) {
    ncclProfDescr d{};
    d.type = ncclProfColl;
    d.parentObj = api;
    d.coll.func = "AllReduce";
    d.coll.nChannels = channels;
    return start(ctx, d);
  }

  void* channel(void* ctx, void* task, uint8_t id) {
    ncclProfDescr d{};
    d.type = ncclProfKernelCh;
    d.parentObj = task;
    d.kernelCh.channelId = id;
    return start(ctx, d);
  }

  void endChannel(void* ch, bool done) {
    if (done) {
      ncclProfStateArgs a{};
      EXPECT_EQ(plugin_->recordEventState(ch, ncclProfStateKernelChStop, &a), ncclSuccess);
    }
    EXPECT_EQ(plugin_->stopEvent(ch), ncclSuccess);
  }

  // The events recorded for `comm_id`, read from the live black box.
  std::vector<EventRecord> events(uint64_t comm_id) {
    auto loaded = ncclrec::format::loadPaths({dir_->path()});
    EXPECT_TRUE(loaded.ok());
    std::vector<EventRecord> out;
    if (!loaded.ok() || loaded.value().ranks.empty()) return out;
    for (const EventRecord& e : loaded.value().ranks[0].events)
      if (e.commId() == comm_id && e.op != OpType::kCommInitRank) out.push_back(e);
    return out;
  }

  static ncclrec::support::TempDir* dir_;
  static ncclProfPlugin* plugin_;
};

ncclrec::support::TempDir* ProfilerPluginTest::dir_ = nullptr;
ncclProfPlugin* ProfilerPluginTest::plugin_ = nullptr;

TEST_F(ProfilerPluginTest, CollCompletesWhenItsLastChannelStopsAfterTheEnqueue) {
  void* ctx = init(0x1001);
  ncclProfDescr g{};
  g.type = ncclProfGroupApi;
  g.groupApi.groupDepth = 1;
  void* group = start(ctx, g);
  void* api = collApi(ctx, group, "AllReduce", 8);
  plugin_->stopEvent(api);
  void* task = coll(ctx, api, 2);
  plugin_->stopEvent(task);  // NCCL: enqueued
  plugin_->stopEvent(group);
  std::vector<EventRecord> ev = events(0x1001);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].op, OpType::kAllReduce);
  EXPECT_EQ(ev[0].count, 8u);
  EXPECT_EQ(ev[0].dtype, 7);  // ncclFloat32
  EXPECT_EQ(ev[0].op_seq, 1u);
  EXPECT_EQ(ev[0].state, EventState::kStarted);
  // The channels end on NCCL's proxy thread.
  std::thread proxy([&] {
    void* a = channel(ctx, task, 0);
    void* b = channel(ctx, task, 1);
    endChannel(a, true);
    EXPECT_EQ(events(0x1001)[0].state, EventState::kStarted) << "one channel of two";
    endChannel(b, true);
  });
  proxy.join();
  ev = events(0x1001);
  EXPECT_EQ(ev[0].state, EventState::kCompleted);
  EXPECT_TRUE(ev[0].flags & ncclrec::format::kEventProfilerTimed);
  EXPECT_GE(ev[0].endNs(), ev[0].startNs());
  EXPECT_GT(ev[0].startNs(), 0);
}

TEST_F(ProfilerPluginTest, WithoutChannelsTheCollStopCompletes) {
  void* ctx = init(0x1002);
  void* api = collApi(ctx, nullptr, "Broadcast", 4);
  plugin_->stopEvent(api);
  EXPECT_EQ(events(0x1002)[0].state, EventState::kEnqueued);
  void* task = coll(ctx, api, 0);
  EXPECT_EQ(events(0x1002)[0].state, EventState::kStarted);
  plugin_->stopEvent(task);
  EXPECT_EQ(events(0x1002)[0].state, EventState::kCompleted);
}

TEST_F(ProfilerPluginTest, AChannelStoppedWithoutItsStopStateFailsTheOp) {
  void* ctx = init(0x1003);
  void* api = collApi(ctx, nullptr, "AllGather", 2);
  void* task = coll(ctx, api, 1);
  endChannel(channel(ctx, task, 0), false);
  plugin_->stopEvent(task);
  plugin_->stopEvent(api);
  EXPECT_EQ(events(0x1003)[0].state, EventState::kFailed);
}

TEST_F(ProfilerPluginTest, SendTakesItsPeerAndSequenceAtLaunch) {
  void* ctx = init(0x1004);
  for (int i = 0; i < 2; ++i) {
    ncclProfDescr d{};
    d.type = ncclProfP2pApi;
    d.p2pApi.func = "Send";
    d.p2pApi.count = 3;
    d.p2pApi.datatype = "ncclInt32";
    void* api = start(ctx, d);
    plugin_->stopEvent(api);
    ncclProfDescr p{};
    p.type = ncclProfP2p;
    p.parentObj = api;
    p.p2p.func = "Send";
    p.p2p.peer = 1;
    p.p2p.nChannels = 1;
    void* task = start(ctx, p);
    endChannel(channel(ctx, task, 0), true);
    plugin_->stopEvent(task);
  }
  std::vector<EventRecord> ev = events(0x1004);
  ASSERT_EQ(ev.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(ev[i].op, OpType::kSend);
    EXPECT_EQ(ev[i].peer(), 1);
    EXPECT_EQ(ev[i].op_seq, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(ev[i].state, EventState::kCompleted);
  }
}

TEST_F(ProfilerPluginTest, FinalizeEndsTheCommunicatorAndUnknownEventsAreIgnored) {
  void* ctx = init(0x1005);
  ncclProfDescr d{};
  d.type = ncclProfProxyOp;
  EXPECT_NE(start(ctx, d), nullptr);  // a handle NCCL may stop: accepted, nothing recorded
  EXPECT_EQ(plugin_->finalize(ctx), ncclSuccess);
  auto loaded = ncclrec::format::loadPaths({dir_->path()});
  ASSERT_TRUE(loaded.ok());
  bool found = false;
  for (const auto& c : loaded.value().ranks[0].comms) {
    if (c.comm_id != 0x1005) continue;
    found = true;
    EXPECT_NE(c.state & ncclrec::format::kCommDestroyed, 0u);
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(events(0x1005).empty());
}

}  // namespace
