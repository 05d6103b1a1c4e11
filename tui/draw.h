// draw(): the pure function from (snapshot, view, size) to a frame. No terminal, no clock, no
// I/O: the main thread paints what it returns, --once prints it, and the golden tests compare
// it with tests/data/top/*.txt.
#pragma once

#include "tui/frame.h"
#include "tui/live_names.h"
#include "tui/view_state.h"

namespace ncclrec::tui {

// `snapshot` must have been analyzed (analysis.h). Any size is accepted: below kMinWidth x
// kMinHeight (layout.h) the frame says how much room it needs.
Frame draw(const Snapshot& snapshot, const ViewState& view, int width, int height);

}  // namespace ncclrec::tui
