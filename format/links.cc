#include "format/links.h"

#include <algorithm>
#include <tuple>

#include "format/bbox_links.h"

namespace ncclrec::format {
namespace {

Link linkOf(const LinkRecord& r) {
  Link l;
  l.comm_index = r.comm_index;
  l.peer = r.peer;
  l.channel = r.channel;
  l.is_send = r.is_send != 0;
  l.op_index = r.op_event_index;
  l.op_steps = r.op_steps;
  l.op_base = r.op_base;
  l.planned = r.planned;
  l.posted = r.posted;
  l.moved = r.moved;
  l.done = r.done;
  l.op_start_ns = r.op_start_ns;
  l.posted_ns = r.posted_ns;
  l.moved_ns = r.moved_ns;
  l.done_ns = r.done_ns;
  return l;
}

auto keyOf(const Link& l) { return std::make_tuple(l.comm_index, l.channel, l.peer, l.is_send); }

}  // namespace

void mergeLink(Link* into, const Link& more) {
  if (more.op_start_ns > into->op_start_ns) {
    into->op_index = more.op_index;
    into->op_steps = more.op_steps;
    into->op_start_ns = more.op_start_ns;
  }
  into->planned += more.planned;
  into->posted += more.posted;
  into->moved += more.moved;
  into->done += more.done;
  // Two records of one connection split its steps between them: the newest op's base is what
  // both planned before it, which the merged counters no longer tell apart. Counting its steps
  // from the merged totals keeps them within 0..op_steps.
  into->op_base = static_cast<uint32_t>(into->planned - into->op_steps);
  into->posted_ns = std::max(into->posted_ns, more.posted_ns);
  into->moved_ns = std::max(into->moved_ns, more.moved_ns);
  into->done_ns = std::max(into->done_ns, more.done_ns);
}

std::vector<Link> readLinks(const BboxHeader& h, const std::vector<Comm>& comms) {
  std::vector<Link> links;
  if (h.link_capacity == 0) return links;
  const LinkRecord* table = linkRecords(&h);
  for (uint32_t i = 0; i < h.link_capacity; ++i) {
    LinkRecord r{};
    if (readLink(table[i], &r)) links.push_back(linkOf(r));
  }
  std::sort(links.begin(), links.end(),
            [](const Link& a, const Link& b) { return keyOf(a) < keyOf(b); });
  std::vector<Link> merged;
  for (const Link& l : links) {
    if (!merged.empty() && keyOf(merged.back()) == keyOf(l)) {
      mergeLink(&merged.back(), l);
    } else {
      merged.push_back(l);
    }
  }
  for (Link& l : merged) {
    for (const Comm& c : comms) {
      if (c.index == l.comm_index) l.comm_id = c.comm_id;
    }
  }
  return merged;
}

}  // namespace ncclrec::format
