// The rendezvous: a key-value store served by one process per communicator (the root), reached
// with the ncclUniqueId's address and secret, and exposed to Gloo as a rendezvous::Store.
//
// Every process that uses hostnccl runs at most one StoreService (a listening socket and an accept
// thread, started on first use). It serves any number of sessions, one per communicator being
// created, each identified by its secret; a connection that presents an unknown secret is refused.
// A session ends once all its ranks said they are done, so an id cannot be reused.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "hostnccl/net.h"
#include "hostnccl/unique_id.h"

namespace ncclrec::hostnccl {

class StoreService {
 public:
  // The process-wide service, started on first call; nullptr (and *error) if it cannot listen.
  static StoreService* get(std::string* error);

  // The port every interface of this host listens on.
  int port() const { return port_; }

  // Accepts connections presenting `secret` from now on. Idempotent.
  void openSession(const Secret& secret);

  // Waits until every rank of the session `secret` said done (the session ended) or `until`
  // passed; returns at once in a process that does not serve it. For a rank that fails its init
  // after the ranks exchanged data: its process may exit at once, and the others must not lose
  // the server while they still read from it.
  void awaitSessionEnd(const Secret& secret, std::chrono::steady_clock::time_point until);

 private:
  StoreService() = default;
  void acceptLoop();
  int listenFd_ = -1;
  int port_ = 0;
};

// One rank's connection to a communicator's rendezvous session.
class StoreClient final : public gloo::rendezvous::Store {
 public:
  // How connect() ended.
  enum class Result {
    kOk,
    kRefused,      // the root does not know the id (ncclSystemError)
    kUnreachable,  // no root answered after the retries, or the deadline passed (ncclRemoteError)
  };
  // As NCCL's socket connect: attempts that find no root (refused, unreachable, timed out, closed
  // unanswered) are retried this many times, each after 100 ms more than the last (about a
  // minute in all), as NCCL_SOCKET_RETRY_CNT and NCCL_SOCKET_RETRY_SLEEP_MSEC default to.
  static constexpr int kConnectRetries = 34;
  // Connects and says hello as `rank` of `nranks`; on failure *error says why. A user id's root
  // that cannot be reached is retried as above; for a derived id (split, shrink) an unknown
  // secret or an absent root is retried until the deadline (the root may not have opened it yet).
  // A hello that disagrees with the session (another nranks, a rank said twice) gets no answer:
  // the call then waits until the deadline, or forever, as NCCL's does.
  Result connect(const IdInfo& id, int nranks, int rank, const Deadline& deadline,
                 std::string* error);
  ~StoreClient() override;

  // The local address of the connection to the root: the address peers can reach us at.
  const SockAddr& localAddress() const { return local_; }

  // gloo::rendezvous::Store. get() blocks until the key exists. They throw gloo::IoException on
  // failure (the caller, inside Gloo, is wrapped by hostnccl's API boundary).
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // Tells the server this rank finished its rendezvous, then disconnects.
  void done();

 private:
  bool request(char op, const std::string& key, const std::vector<char>* value,
               std::vector<char>* reply);
  int fd_ = -1;
  Deadline deadline_;
  SockAddr local_;
  std::map<std::string, std::vector<char>> cache_;
};

}  // namespace ncclrec::hostnccl
