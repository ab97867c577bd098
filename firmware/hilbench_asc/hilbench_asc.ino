// hilbench ASC firmware for the Arduino Nano 33 BLE (Arduino Mbed OS Nano Boards core).
// The portable core is in src/ (the same files the host build and CI compile); this sketch only
// starts it. The board layer is board_arduino.cpp. See ../README.md for flashing.
#include "src/hb_app.h"

void hb_board_setup();

void setup() {
  hb_board_setup();
  hb::app_begin();
}

void loop() { hb::app_poll(); }
