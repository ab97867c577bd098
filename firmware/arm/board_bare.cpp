// Bare-metal board layer for the nRF52840, for the size build (firmware/CMakeLists.txt). It
// exercises the real core with the real compiler flags so CI can report flash and RAM use; a
// board is flashed with the Arduino sketch (hilbench_asc.ino), whose board layer uses the
// Arduino core's Serial (USB CDC), micros() and digitalWrite instead of these registers.
#include <stdint.h>

#include "../hilbench_asc/src/hb_app.h"
#include "../hilbench_asc/src/hb_board.h"

namespace {
inline volatile uint32_t& reg(uint32_t address) { return *(volatile uint32_t*)address; }
constexpr uint32_t kUart = 0x40002000;   // UART0
constexpr uint32_t kGpio = 0x50000000;   // P0
constexpr uint32_t kMarkerPin = 13;      // a free P0 pin as the state marker
constexpr uint32_t kDwtCtrl = 0xE0001000, kDwtCyccnt = 0xE0001004, kDemcr = 0xE000EDFC;
constexpr uint32_t kCpuMhz = 64;

void init() {
  reg(kDemcr) |= 1u << 24;  // enable the DWT cycle counter (the µs timer below)
  reg(kDwtCyccnt) = 0;
  reg(kDwtCtrl) |= 1;
  reg(kUart + 0x524) = 0x01D7E000;  // 115200 baud
  reg(kUart + 0x500) = 4;           // enable
  reg(kUart + 0x000) = 1;           // STARTRX
  reg(kUart + 0x008) = 1;           // STARTTX
  reg(kGpio + 0x518) = 1u << kMarkerPin;
}
}  // namespace

namespace board {
uint32_t micros() {
  // The cycle counter wraps every 67 s at 64 MHz; the core measures intervals far shorter.
  static uint32_t last = 0, high = 0;
  const uint32_t now = reg(kDwtCyccnt);
  if (now < last) high++;
  last = now;
  return (uint32_t)((((uint64_t)high << 32) | now) / kCpuMhz);
}
int read_byte() {
  if (!reg(kUart + 0x108)) return -1;  // EVENTS_RXDRDY
  reg(kUart + 0x108) = 0;
  return (int)(reg(kUart + 0x518) & 0xFF);
}
void write(const uint8_t* data, size_t length) {
  for (size_t i = 0; i < length; i++) {
    reg(kUart + 0x11C) = 0;
    reg(kUart + 0x51C) = data[i];
    while (!reg(kUart + 0x11C)) {}
  }
}
void marker(HbStage stage) {
  reg(kGpio + (stage == HB_STAGE_IDLE ? 0x50C : 0x508)) = 1u << kMarkerPin;
}
const char* name() { return "nrf52840-bare"; }
bool simulated() { return false; }
}  // namespace board

int main() {
  init();
  hb::app_begin();
  for (;;) hb::app_poll();
}
