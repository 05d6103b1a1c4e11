#include "live/rank_convert.h"

#include <algorithm>

namespace ncclrec::live {
namespace {

int64_t shifted(int64_t ns, int64_t shift) { return ns == 0 ? 0 : ns + shift; }

}  // namespace

OpView opViewOf(const format::EventFields& f, int64_t shift_ns) {
  OpView op;
  op.index = f.index;
  op.op = f.op;
  op.state = f.state;
  op.comm_id = f.comm_id;
  op.op_seq = f.op_seq;
  op.count = f.count;
  op.dtype = f.dtype;
  op.peer = f.peer;
  op.result = f.result;
  op.stack_id = f.stack_id;
  op.enqueue_ns = shifted(f.enqueue_ns, shift_ns);
  op.start_ns = shifted(f.start_ns, shift_ns);
  op.end_ns = shifted(f.end_ns, shift_ns);
  return op;
}

RankEntry entryFromRankData(const format::RankData& d, int64_t shift) {
  RankEntry e;
  e.source = d.source_path;
  e.host = d.host;
  e.pid = d.pid;
  e.global_rank = d.global_rank;
  e.world_size = d.world_size;
  e.local_rank = d.local_rank;
  e.run_id = d.run_id;
  e.exe = d.exe;
  e.start_ns = shifted(d.start_ns, shift);
  e.heartbeat_ns = shifted(d.heartbeat_ns, shift);
  e.exit_ns = shifted(d.exit_ns, shift);
  e.fatal_ns = shifted(d.fatal_ns, shift);
  e.fatal_signal = d.fatal_signal;
  e.hang_event_index = d.hang_event_index;
  e.last_dump_ns = shifted(d.dump_ns, shift);
  e.last_dump_reason = d.dump_reason;
  if (d.threads_ns != 0)
    e.threads = makeThreadsView(d.pid, shifted(d.threads_ns, shift), d.threads_reason, d.threads);
  e.liveness = d.exited              ? Liveness::kExited
               : d.fatal_signal != 0 ? Liveness::kCrashed
                                     : Liveness::kAlive;

  auto history = std::make_shared<RankHistory>();
  const size_t first = d.events.size() > kRecentOps ? d.events.size() - kRecentOps : 0;
  auto stacks = std::make_shared<StackMap>();
  for (size_t i = first; i < d.events.size(); ++i) {
    const format::EventRecord& r = d.events[i];
    const OpView op = opViewOf(r.fields(), shift);
    history->ops.push_back(op);
    if (auto it = d.stacks.find(r.stackId()); it != d.stacks.end()) stacks->emplace(*it);
  }
  for (const format::Comm& c : d.comms) {
    CommView v;
    v.comm_id = c.comm_id;
    v.rank = c.rank;
    v.nranks = c.nranks;
    v.coll_seq = c.coll_seq;
    v.state = c.state;
    v.ended_ns = shifted(c.ended_ns, shift);
    v.name = c.name;
    history->comms.push_back(std::move(v));
  }
  if (!d.links.empty()) {
    auto links = std::make_shared<std::vector<format::Link>>(d.links);
    for (format::Link& l : *links) {
      for (int64_t* ns : {&l.op_start_ns, &l.posted_ns, &l.moved_ns, &l.done_ns})
        *ns = shifted(*ns, shift);
    }
    e.links = std::move(links);
  }
  history->stacks = std::move(stacks);
  history->events_total = d.events_total;
  history->events_lost = d.events_lost;
  e.history = std::move(history);
  return e;
}

}  // namespace ncclrec::live
