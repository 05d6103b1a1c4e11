// The shared framed-TCP client (format/frame_client.h) against the shared server
// (frame_server.h): what the store's and ncclrec-top's clients rely on.
#include "format/frame_client.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "launcher/frame_server.h"

namespace ncclrec::launcher {
namespace {

using format::FrameSocket;

// Answers "ping N" with "pong N", "big" with a frame over the client's limit, "quiet" with
// nothing and "bye" by hanging up.
class Pong : public FrameServer::Protocol {
 public:
  bool onFrame(FrameServer::Conn& c, std::string_view body) override {
    if (body == "quiet") return true;
    if (body == "bye") return c.closing = true, true;
    if (body == "big") return c.out += FrameServer::frame(std::string(2000, 'x')), true;
    c.out += FrameServer::frame("pong" + std::string(body.substr(4)));
    return true;
  }
};

class FrameClientRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = FrameServer::listen("test", "127.0.0.1", 0, 1 << 20);
    ASSERT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(s).value();
    server_->serve(&protocol_);
    endpoint_ = "127.0.0.1:" + std::to_string(server_->port());
  }
  FrameSocket connect() {
    auto s = FrameSocket::connect(endpoint_, "the server", FrameSocket::deadlineIn(5));
    EXPECT_TRUE(s.ok()) << s.status().message();
    return std::move(s).value();
  }

  Pong protocol_;  // outlives the server
  std::unique_ptr<FrameServer> server_;
  std::string endpoint_;
};

TEST_F(FrameClientRoundTrip, FramesGoOutAndComeBackInOrder) {
  FrameSocket socket = connect();
  const auto deadline = FrameSocket::deadlineIn(5);
  // Two requests in one write: the server splits them, the client reads two frames.
  ASSERT_TRUE(socket.sendAll(format::framed("ping 1") + format::framed("ping 2"), deadline).ok());
  auto first = socket.readFrame(1 << 20, deadline);
  auto second = socket.readFrame(1 << 20, deadline);
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(*first, "pong 1");
  EXPECT_EQ(*second, "pong 2");
  // A body bigger than the socket's buffers goes out whole.
  const std::string large = "ping " + std::string(600'000, 'y');
  ASSERT_TRUE(socket.sendAll(format::framed(large), deadline).ok());
  auto back = socket.readFrame(1 << 20, deadline);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->size(), large.size());
  EXPECT_EQ(server_->violations(), 0u);
}

TEST_F(FrameClientRoundTrip, AReplyOverTheLimitIsRefused) {
  FrameSocket socket = connect();
  const auto deadline = FrameSocket::deadlineIn(5);
  ASSERT_TRUE(socket.sendAll(format::framed("big"), deadline).ok());
  auto r = socket.readFrame(1000, deadline);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "reply of 2000 bytes is too large");
}

TEST_F(FrameClientRoundTrip, NoReplyInTime) {
  FrameSocket socket = connect();
  ASSERT_TRUE(socket.sendAll(format::framed("quiet"), FrameSocket::deadlineIn(5)).ok());
  auto r = socket.readFrame(1000, FrameSocket::deadlineIn(0.2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "no reply in time");
}

TEST_F(FrameClientRoundTrip, AHangUpNamesThePeer) {
  FrameSocket socket = connect();
  ASSERT_TRUE(socket.sendAll(format::framed("bye"), FrameSocket::deadlineIn(5)).ok());
  auto r = socket.readFrame(1000, FrameSocket::deadlineIn(5));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "connection closed by the server");
  socket.close();
  EXPECT_FALSE(socket.connected());
  EXPECT_EQ(socket.sendAll("x", FrameSocket::deadlineIn(1)).message(), "not connected");
}

}  // namespace
}  // namespace ncclrec::launcher
