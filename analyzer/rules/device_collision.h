// Ranks of one host on one device: the LOCAL_RANK bug (every rank uses cuda:0), which NCCL
// refuses at init with ncclInvalidUsage ("Duplicate GPU detected"). Used by diagnose().
#pragma once

#include <optional>

#include "analyzer/callsite.h"
#include "analyzer/verdict.h"
#include "format/reader.h"

namespace ncclrec::analyzer {

// Ranks whose init of one communicator was refused as invalid usage, and which were, on one host,
// on one device: the same PCI bus id when the recorder read it from the CUDA driver (an ordinal
// alone proves nothing across CUDA_VISIBLE_DEVICES), else the same device number (hostnccl's
// emulated devices, or a recorder without the driver; the refusal corroborates it).
std::optional<Verdict> findDeviceCollision(const format::LoadedSet& set, const CallSites& sites);

}  // namespace ncclrec::analyzer
