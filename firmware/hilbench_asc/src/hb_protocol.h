// The serial protocol between host and firmware: message types, error codes, limits.
// protocols/serial.md is the specification; this header and drivers/arduino/protocol.py must
// agree with it (tests/drivers/arduino checks the Python side against the vectors).
#pragma once
#include <stdint.h>

#define HB_PROTOCOL_VERSION 1
#define HB_FIRMWARE_VERSION "1.0.0"

// A frame before COBS: type (1) | seq (1) | payload (0..HB_MAX_PAYLOAD) | CRC-32 LE (4).
#define HB_MAX_PAYLOAD 1100
#define HB_CHUNK_MAX_BYTES 1024  // sample bytes per LOAD_CHUNK
#define HB_MAX_FRAME (2 + HB_MAX_PAYLOAD + 4)
#define HB_MAX_ENCODED (HB_MAX_FRAME + HB_MAX_FRAME / 254 + 2)

enum HbType : uint8_t {
  // host -> board
  HB_IDENTIFY = 0x01,
  HB_LOAD_BEGIN = 0x02,   // index u16, kind u8, total_bytes u32, crc32 u32
  HB_LOAD_CHUNK = 0x03,   // offset u32, bytes[]
  HB_LOAD_END = 0x04,     // index u16
  HB_UNLOAD = 0x05,       // index u16
  HB_RUN = 0x06,          // index u16
  HB_REPEAT = 0x07,       // index u16, stage u8, duration_ms u32
  HB_STOP = 0x08,         // (no payload) ends a REPEAT early
  HB_READ_RESULT = 0x09,  // (no payload) the last RUN result again
  // board -> host
  HB_IDENT = 0x81,        // UTF-8 text "key=value key=value ..."
  HB_LOAD_READY = 0x82,   // index u16, kind u8, total_bytes u32
  HB_CHUNK_OK = 0x83,     // received u32
  HB_LOADED = 0x84,       // index u16, kind u8, bytes u32, crc32 u32
  HB_UNLOADED = 0x85,     // index u16
  HB_RESULT = 0x86,       // index u16, predicted u8, classes u8, kind u8, pre_us u32, inf_us u32,
                          // logits i32[classes]
  HB_REPEAT_DONE = 0x87,  // stage u8, stopped u8, iterations u32, elapsed_us u32, sum_us u64,
                          // sumsq_us2 u64, min_us u32, max_us u32
  HB_BOOT = 0xB0,         // unsolicited after reset, seq 0; payload as HB_IDENT
  HB_ERROR = 0xEE,        // code u8, UTF-8 message
};

enum HbError : uint8_t {
  HB_E_BAD_FRAME = 1,         // COBS or length invalid (garbage, overrun, truncated frame)
  HB_E_BAD_CRC = 2,           // frame checksum wrong
  HB_E_UNKNOWN_COMMAND = 3,
  HB_E_BAD_ARGUMENTS = 4,
  HB_E_NOT_LOADED = 5,        // no complete sample with that index
  HB_E_DEVICE_FULL = 6,       // another sample is held: UNLOAD it first (capacity 1)
  HB_E_SAMPLE_CHECKSUM = 7,   // whole-sample CRC-32 differs at LOAD_END
  HB_E_SAMPLE_INCOMPLETE = 8, // LOAD_END before every byte arrived, or a chunk out of order
  HB_E_BUSY = 9,              // a command other than STOP during REPEAT
};

enum HbKind : uint8_t { HB_KIND_AUDIO_PCM16 = 0, HB_KIND_FEATURES_INT8 = 1 };
enum HbStage : uint8_t { HB_STAGE_IDLE = 0, HB_STAGE_PREPROCESSING = 1, HB_STAGE_INFERENCE = 2 };
