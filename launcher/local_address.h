// Whether a host name or address names this machine: an agent started without --node-rank serves
// the job's store (and becomes node 0) only when --master-addr is one of its own addresses, since
// on another machine the same port is free too.
#pragma once

#include <string>

namespace ncclrec::launcher {

// True when `host` resolves to a loopback address or to an address of one of this machine's
// network interfaces. False when it does not resolve.
bool isLocalAddress(const std::string& host);

}  // namespace ncclrec::launcher
