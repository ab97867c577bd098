// The firmware's protocol state machine: one sample in memory, timed runs, power windows.
// Portable: everything board-specific goes through hb_board.h.
#pragma once

namespace hb {

// Reset the state (nothing loaded) and announce the boot with an HB_BOOT frame.
void app_begin();
// Handle every byte that has arrived; returns after at most one command's work.
void app_poll();

}  // namespace hb
