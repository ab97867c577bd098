// Board layer for the Nano 33 BLE: USB CDC serial, the µs timer, the marker pin.
#include <Arduino.h>

#include "src/hb_board.h"

// D2 is free on the Nano 33 BLE header: wire it to the DMM's external trigger input. The
// built-in LED mirrors it so a person sees the state too.
static const int kMarkerPin = 2;
static const unsigned long kBaud = 115200;  // ignored by USB CDC; kept for UART bridges

void hb_board_setup() {
  pinMode(kMarkerPin, OUTPUT);
  pinMode(LED_BUILTIN, OUTPUT);
  Serial.begin(kBaud);
  while (!Serial) {}  // wait for the host to open the port, so the boot banner is seen
}

namespace board {
uint32_t micros() { return ::micros(); }
int read_byte() { return Serial.available() > 0 ? Serial.read() : -1; }
void write(const uint8_t* data, size_t length) { Serial.write(data, length); }
void marker(HbStage stage) {
  const PinStatus level = stage == HB_STAGE_IDLE ? LOW : HIGH;
  digitalWrite(kMarkerPin, level);
  digitalWrite(LED_BUILTIN, level);
}
const char* name() { return "arduino-nano-33-ble"; }
bool simulated() { return false; }
}  // namespace board
