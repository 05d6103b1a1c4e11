#include "hostnccl/collectives.h"

#include <algorithm>
#include <cstring>

#include "hostnccl/errors.h"
#include "hostnccl/reduce_ops.h"
#include "hostnccl/transfer.h"
#include "hostnccl/unique_id.h"

namespace ncclrec::hostnccl {
namespace {

// How an ncclRedOp_t is carried out: optionally scale each input first (premulsum, and avg on
// floating types, as NCCL does), reduce, optionally divide the result (avg on integer types).
struct Reduction {
  ReduceKind kind = ReduceKind::kSum;
  bool preScale = false;
  alignas(8) unsigned char scalar[8] = {};
  bool postDivide = false;
};

Reduction resolve(const Comm& c, ncclRedOp_t op, ncclDataType_t dtype) {
  Reduction r;
  switch (op) {
    case ncclSum:
      break;
    case ncclProd:
      r.kind = ReduceKind::kProd;
      break;
    case ncclMax:
      r.kind = ReduceKind::kMax;
      break;
    case ncclMin:
      r.kind = ReduceKind::kMin;
      break;
    case ncclAvg:
      if (isFloatingType(dtype)) {
        r.preScale = true;
        reciprocalScalar(c.nranks, dtype, r.scalar);
      } else {
        r.postDivide = true;
      }
      break;
    default: {
      // Validated by the API layer: a live premulsum op of this datatype.
      const PreMulSumOp& p = c.preMulSumOps[static_cast<size_t>(op) - ncclNumOps];
      r.preScale = true;
      std::memcpy(r.scalar, p.residence == ncclScalarDevice ? p.pointer : p.value,
                  dtypeSize(dtype));
    }
  }
  return r;
}

// Element range [begin(i), begin(i+1)) of ring chunk i when `count` elements are split n ways.
struct Chunks {
  size_t count;
  int n;
  size_t begin(int i) const {
    size_t base = count / n, rem = count % n;
    return base * i + std::min<size_t>(i, rem);
  }
  size_t size(int i) const { return begin(i + 1) - begin(i); }
};

// Largest message of the ring algorithms: big enough to amortize a message's overhead, small
// enough that reducing one segment overlaps with receiving the next.
constexpr size_t kSegmentBytes = 512 << 10;

int mod(int a, int n) { return ((a % n) + n) % n; }

unsigned char* scratch(Comm& c, size_t bytes) {
  if (c.scratch.size() < bytes) c.scratch.resize(bytes);
  return c.scratch.data();
}

class Runner {
 public:
  Runner(const OpArgs& a)
      : a_(a),
        c_(*a.comm),
        es_(dtypeSize(a.dtype)),
        seq_(c_.collSeq++),
        sig_(opSignature(a.kind, a.count, a.dtype, a.op, a.root)) {}

  ncclResult_t run() {
    switch (a_.kind) {
      case OpKind::kAllReduce:
        return allReduce();
      case OpKind::kReduce:
        return reduce();
      case OpKind::kReduceScatter:
        return reduceScatter();
      case OpKind::kAllGather:
      case OpKind::kSplit:
        return allGather();
      case OpKind::kBroadcast:
        return broadcast();
      case OpKind::kAlltoAll:
        return alltoAll();
      case OpKind::kGather:
        return gather();
      case OpKind::kScatter:
        return scatter();
      default:
        return fail(ncclInternalError, "hostnccl: %s is not a collective", opKindName(a_.kind));
    }
  }

 private:
  uint64_t slot(uint8_t step) const { return makeSlot(false, sig_, seq_, step); }
  unsigned char* at(void* base, size_t elems) const {
    return static_cast<unsigned char*>(base) + elems * es_;
  }

  // Copies (or premultiplies) this rank's input into the working buffer.
  void prepare(void* work, const void* in, size_t count, const Reduction& r) const {
    if (r.preScale) {
      scaleCopy(work, in, count, a_.dtype, r.scalar);
    } else if (work != in) {
      std::memmove(work, in, count * es_);
    }
  }

  // The ring over `work`, split into n chunks. Reduce-scatter (when `r` is set): afterwards
  // chunk `rank` holds the full reduction, finished by finishChunk. All-gather (when `gather`):
  // every rank then holds every chunk, starting from each rank owning chunk `rank`.
  //
  // Latency and pipelining: every receive of the operation is posted up front, so each send
  // finds its receiver ready and costs one message instead of a three-way handshake; chunks are
  // cut into segments so one segment travels while the previous one is being reduced.
  ncclResult_t ring(void* work, const Chunks& ch, const Reduction* r, bool gather) {
    const int n = c_.nranks, rank = c_.rank;
    if (n == 1) {
      if (r != nullptr) finishChunk(work, ch, *r);
      return ncclSuccess;
    }
    const int right = mod(rank + 1, n), left = mod(rank - 1, n);
    const size_t maxChunk = ch.size(0);
    const int k = static_cast<int>(
        std::clamp<size_t>((maxChunk * es_ + kSegmentBytes - 1) / kSegmentBytes, 1, 64));
    auto segs = [&](int chunk) { return Chunks{ch.size(chunk), k}; };
    auto segPtr = [&](void* base, int chunk, int q) {
      return at(base, ch.begin(chunk) + segs(chunk).begin(q));
    };
    auto segBytes = [&](int chunk, int q) { return segs(chunk).size(q) * es_; };
    // Slots: bit 7 tells the phase; the rest counts (step, segment) and may wrap, which is safe
    // because both ends post in the same order and Gloo pairs a slot's messages in FIFO order.
    auto rsSlot = [&](int s, int q) { return slot(static_cast<uint8_t>((s * k + q) & 0x7f)); };
    auto agSlot = [&](int s, int q) {
      return slot(static_cast<uint8_t>(0x80 | ((s * k + q) & 0x7f)));
    };
    Transfer t(c_, opKindName(a_.kind), seq_);
    const int steps = n - 1;
    planRing(t, ch, k, r != nullptr, gather);
    std::vector<size_t> rsRecv, agRecv;
    unsigned char* tmp = nullptr;
    if (r != nullptr) {
      tmp = scratch(c_, static_cast<size_t>(steps) * maxChunk * es_);
      for (int s = 0; s < steps; ++s) {
        int chunk = mod(rank - 2 - s, n);
        unsigned char* area = tmp + static_cast<size_t>(s) * maxChunk * es_;
        for (int q = 0; q < k; ++q) {
          rsRecv.push_back(
              t.recv(left, area + segs(chunk).begin(q) * es_, segBytes(chunk, q), rsSlot(s, q)));
        }
      }
    }
    if (gather) {
      for (int s = 0; s < steps; ++s) {
        int chunk = mod(rank - s - 1, n);
        for (int q = 0; q < k; ++q) {
          agRecv.push_back(t.recv(left, segPtr(work, chunk, q), segBytes(chunk, q), agSlot(s, q)));
        }
      }
    }
    if (r != nullptr) {
      int first = mod(rank - 1, n);
      for (int q = 0; q < k; ++q) {
        t.send(right, segPtr(work, first, q), segBytes(first, q), rsSlot(0, q));
      }
      for (int s = 0; s < steps; ++s) {
        int chunk = mod(rank - 2 - s, n);
        unsigned char* area = tmp + static_cast<size_t>(s) * maxChunk * es_;
        for (int q = 0; q < k; ++q) {
          if (ncclResult_t rc = t.wait(rsRecv[s * k + q]); rc != ncclSuccess) return rc;
          reduceInto(segPtr(work, chunk, q), area + segs(chunk).begin(q) * es_, segs(chunk).size(q),
                     a_.dtype, r->kind);
          // The chunk reduced at step s is the one sent at step s + 1.
          if (s + 1 < steps) {
            t.send(right, segPtr(work, chunk, q), segBytes(chunk, q), rsSlot(s + 1, q));
          }
        }
      }
      finishChunk(work, ch, *r);
    }
    if (gather) {
      for (int q = 0; q < k; ++q) {
        t.send(right, segPtr(work, rank, q), segBytes(rank, q), agSlot(0, q));
      }
      for (int s = 0; s < steps; ++s) {
        int chunk = mod(rank - s - 1, n);
        for (int q = 0; q < k; ++q) {
          if (ncclResult_t rc = t.wait(agRecv[s * k + q]); rc != ncclSuccess) return rc;
          if (s + 1 < steps) {
            t.send(right, segPtr(work, chunk, q), segBytes(chunk, q), agSlot(s + 1, q));
          }
        }
      }
    }
    return t.wait();
  }

  // Tells `t` how many messages (the non-empty segments) the ring will send right and receive
  // from the left: the nSteps of its profiler events.
  void planRing(Transfer& t, const Chunks& ch, int k, bool reduce, bool gather) const {
    const int n = c_.nranks, rank = c_.rank, steps = n - 1;
    auto nonEmpty = [&](int chunk) {
      const Chunks segs{ch.size(chunk), k};
      int count = 0;
      for (int q = 0; q < k; ++q) count += segs.size(q) * es_ > 0 ? 1 : 0;
      return count;
    };
    int sends = 0, recvs = 0;
    if (reduce) {
      sends += nonEmpty(mod(rank - 1, n));
      for (int s = 0; s < steps; ++s) {
        recvs += nonEmpty(mod(rank - 2 - s, n));
        if (s + 1 < steps) sends += nonEmpty(mod(rank - 2 - s, n));
      }
    }
    if (gather) {
      sends += nonEmpty(rank);
      for (int s = 0; s < steps; ++s) {
        recvs += nonEmpty(mod(rank - s - 1, n));
        if (s + 1 < steps) sends += nonEmpty(mod(rank - s - 1, n));
      }
    }
    t.plan(mod(rank - 1, n), false, recvs);
    t.plan(mod(rank + 1, n), true, sends);
  }

  void finishChunk(void* work, const Chunks& ch, const Reduction& r) const {
    if (r.postDivide) {
      divideInPlace(at(work, ch.begin(c_.rank)), ch.size(c_.rank), a_.dtype, c_.nranks);
    }
  }

  ncclResult_t allReduce() {
    Reduction r = resolve(c_, a_.op, a_.dtype);
    prepare(a_.recvbuff, a_.sendbuff, a_.count, r);
    return ring(a_.recvbuff, Chunks{a_.count, c_.nranks}, &r, true);
  }

  ncclResult_t reduce() {
    Reduction r = resolve(c_, a_.op, a_.dtype);
    const bool isRoot = c_.rank == a_.root;
    // The root reduces in place in its output; the others in scratch they send from.
    std::vector<unsigned char> own;
    void* work = a_.recvbuff;
    if (!isRoot) {
      own.resize(a_.count * es_);
      work = own.data();
    }
    prepare(work, a_.sendbuff, a_.count, r);
    Chunks ch{a_.count, c_.nranks};
    if (ncclResult_t rc = ring(work, ch, &r, false); rc != ncclSuccess) return rc;
    Transfer t(c_, opKindName(a_.kind), seq_);
    if (isRoot) {
      for (int i = 0; i < c_.nranks; ++i) {
        if (i != c_.rank) t.recv(i, at(work, ch.begin(i)), ch.size(i) * es_, slot(200));
      }
    } else {
      t.send(a_.root, at(work, ch.begin(c_.rank)), ch.size(c_.rank) * es_, slot(200));
    }
    return t.wait();
  }

  ncclResult_t reduceScatter() {
    Reduction r = resolve(c_, a_.op, a_.dtype);
    const size_t total = a_.count * c_.nranks;
    std::vector<unsigned char> work(total * es_);
    prepare(work.data(), a_.sendbuff, total, r);
    Chunks ch{total, c_.nranks};
    if (ncclResult_t rc = ring(work.data(), ch, &r, false); rc != ncclSuccess) return rc;
    std::memmove(a_.recvbuff, at(work.data(), ch.begin(c_.rank)), a_.count * es_);
    return ncclSuccess;
  }

  ncclResult_t allGather() {
    void* mine = at(a_.recvbuff, a_.count * c_.rank);
    if (mine != a_.sendbuff) std::memmove(mine, a_.sendbuff, a_.count * es_);
    return ring(a_.recvbuff, Chunks{a_.count * c_.nranks, c_.nranks}, nullptr, true);
  }

  ncclResult_t broadcast() {
    Transfer t(c_, opKindName(a_.kind), seq_);
    const size_t bytes = a_.count * es_;
    if (c_.rank == a_.root) {
      if (a_.recvbuff != a_.sendbuff) std::memmove(a_.recvbuff, a_.sendbuff, bytes);
      for (int i = 0; i < c_.nranks; ++i) {
        if (i != c_.rank) t.send(i, a_.recvbuff, bytes, slot(0));
      }
    } else {
      t.recv(a_.root, a_.recvbuff, bytes, slot(0));
    }
    return t.wait();
  }

  ncclResult_t alltoAll() {
    const size_t bytes = a_.count * es_;
    const void* in = a_.sendbuff;
    std::vector<unsigned char> copy;
    if (in == a_.recvbuff) {
      copy.assign(static_cast<const unsigned char*>(in),
                  static_cast<const unsigned char*>(in) + bytes * c_.nranks);
      in = copy.data();
    }
    Transfer t(c_, opKindName(a_.kind), seq_);
    for (int i = 0; i < c_.nranks; ++i) {
      if (i == c_.rank) continue;
      t.recv(i, at(a_.recvbuff, a_.count * i), bytes, slot(0));
      t.send(i, static_cast<const unsigned char*>(in) + bytes * i, bytes, slot(0));
    }
    std::memmove(at(a_.recvbuff, a_.count * c_.rank),
                 static_cast<const unsigned char*>(in) + bytes * c_.rank, bytes);
    return t.wait();
  }

  ncclResult_t gather() {
    const size_t bytes = a_.count * es_;
    Transfer t(c_, opKindName(a_.kind), seq_);
    if (c_.rank == a_.root) {
      for (int i = 0; i < c_.nranks; ++i) {
        if (i != c_.rank) t.recv(i, at(a_.recvbuff, a_.count * i), bytes, slot(0));
      }
      void* mine = at(a_.recvbuff, a_.count * c_.rank);
      if (mine != a_.sendbuff) std::memmove(mine, a_.sendbuff, bytes);
    } else {
      t.send(a_.root, a_.sendbuff, bytes, slot(0));
    }
    return t.wait();
  }

  ncclResult_t scatter() {
    const size_t bytes = a_.count * es_;
    Transfer t(c_, opKindName(a_.kind), seq_);
    if (c_.rank == a_.root) {
      for (int i = 0; i < c_.nranks; ++i) {
        if (i != c_.rank)
          t.send(i, static_cast<const unsigned char*>(a_.sendbuff) + bytes * i, bytes, slot(0));
      }
      const void* mine = static_cast<const unsigned char*>(a_.sendbuff) + bytes * c_.rank;
      if (mine != a_.recvbuff) std::memmove(a_.recvbuff, mine, bytes);
    } else {
      t.recv(a_.root, a_.recvbuff, bytes, slot(0));
    }
    return t.wait();
  }

  const OpArgs& a_;
  Comm& c_;
  const size_t es_;
  const uint32_t seq_;
  const uint32_t sig_;
};

}  // namespace

const char* opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
      return "AllReduce";
    case OpKind::kBroadcast:
      return "Broadcast";
    case OpKind::kReduce:
      return "Reduce";
    case OpKind::kAllGather:
      return "AllGather";
    case OpKind::kReduceScatter:
      return "ReduceScatter";
    case OpKind::kAlltoAll:
      return "AlltoAll";
    case OpKind::kGather:
      return "Gather";
    case OpKind::kScatter:
      return "Scatter";
    case OpKind::kSend:
      return "Send";
    case OpKind::kRecv:
      return "Recv";
    case OpKind::kSplit:
      return "CommSplit";
  }
  return "?";
}

uint32_t opSignature(OpKind kind, size_t count, ncclDataType_t dtype, int op, int root) {
  struct {
    uint64_t count;
    int32_t kind, dtype, op, root;
  } in{count, static_cast<int32_t>(kind), static_cast<int32_t>(dtype), op, root};
  uint64_t h = fnv1a(&in, sizeof(in));
  return static_cast<uint32_t>((h ^ (h >> 23) ^ (h >> 46)) & 0x7fffff);
}

ncclResult_t runCollective(const OpArgs& a) {
  Runner r(a);  // consumes the sequence number even when there is nothing to move
  if (a.count == 0) return ncclSuccess;
  return r.run();
}

void postP2p(const OpArgs& a, Transfer& t) {
  Comm& c = *a.comm;
  const size_t bytes = a.count * dtypeSize(a.dtype);
  // Sends and receives pair per (source, destination) in issue order, as in NCCL; the
  // signature makes a count or datatype mismatch hang instead of truncating.
  uint32_t sig = opSignature(OpKind::kSend, a.count, a.dtype, 0, 0);
  if (a.kind == OpKind::kSend) {
    t.send(a.root, a.sendbuff, bytes, makeSlot(true, sig, c.sendSeq[a.root]++, 0));
  } else {
    t.recv(a.root, a.recvbuff, bytes, makeSlot(true, sig, c.recvSeq[a.root]++, 0));
  }
}

}  // namespace ncclrec::hostnccl
