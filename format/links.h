// A black box's link table (bbox_layout.h LinkRecord) as the model's Links.
#pragma once

#include <vector>

#include "format/bbox_layout.h"
#include "format/model.h"

namespace ncclrec::format {

// Every published record of the table, with its communicator's id from `comms` (the process's
// comm table, read before), records of one key added up (a connection claimed twice in a race),
// ascending by (comm_index, channel, peer, is_send). The table's geometry must have been
// checked (checkBlackBoxHeader).
std::vector<Link> readLinks(const BboxHeader& h, const std::vector<Comm>& comms);

// Adds the counters of `more` (the same connection's other record) into `into`; the newest proxy
// op is the one that started last.
void mergeLink(Link* into, const Link& more);

}  // namespace ncclrec::format
