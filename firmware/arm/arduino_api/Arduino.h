// The subset of the Arduino API that firmware/hilbench_asc/board_arduino.cpp uses, declared as
// the ArduinoCore-API (used by the Arduino Mbed OS Nano Boards core) declares it. CI compiles
// the sketch's board layer against this with the Cortex-M4F compiler, so a typo or a wrong
// signature there fails CI; it is not the real core and links nothing (firmware/README.md says
// how to build with the real one).
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef enum { LOW = 0, HIGH = 1, CHANGE = 2, FALLING = 3, RISING = 4 } PinStatus;
typedef enum { INPUT = 0x0, OUTPUT = 0x1, INPUT_PULLUP = 0x2, INPUT_PULLDOWN = 0x3 } PinMode;
#define LED_BUILTIN 13

void pinMode(uint8_t pin, PinMode mode);
void digitalWrite(uint8_t pin, PinStatus value);
unsigned long micros(void);

class HardwareSerialApi {
 public:
  void begin(unsigned long baud);
  int available();
  int read();
  size_t write(const uint8_t* buffer, size_t size);
  explicit operator bool();
};
extern HardwareSerialApi Serial;
