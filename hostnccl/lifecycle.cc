#include "hostnccl/lifecycle.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "hostnccl/async.h"
#include "hostnccl/collectives.h"
#include "hostnccl/config.h"
#include "hostnccl/device.h"
#include "hostnccl/errors.h"
#include "hostnccl/profiler.h"
#include "hostnccl/store.h"

namespace ncclrec::hostnccl {
namespace {

// NCCL never raises SIGPIPE (its sockets send with MSG_NOSIGNAL); Gloo's TCP transport writes
// with writev, which does when the peer's end is gone: a rank whose peer was killed would die of
// SIGPIPE instead of failing its call with a remote error, as it does on NCCL (faultgen seed 334,
// under load). So, once, SIGPIPE is ignored unless the program chose what it does (Python ignores
// it already; a handler or an ignore of the program's own is kept).
void ignoreSigpipeUnlessChosen() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    if (sigaction(SIGPIPE, nullptr, &old) == 0 && (old.sa_flags & SA_SIGINFO) == 0 &&
        old.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

// One Gloo TCP device (an epoll thread) per local address, shared by the communicators that
// reach their peers from it. Leaked at exit, like the rendezvous service.
std::shared_ptr<gloo::transport::Device> deviceFor(const SockAddr& local) {
  static std::mutex mu;
  using DeviceMap = std::map<std::string, std::shared_ptr<gloo::transport::Device>>;
  static auto* devices = new DeviceMap;
  gloo::transport::tcp::attr attr;
  std::string key;
  if (!config().socketIfname.empty()) {
    attr.iface = config().socketIfname;
    key = "if:" + attr.iface;
  } else {
    attr.hostname = local.host();
    key = "host:" + attr.hostname;
  }
  std::lock_guard<std::mutex> lock(mu);
  // Devices made before a fork have no event-loop thread in the child: start afresh, leaking
  // the inherited ones (destroying them would wait for threads that do not exist here).
  static pid_t owner = getpid();
  if (owner != getpid()) {
    devices = new DeviceMap;
    owner = getpid();
  }
  auto& dev = (*devices)[key];
  if (!dev) {
    ignoreSigpipeUnlessChosen();
    dev = gloo::transport::tcp::CreateDevice(attr);
  }
  return dev;
}

std::vector<char> addrBytes(const SockAddr& a) {
  std::vector<char> v(sizeof(a.storage) + sizeof(a.len));
  std::memcpy(v.data(), &a.storage, sizeof(a.storage));
  std::memcpy(v.data() + sizeof(a.storage), &a.len, sizeof(a.len));
  return v;
}

bool addrFromBytes(const std::vector<char>& v, SockAddr* a) {
  if (v.size() != sizeof(a->storage) + sizeof(a->len)) return false;
  std::memcpy(&a->storage, v.data(), sizeof(a->storage));
  std::memcpy(&a->len, v.data() + sizeof(a->storage), sizeof(a->len));
  return true;
}

// How long a rank refused at init keeps the rendezvous it serves for the others.
constexpr std::chrono::seconds kFailedInitLinger{5};

// Publishes this rank's placement and reads everyone's; a rank sharing its host and device with
// another fails as NCCL's init does (each colliding rank reports its own collision; the others go
// on and are left waiting for them, as with NCCL).
ncclResult_t checkDevices(StoreClient& store, StoreService& service, const Secret& secret,
                          int nranks, int rank, const Placement& mine) {
  store.set("dev/" + std::to_string(rank), encodePlacement(mine));
  std::vector<Placement> all(nranks);
  for (int r = 0; r < nranks; ++r) {
    if (!decodePlacement(store.get("dev/" + std::to_string(r)), &all[r])) {
      return fail(ncclInternalError, "hostnccl init: rank %d published a bad device", r);
    }
  }
  if (const int other = duplicateOf(all, rank); other >= 0) {
    // Everyone read everything it needs: say so, and keep a server hosted here alive until the
    // others did too (bounded: a rank that does not collide goes on and never says done).
    store.done();
    service.awaitSessionEnd(secret, std::chrono::steady_clock::now() + kFailedInitLinger);
    return fail(ncclInvalidUsage,
                "Duplicate GPU detected : rank %d and rank %d both on CUDA device %d (hostnccl: "
                "emulated device on host %s; set it from LOCAL_RANK or HOSTNCCL_DEVICE)",
                rank, other, mine.device, mine.host.c_str());
  }
  return ncclSuccess;
}

// `placement`: checked against the other ranks' (init); nullptr for split and shrink, whose ranks
// keep their parent's devices.
// `into`: a communicator already handed to the program (nonblocking init) to fill in, instead of
// a new one.
ncclResult_t joinComm(ncclComm_t* out, int nranks, const IdInfo& id, int rank, int cudaDev,
                      const Placement* placement = nullptr, ncclComm* into = nullptr) {
  std::string error;
  StoreService* service = StoreService::get(&error);
  if (service == nullptr) return fail(ncclSystemError, "hostnccl init: %s", error.c_str());
  StoreClient store;
  switch (store.connect(id, nranks, rank, deadlineAfter(config().timeout), &error)) {
    case StoreClient::Result::kOk:
      break;
    case StoreClient::Result::kRefused:
      return fail(ncclSystemError, "hostnccl init rank %d/%d: %s", rank, nranks, error.c_str());
    case StoreClient::Result::kUnreachable:
      return fail(ncclRemoteError, "hostnccl init rank %d/%d: %s", rank, nranks, error.c_str());
  }
  std::unique_ptr<ncclComm> owned;
  if (into == nullptr) owned = std::make_unique<ncclComm>();
  ncclComm* comm = into != nullptr ? into : owned.get();
  // A nonblocking init filled these in before its thread started (`into`), and the program (or
  // the recorder's shim) may read them meanwhile: written only where they differ, never racing.
  if (comm->rank != rank) comm->rank = rank;
  if (comm->nranks != nranks) comm->nranks = nranks;
  if (comm->cudaDev != cudaDev) comm->cudaDev = cudaDev;
  comm->secret = id.secret;
  comm->hash = fnv1a(id.secret.data(), id.secret.size());
  comm->sendSeq.assign(nranks, 0);
  comm->recvSeq.assign(nranks, 0);
  try {
    if (placement != nullptr) {
      if (ncclResult_t rc = checkDevices(store, *service, id.secret, nranks, rank, *placement);
          rc != ncclSuccess) {
        return rc;
      }
    }
    SockAddr mine = store.localAddress();
    mine.setPort(service->port());
    store.set("svc/" + std::to_string(rank), addrBytes(mine));
    auto device = deviceFor(store.localAddress());
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
    context->setTimeout(config().timeout);
    context->connectFullMesh(store, device);
    comm->serviceAddrs.resize(nranks);
    for (int r = 0; r < nranks; ++r) {
      if (!addrFromBytes(store.get("svc/" + std::to_string(r)), &comm->serviceAddrs[r])) {
        return fail(ncclInternalError, "hostnccl init: rank %d published a bad address", r);
      }
    }
    comm->context = std::move(context);
    store.done();
  } catch (const gloo::IoException& e) {
    return fail(ncclSystemError, "hostnccl init rank %d/%d: %s", rank, nranks, e.what());
  } catch (const std::exception& e) {
    return fail(ncclSystemError, "hostnccl init rank %d/%d: %s", rank, nranks, e.what());
  }
  prof::commInit(*comm);
  logInfo("comm %016llx rank %d/%d ready", static_cast<unsigned long long>(comm->hash), rank,
          nranks);
  if (owned) {
    registerComm(owned.get());
    *out = owned.release();
  } else {
    *out = into;
  }
  return ncclSuccess;
}

// The id of a split/shrink child: rooted at `rootParentRank`'s rendezvous service, with a secret
// every member derives alike. The root opens the session before joining.
IdInfo childId(Comm& parent, int rootParentRank, const std::vector<int32_t>& inputs) {
  IdInfo id;
  id.root = parent.serviceAddrs[rootParentRank];
  id.secret = deriveSecret(parent.secret, inputs.data(), inputs.size() * sizeof(int32_t));
  id.derived = true;
  return id;
}

}  // namespace

ncclResult_t getUniqueId(ncclUniqueId* out) {
  std::string error;
  StoreService* service = StoreService::get(&error);
  if (service == nullptr) return fail(ncclSystemError, "ncclGetUniqueId: %s", error.c_str());
  std::optional<SockAddr> addr = chooseListenAddress(&error);
  if (!addr) return fail(ncclSystemError, "ncclGetUniqueId: %s", error.c_str());
  IdInfo id;
  id.root = *addr;
  id.root.setPort(service->port());
  if (!randomSecret(&id.secret)) {
    return fail(ncclSystemError, "ncclGetUniqueId: getrandom failed");
  }
  service->openSession(id.secret);
  encodeId(id, out);
  logInfo("unique id: root %s", id.root.str().c_str());
  return ncclSuccess;
}

ncclResult_t initRank(ncclComm_t* out, int nranks, const ncclUniqueId& uid, int rank,
                      const Placement& placement) {
  IdInfo id;
  if (!decodeId(uid, &id)) {
    return fail(ncclInvalidArgument,
                "ncclCommInitRank: the unique id was not made by ncclGetUniqueId of hostnccl");
  }
  return joinComm(out, nranks, id, rank, placement.device, &placement);
}

ncclResult_t initRankNonblocking(ncclComm_t* out, int nranks, const ncclUniqueId& uid, int rank,
                                 const Placement& placement) {
  IdInfo id;
  if (!decodeId(uid, &id)) {
    return fail(
        ncclInvalidArgument,
        "ncclCommInitRankConfig: the unique id was not made by ncclGetUniqueId of hostnccl");
  }
  auto* comm = new (std::nothrow) ncclComm();
  if (comm == nullptr) return fail(ncclSystemError, "ncclCommInitRankConfig: out of memory");
  comm->blocking = false;
  comm->rank = rank;
  comm->nranks = nranks;
  comm->cudaDev = placement.device;
  comm->joined = false;
  registerComm(comm);
  const ncclResult_t rc = launchAsync(
      {comm},
      [comm, nranks, id, rank, placement] {
        ncclComm_t joined = nullptr;
        const ncclResult_t rc =
            joinComm(&joined, nranks, id, rank, placement.device, &placement, comm);
        comm->joined = true;
        return rc;
      },
      "ncclCommInitRankConfig");
  if (rc != ncclInProgress) {
    unregisterComm(comm);
    delete comm;
    return rc;
  }
  *out = comm;
  return rc;
}

ncclResult_t initAll(ncclComm_t* comms, int ndev, const int* devlist) {
  ncclUniqueId id;
  if (ncclResult_t rc = getUniqueId(&id); rc != ncclSuccess) return rc;
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<Placement> placements(ndev);
  for (int i = 0; i < ndev; ++i) {
    placements[i] = Placement{hostIdentity(), devlist ? devlist[i] : i, /*known=*/true};
  }
  std::vector<std::thread> threads;
  try {
    for (int i = 1; i < ndev; ++i) {
      threads.emplace_back(
          [&, i] { results[i] = initRank(&comms[i], ndev, id, i, placements[i]); });
    }
  } catch (const std::exception& e) {
    for (auto& t : threads) t.join();
    return fail(ncclSystemError, "ncclCommInitAll: cannot start threads: %s", e.what());
  }
  results[0] = initRank(&comms[0], ndev, id, 0, placements[0]);
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (results[i] != ncclSuccess) return results[i];
  }
  return ncclSuccess;
}

ncclResult_t split(Comm& parent, int color, int key, ncclComm_t* out) {
  *out = nullptr;
  const int n = parent.nranks;
  std::vector<int32_t> mine = {color, key};
  std::vector<int32_t> all(2 * static_cast<size_t>(n));
  OpArgs a{OpKind::kSplit, &parent, mine.data(), all.data(), 2, ncclInt32, ncclSum, -1};
  if (ncclResult_t rc = parent.enter("ncclCommSplit"); rc != ncclSuccess) return rc;
  ncclResult_t rc = runCollective(a);
  parent.leave();
  uint32_t counter = parent.splitCount++;
  if (rc != ncclSuccess) return rc;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  // New ranks: members of my color ordered by key, ties broken by parent rank (as NCCL).
  std::vector<std::pair<int32_t, int>> members;
  for (int r = 0; r < n; ++r) {
    if (all[2 * r] == color) members.emplace_back(all[2 * r + 1], r);
  }
  std::sort(members.begin(), members.end());
  int newRank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == parent.rank) newRank = static_cast<int>(i);
  }
  IdInfo id = childId(parent, members[0].second,
                      {0x53504c54 /* "SPLT" */, static_cast<int32_t>(counter), color});
  if (newRank == 0) {
    std::string error;
    StoreService* s = StoreService::get(&error);
    if (s == nullptr) return fail(ncclSystemError, "ncclCommSplit: %s", error.c_str());
    s->openSession(id.secret);
  }
  return joinComm(out, static_cast<int>(members.size()), id, newRank, parent.cudaDev);
}

ncclResult_t shrink(Comm& parent, const int* exclude, int excludeCount, ncclComm_t* out,
                    int flags) {
  *out = nullptr;
  std::vector<bool> excluded(parent.nranks, false);
  for (int i = 0; i < excludeCount; ++i) excluded[exclude[i]] = true;
  if (flags & NCCL_SHRINK_ABORT) parent.abortAll("ncclCommShrink(NCCL_SHRINK_ABORT)");
  std::vector<int32_t> inputs = {0x5348524b /* "SHRK" */,
                                 static_cast<int32_t>(parent.shrinkCount++)};
  int newRank = -1, newSize = 0, root = -1;
  for (int r = 0; r < parent.nranks; ++r) {
    if (excluded[r]) {
      inputs.push_back(r);
      continue;
    }
    if (root < 0) root = r;
    if (r == parent.rank) newRank = newSize;
    ++newSize;
  }
  IdInfo id = childId(parent, root, inputs);
  if (newRank == 0) {
    std::string error;
    StoreService* s = StoreService::get(&error);
    if (s == nullptr) return fail(ncclSystemError, "ncclCommShrink: %s", error.c_str());
    s->openSession(id.secret);
  }
  return joinComm(out, newSize, id, newRank, parent.cudaDev);
}

}  // namespace ncclrec::hostnccl
