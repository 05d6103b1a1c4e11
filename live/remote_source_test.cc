#include "live/remote_source.h"

#include <gtest/gtest.h>

#include "format/dump_io.h"
#include "format/ncclrec.pb.h"
#include "live/testing/fake_agent.h"
#include "live/testing/fixtures.h"

namespace ncclrec::live {
namespace {

using testing::FakeAgent;

std::string goodReply(const std::string& request_bytes) {
  format::pb::TopRequest req;
  format::pb::TopReply reply;
  if (!req.ParseFromString(request_bytes) || req.token() != "secret") {
    reply.set_error("wrong job token");
    return reply.SerializeAsString();
  }
  reply.set_host("nodeB");
  reply.set_dir("/d/run/attempt_0");
  reply.set_now_ns(testing::kT0 + 100'000'000'000);
  format::RankData d = testing::makeRank(7, 8, "nodeB", testing::kCommWorld, 3, 1);
  auto* r = reply.add_ranks();
  *r->mutable_data() = format::toProto(d);
  r->set_source("/d/run/attempt_0/nodeB.1007.bbox");
  format::RankData gone = testing::makeRank(6, 8, "nodeB", testing::kCommWorld, 3, 0);
  auto* g = reply.add_ranks();
  *g->mutable_data() = format::toProto(gone);
  g->set_process_gone(true);
  reply.add_peers("nodeC:29501");
  reply.add_warnings("/d/x.bbox: truncated black box");
  if (req.ask_snapshot()) reply.set_snapshot_asked("asked the ranks of /d/run/attempt_0");
  return reply.SerializeAsString();
}

TEST(RemoteSource, AsksTheAgentAndMovesItsClockOntoOurs) {
  FakeAgent agent(goodReply);
  RemoteSource source(agent.endpoint(), "secret");
  // Our clock is 2 s ahead of the agent's.
  const int64_t now = testing::kT0 + 102'000'000'000;
  RemoteSource::Result r = source.poll(now, 2);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.ranks.size(), 2u);
  const RankEntry& e = r.ranks[0];
  EXPECT_EQ(e.global_rank, 7);
  EXPECT_EQ(e.host, "nodeB");
  EXPECT_EQ(e.source, "agent " + agent.endpoint() + ": /d/run/attempt_0/nodeB.1007.bbox");
  EXPECT_EQ(e.liveness, Liveness::kAlive);
  ASSERT_EQ(e.history->ops.size(), 4u);
  EXPECT_EQ(e.history->ops.back().enqueue_ns, testing::kT0 + 22'000'000'000);
  EXPECT_EQ(r.ranks[1].liveness, Liveness::kGone);
  EXPECT_EQ(r.peers, (std::vector<std::string>{"nodeC:29501"}));
  EXPECT_EQ(r.notes, (std::vector<std::string>{"agent " + agent.endpoint() +
                                               ": /d/x.bbox: truncated black box"}));
  EXPECT_EQ(r.label, "nodeB:/d/run/attempt_0");
  // The same connection serves the next refresh.
  EXPECT_EQ(source.poll(now, 2).error, "");
  EXPECT_EQ(agent.requests(), 2);
}

TEST(RemoteSource, ASnapshotRequestGoesWithTheNextPollOnly) {
  FakeAgent agent(goodReply);
  RemoteSource source(agent.endpoint(), "secret");
  EXPECT_EQ(source.poll(testing::kT0, 2).snapshot_asked, "");
  source.askSnapshot();
  const RemoteSource::Result asked = source.poll(testing::kT0, 2);
  EXPECT_EQ(asked.error, "");
  EXPECT_EQ(asked.snapshot_asked,
            "agent " + agent.endpoint() + ": asked the ranks of /d/run/attempt_0");
  EXPECT_EQ(source.poll(testing::kT0, 2).snapshot_asked, "");
}

TEST(RemoteSource, ASnapshotRequestWaitsForAnAgentThatAnswers) {
  RemoteSource source("127.0.0.1:1", "secret");
  source.askSnapshot();
  const RemoteSource::Result r = source.poll(testing::kT0, 1);
  EXPECT_NE(r.error, "");
  EXPECT_EQ(r.snapshot_asked, "");  // nothing reached an agent: still to be asked
}

TEST(RemoteSource, AWrongTokenIsSaid) {
  FakeAgent agent(goodReply);
  RemoteSource source(agent.endpoint(), "guess");
  EXPECT_EQ(source.poll(testing::kT0, 2).error, "agent " + agent.endpoint() + ": wrong job token");
}

TEST(RemoteSource, SomethingThatIsNotAnAgent) {
  FakeAgent http([](const std::string&) { return std::string("HTTP/1.1 400 Bad Request\r\n\r\n"); },
                 /*raw=*/true);
  RemoteSource source(http.endpoint(), "secret");
  const std::string error = source.poll(testing::kT0, 1).error;
  EXPECT_EQ(error.rfind("agent " + http.endpoint() + ": ", 0), 0u) << error;
}

TEST(RemoteSource, NobodyListening) {
  RemoteSource source("127.0.0.1:1", "secret");
  const std::string error = source.poll(testing::kT0, 1).error;
  EXPECT_EQ(error, "agent 127.0.0.1:1: cannot connect: Connection refused");
  // Not asked again at once: the same answer without a new attempt.
  EXPECT_EQ(source.poll(testing::kT0 + 1, 1).error, error);
}

TEST(RemoteSource, SplitEndpoint) {
  std::string h, p;
  EXPECT_TRUE(splitEndpoint("node1:29501", &h, &p));
  EXPECT_EQ(h, "node1");
  EXPECT_EQ(p, "29501");
  EXPECT_TRUE(splitEndpoint("[::1]:80", &h, &p));
  EXPECT_EQ(h, "::1");
  EXPECT_FALSE(splitEndpoint("node1", &h, &p));
  EXPECT_FALSE(splitEndpoint("node1:http", &h, &p));
  EXPECT_FALSE(splitEndpoint(":80", &h, &p));
}

}  // namespace
}  // namespace ncclrec::live
