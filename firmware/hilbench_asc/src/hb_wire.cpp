#include "hb_wire.h"

#include <string.h>

namespace hb {

// A 16-entry table (64 bytes of flash) computes CRC-32 a nibble at a time: about 4x faster than
// bit by bit, 1 KB smaller than the byte table.
static const uint32_t kCrcNibble[16] = {
    0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC, 0x76DC4190, 0x6B6B51F4,
    0x4DB26158, 0x5005713C, 0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C,
    0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C};

uint32_t crc32_update(uint32_t crc, const uint8_t* data, size_t length) {
  crc = ~crc;
  for (size_t i = 0; i < length; i++) {
    crc ^= data[i];
    crc = (crc >> 4) ^ kCrcNibble[crc & 15];
    crc = (crc >> 4) ^ kCrcNibble[crc & 15];
  }
  return ~crc;
}

size_t cobs_encode(const uint8_t* in, size_t length, uint8_t* out) {
  size_t code_at = 0, write = 1;
  uint8_t code = 1;
  for (size_t i = 0; i < length; i++) {
    if (in[i] == 0) {
      out[code_at] = code;
      code_at = write++;
      code = 1;
    } else {
      out[write++] = in[i];
      if (++code == 0xFF) {
        out[code_at] = code;
        code_at = write++;
        code = 1;
      }
    }
  }
  out[code_at] = code;
  return write;
}

int cobs_decode(const uint8_t* in, size_t length, uint8_t* out) {
  size_t read = 0, write = 0;
  while (read < length) {
    uint8_t code = in[read++];
    if (code == 0 || read + code - 1 > length) return -1;
    for (uint8_t i = 1; i < code; i++) {
      if (in[read] == 0) return -1;
      out[write++] = in[read++];
    }
    if (code != 0xFF && read < length) out[write++] = 0;
  }
  return (int)write;
}

FeedResult FrameReader::feed(uint8_t byte, Frame& frame, uint8_t& error) {
  if (byte != 0) {
    if (fill_ < sizeof(buffer_)) {
      buffer_[fill_++] = byte;
    } else {
      overflow_ = true;  // keep dropping until the delimiter, then report once
    }
    return FEED_NONE;
  }
  size_t fill = fill_;
  bool overflow = overflow_;
  reset();
  if (fill == 0 && !overflow) return FEED_NONE;  // a lone delimiter resynchronises: not an error
  if (overflow) {
    error = HB_E_BAD_FRAME;
    return FEED_ERROR;
  }
  int n = cobs_decode(buffer_, fill, buffer_);
  if (n < 6) {
    error = HB_E_BAD_FRAME;
    return FEED_ERROR;
  }
  uint32_t expected = get_u32(buffer_ + n - 4);
  if (crc32(buffer_, n - 4) != expected) {
    error = HB_E_BAD_CRC;
    return FEED_ERROR;
  }
  frame.type = buffer_[0];
  frame.seq = buffer_[1];
  frame.payload = buffer_ + 2;
  frame.length = (uint16_t)(n - 6);
  return FEED_FRAME;
}

size_t encode_frame(uint8_t type, uint8_t seq, const uint8_t* payload, size_t length,
                    uint8_t* out) {
  static uint8_t raw[HB_MAX_FRAME];
  if (length > HB_MAX_PAYLOAD) length = HB_MAX_PAYLOAD;
  raw[0] = type;
  raw[1] = seq;
  if (length) memcpy(raw + 2, payload, length);
  put_u32(raw + 2 + length, crc32(raw, 2 + length));
  size_t n = cobs_encode(raw, 2 + length + 4, out);
  out[n++] = 0;
  return n;
}

}  // namespace hb
