// Pieces of draw() (draw.h), one file per screen; formatting helpers they share. Internal to
// the tui library.
#pragma once

#include <cstdint>
#include <string>

#include "format/model.h"
#include "tui/frame.h"
#include "tui/live_names.h"
#include "tui/view_state.h"

namespace ncclrec::tui {

void drawSummary(Frame& frame, const Snapshot& s, const ViewState& v);
void drawGrid(Frame& frame, const Snapshot& s, const ViewState& v);
void drawRank(Frame& frame, const Snapshot& s, const ViewState& v);

// "1.5s", "42s", "3m07s", "2h05m".
std::string formatAge(double seconds);
// The first 8 hex digits of a communicator id, as the analyzer prints it.
std::string shortCommId(uint64_t comm_id);
// "AllReduce" for ncclAllReduce.
std::string shortOpName(format::OpType op);
// "done", "started", "enqueued", "failed".
std::string shortStateName(format::EventState state);
Style stateStyle(format::EventState state);
// "rank 3", or "host/pid" for a process that never learnt its rank.
std::string rankLabel(const RankEntry& rank);
// `text` cut or padded with blanks to exactly `width` columns (left aligned).
std::string fit(const std::string& text, int width);
// Right aligned in `width` columns (cut on the left when longer).
std::string fitRight(const std::string& text, int width);
// "3/4 joined, missing comm rank 3" for a communicator being created (CommGroup::creating).
std::string creationText(const CommGroup& g);
// A frame as "trainStep() main.cc:33" or "save_checkpoint() train.py:31" (its own or borrowed
// names), else "train+0x1a2b", else the address. *named tells which.
std::string frameText(const format::Frame& frame, const SymbolTable& symbols, bool* named);

}  // namespace ncclrec::tui
