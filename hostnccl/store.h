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
  // Connects and authenticates; on failure returns false with *error. For a derived id an
  // unknown secret is retried until the deadline (the root may not have opened it yet).
  bool connect(const IdInfo& id, int nranks, const Deadline& deadline, std::string* error);
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
