// Framing: CRC-32 (IEEE 802.3, as zlib.crc32), COBS with a 0x00 delimiter, a byte-wise reader.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "hb_protocol.h"

namespace hb {

uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t length);
inline uint32_t crc32(const uint8_t* data, size_t length) { return crc32_update(0, data, length); }

// COBS-encode `length` bytes into `out` (room for length + length/254 + 1); returns bytes written
// (no delimiter).
size_t cobs_encode(const uint8_t* in, size_t length, uint8_t* out);
// Decode in place-safe (out may equal in); returns decoded length, or -1 if the input is not COBS.
int cobs_decode(const uint8_t* in, size_t length, uint8_t* out);

struct Frame {
  uint8_t type;
  uint8_t seq;
  const uint8_t* payload;
  uint16_t length;
};

enum FeedResult { FEED_NONE, FEED_FRAME, FEED_ERROR };

// Collects bytes up to a 0x00 delimiter and checks COBS, length and CRC.
class FrameReader {
 public:
  // Feed one byte. FEED_FRAME: `frame` is valid until the next feed. FEED_ERROR: `error` holds
  // HB_E_BAD_FRAME or HB_E_BAD_CRC and the bytes up to the delimiter were dropped.
  FeedResult feed(uint8_t byte, Frame& frame, uint8_t& error);
  void reset() { fill_ = 0; overflow_ = false; }

 private:
  uint8_t buffer_[HB_MAX_ENCODED];
  size_t fill_ = 0;
  bool overflow_ = false;
};

// Encodes type|seq|payload|crc as one COBS frame with its delimiter into `out`
// (room for HB_MAX_ENCODED + 1); returns bytes to send.
size_t encode_frame(uint8_t type, uint8_t seq, const uint8_t* payload, size_t length,
                    uint8_t* out);

// Little-endian helpers.
inline void put_u16(uint8_t* p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
inline void put_u32(uint8_t* p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = v >> (8 * i); }
inline void put_u64(uint8_t* p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = v >> (8 * i); }
inline uint16_t get_u16(const uint8_t* p) { return (uint16_t)(p[0] | (p[1] << 8)); }
inline uint32_t get_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

}  // namespace hb
