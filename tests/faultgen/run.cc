// runRank(): one rank of a generated program on the NCCL library it is linked against (hostnccl
// in the tests), under whatever the job preloads (libncclrec.so).
#include "tests/faultgen/run.h"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "samples/common/unique_id_file.h"
#include "tests/faultgen/sites.h"

namespace ncclrec::faultgen {
namespace {

constexpr size_t kBufferBytes = 1024 * 8 * 8;  // count <= 1024, <= 8 ranks, <= 8-byte types
constexpr int kMaxCalls = 4;

ncclDataType_t ncclDtype(Dtype d) {
  switch (d) {
    case Dtype::kFloat32:
      return ncclFloat32;
    case Dtype::kInt32:
      return ncclInt32;
    case Dtype::kFloat64:
      return ncclFloat64;
    case Dtype::kInt64:
      return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t ncclRedop(Redop r) {
  switch (r) {
    case Redop::kSum:
      return ncclSum;
    case Redop::kMax:
      return ncclMax;
    case Redop::kMin:
      return ncclMin;
    case Redop::kProd:
      return ncclProd;
  }
  return ncclSum;
}

// A host stall: the rank is alive and busy with something that never ends (a data loader that
// waits forever). noinline, so the stack snapshot names it.
__attribute__((noinline)) void waitForDataLoader() {
  for (;;) sleep(60);
}

class NcclSink : public Sink {
 public:
  NcclSink(const Program& p, int rank) : p_(p), rank_(rank), comms_(p.comms.size(), nullptr) {
    for (int i = 0; i < kMaxCalls; ++i) {
      send_.emplace_back(kBufferBytes, 1);
      recv_.emplace_back(kBufferBytes, 0);
    }
  }

  bool initWorld(const std::string& id_key) {
    id_key_ = id_key;
    ncclUniqueId id{};
    if (!shareId(rank_ == 0, id_key, &id)) return false;
    return check(ncclCommInitRank(&comms_[0], p_.world, id, rank_), "ncclCommInitRank");
  }

  void init(const Joining& j, int site) override {
    NcclBlock b;
    b.calls.push_back(creation(j));
    run(site, b);
  }

  void split(int comm, int site) override {
    const Comm& c = p_.comms[comm];
    NcclCall call;
    call.op = Op::kSplit;
    call.comm = comms_[c.parent];
    for (size_t g = 0; g < c.groups.size(); ++g) {
      for (int r : c.groups[g]) {
        if (r == rank_) call.color = static_cast<int>(g);
      }
    }
    call.key = rank_;
    call.made = &comms_[comm];
    run(site, NcclBlock{false, {call}, {}});
  }

  void block(const Block& b) override {
    NcclBlock nb;
    nb.grouped = b.grouped;
    for (const Joining& j : b.creates) nb.creates.push_back(creation(j));
    for (size_t i = 0; i < b.calls.size(); ++i) {
      const Call& c = b.calls[i];
      int in = 0;
      const int n = static_cast<int>(groupOf(p_, c.comm, rank_, &in).size());
      NcclCall x;
      x.op = c.op;
      x.comm = comms_[c.comm];
      for (const Joining& j : b.creates) {
        if (j.comm == c.comm) x.made_comm = &comms_[c.comm];
      }
      x.count = static_cast<size_t>(c.count);
      x.dtype = ncclDtype(c.dtype);
      x.redop = ncclRedop(c.redop);
      x.root = c.root;
      x.peer = ((in + c.peer) % n + n) % n;
      x.send = send_[i % kMaxCalls].data();
      x.recv = recv_[i % kMaxCalls].data();
      nb.calls.push_back(x);
    }
    run(b.site, nb);
  }

  void abortComm(int comm, int site) override {
    NcclCall call;
    call.op = Op::kAbort;
    call.comm = comms_[comm];
    comms_[comm] = nullptr;
    run(site, NcclBlock{false, {call}, {}});
  }

  // The ncclCommInitRank call that joins `j`: its group's id (or one of its own) shared through
  // the launcher's store under a key of the comm and group. Exits with 1 when it cannot be shared.
  NcclCall creation(const Joining& j) {
    int in = 0;
    const std::vector<int>& group = groupOf(p_, j.comm, rank_, &in);
    const std::string key = id_key_ + ":comm" + std::to_string(j.comm) + ":g" +
                            std::to_string(group.front()) +
                            (j.own_id ? ":own" + std::to_string(rank_) : "");
    NcclCall c;
    c.op = Op::kInit;
    c.made = &comms_[j.comm];
    c.rank = j.rank;
    c.nranks = j.nranks;
    if (!shareId(j.maker, key, &c.id)) std::exit(1);
    return c;
  }

  void exitNow() override { std::exit(0); }
  void crash() override { raise(SIGKILL); }
  void stall() override { waitForDataLoader(); }

  void finish() override {
    for (size_t k = comms_.size(); k-- > 0;) {
      if (comms_[k] != nullptr) check(ncclCommDestroy(comms_[k]), "ncclCommDestroy");
    }
    std::printf("rank %d: finished\n", rank_);
  }

 private:
  // A failed call ends the rank with exit code 1, as an unhandled error ends a training script.
  void run(int site, const NcclBlock& b) {
    if (!check(siteFn(site)(b), siteName(site))) std::exit(1);
  }

  bool shareId(bool maker, const std::string& key, ncclUniqueId* id) const {
    try {
      *id = samples::shareUniqueIdFrom(maker, rank_, key);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: cannot share the NCCL unique id: %s\n", rank_, e.what());
      return false;
    }
    return true;
  }

  bool check(ncclResult_t r, const char* what) const {
    if (r == ncclSuccess) return true;
    std::fprintf(stderr, "rank %d: %s failed: %s (%d)\n", rank_, what, ncclGetErrorString(r),
                 static_cast<int>(r));
    return false;
  }

  const Program& p_;
  int rank_;
  std::string id_key_;
  std::vector<ncclComm_t> comms_;
  std::vector<std::vector<char>> send_, recv_;
};

}  // namespace

int runRank(const Program& p, int rank, const std::string& id_key) {
  NcclSink sink(p, rank);
  if (!sink.initWorld(id_key)) return 1;
  walk(p, rank, sink);
  return 0;
}

}  // namespace ncclrec::faultgen
