#include "live/remote_source.h"

#include <utility>

#include "format/dump_io.h"
#include "format/ncclrec.pb.h"
#include "live/rank_convert.h"

namespace ncclrec::live {
namespace {

constexpr uint32_t kMaxReply = 64u << 20;
constexpr int64_t kRetryNs = 2'000'000'000;

}  // namespace

RemoteSource::RemoteSource(std::string endpoint, std::string token)
    : endpoint_(std::move(endpoint)), token_(std::move(token)) {}

RemoteSource::~RemoteSource() = default;

RemoteSource::Result RemoteSource::poll(int64_t now_ns, double timeout_s) {
  Result out;
  out.label = endpoint_;
  const std::string who = "agent " + endpoint_ + ": ";
  if (!socket_) {
    // A dead agent is not asked again at every refresh.
    if (last_attempt_ns_ != 0 && now_ns - last_attempt_ns_ < kRetryNs && !last_error_.empty()) {
      out.error = last_error_;
      return out;
    }
    last_attempt_ns_ = now_ns;
    auto socket = format::FrameSocket::connect(endpoint_, "the agent",
                                               format::FrameSocket::deadlineIn(timeout_s));
    if (!socket.ok()) {
      out.error = last_error_ = who + socket.status().message();
      return out;
    }
    socket_.emplace(std::move(socket).value());
  }
  format::pb::TopRequest request;
  request.set_token(token_);
  request.set_max_events(static_cast<uint32_t>(kRecentOps));
  request.set_ask_snapshot(ask_snapshot_);
  const auto deadline = format::FrameSocket::deadlineIn(timeout_s);
  base::Status sent = socket_->sendAll(format::framed(request.SerializeAsString()), deadline);
  auto bytes = sent.ok() ? socket_->readFrame(kMaxReply, deadline) : sent;
  format::pb::TopReply reply;
  if (!bytes.ok() || !reply.ParseFromString(*bytes)) {
    socket_.reset();
    out.error = last_error_ = who + (bytes.ok() ? "reply does not decode (not a cxxrun agent?)"
                                                : bytes.status().message());
    return out;
  }
  if (!reply.error().empty()) {
    socket_.reset();
    out.error = last_error_ = who + reply.error();
    return out;
  }
  last_error_.clear();
  if (ask_snapshot_) {
    ask_snapshot_ = false;
    out.snapshot_asked = who + (reply.snapshot_asked().empty()
                                    ? "does not take thread snapshot requests (an older cxxrun)"
                                    : reply.snapshot_asked());
  }
  const int64_t shift = reply.now_ns() > 0 ? now_ns - reply.now_ns() : 0;
  for (const format::pb::TopRank& r : reply.ranks()) {
    format::RankData data = format::fromProto(r.data());
    data.source_path = "agent " + endpoint_ + ": " + r.source();
    data.source = format::SourceKind::kBlackBox;
    RankEntry entry = entryFromRankData(data, shift);
    if (r.process_gone() && entry.liveness == Liveness::kAlive)
      entry.liveness = goneLiveness(entry.last_dump_ns);
    out.ranks.push_back(std::move(entry));
  }
  for (const std::string& p : reply.peers()) out.peers.push_back(p);
  for (const std::string& w : reply.warnings()) out.notes.push_back(who + w);
  out.label = reply.host() + ":" + reply.dir();
  return out;
}

}  // namespace ncclrec::live
