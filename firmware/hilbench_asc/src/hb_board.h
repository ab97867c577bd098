// The thin board layer: everything the portable core needs from a board. One implementation
// per target: the Arduino sketch (board_arduino.cpp), the host build on a pseudo-terminal
// (firmware/host), the bare Cortex-M4F size build (firmware/arm).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "hb_protocol.h"

namespace board {
// Microseconds from the board's free-running timer; wraps at 2^32 (differences stay correct).
uint32_t micros();
// Next received byte, or -1 at once if none is waiting (never blocks).
int read_byte();
// Send bytes; returns when they are queued.
void write(const uint8_t* data, size_t length);
// The state marker (a GPIO pin for an instrument's trigger; a log line on the host).
void marker(HbStage stage);
// "arduino-nano-33-ble", "host-build", ...; and whether timings/power are simulated.
const char* name();
bool simulated();
}  // namespace board
