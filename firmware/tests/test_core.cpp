// Unit tests of the portable firmware core (host build): framing, checksums, and the int8 CNN
// bit-exact against every vector in protocols/vectors/asc_int8/. A failure prints what differs
// and the program exits 1; the last line is "N passed, M failed".
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../hilbench_asc/src/hb_cnn.h"
#include "../hilbench_asc/src/hb_wire.h"
#include "asc_vectors.h"

static int g_passed = 0, g_failed = 0;

#define CHECK(cond, ...)                          \
  do {                                            \
    if (cond) {                                   \
      g_passed++;                                 \
    } else {                                      \
      g_failed++;                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
    }                                             \
  } while (0)

static void test_crc32_matches_zlib() {
  const char* text = "123456789";
  CHECK(hb::crc32((const uint8_t*)text, 9) == 0xCBF43926u, "CRC-32 check value");
  CHECK(hb::crc32(nullptr, 0) == 0u, "CRC-32 of nothing");
  uint32_t split = hb::crc32_update(hb::crc32((const uint8_t*)text, 4), (const uint8_t*)text + 4, 5);
  CHECK(split == 0xCBF43926u, "CRC-32 continues across calls");
}

static void test_cobs_round_trip() {
  static uint8_t in[1200], enc[1300], dec[1300];
  const size_t lengths[] = {0, 1, 2, 253, 254, 255, 256, 508, 1100};
  for (int pattern = 0; pattern < 3; pattern++) {
    for (size_t length : lengths) {
      for (size_t i = 0; i < length; i++) {
        in[i] = pattern == 0 ? 0 : pattern == 1 ? (uint8_t)(i % 255 + 1) : (uint8_t)(rand() % 4);
      }
      size_t n = hb::cobs_encode(in, length, enc);
      bool no_zero = memchr(enc, 0, n) == nullptr;
      int m = hb::cobs_decode(enc, n, dec);
      CHECK(no_zero && m == (int)length && memcmp(in, dec, length) == 0,
            "COBS round trip, pattern %d, length %zu", pattern, length);
    }
  }
  const uint8_t bad[] = {5, 1, 2};  // claims 4 data bytes, has 2
  CHECK(hb::cobs_decode(bad, sizeof bad, dec) == -1, "truncated COBS block is refused");
}

static void test_frame_reader() {
  static uint8_t out[HB_MAX_ENCODED + 1];
  const uint8_t payload[] = {1, 0, 2, 0, 0, 3};
  size_t n = hb::encode_frame(0x42, 7, payload, sizeof payload, out);
  hb::FrameReader reader;
  hb::Frame frame;
  uint8_t error = 0;
  hb::FeedResult r = hb::FEED_NONE;
  for (size_t i = 0; i < n; i++) r = reader.feed(out[i], frame, error);
  CHECK(r == hb::FEED_FRAME && frame.type == 0x42 && frame.seq == 7 &&
            frame.length == sizeof payload && memcmp(frame.payload, payload, sizeof payload) == 0,
        "a frame survives encode and decode");

  out[3] ^= 0x10;  // one flipped bit inside the frame
  for (size_t i = 0; i < n; i++) r = reader.feed(out[i], frame, error);
  CHECK(r == hb::FEED_ERROR && (error == HB_E_BAD_CRC || error == HB_E_BAD_FRAME),
        "a corrupted frame is reported, not delivered");

  r = reader.feed(0, frame, error);
  CHECK(r == hb::FEED_NONE, "a lone delimiter is not an error");

  for (int i = 0; i < HB_MAX_ENCODED + 50; i++) reader.feed(0x55, frame, error);
  r = reader.feed(0, frame, error);
  CHECK(r == hb::FEED_ERROR && error == HB_E_BAD_FRAME, "an over-long frame is reported");
  n = hb::encode_frame(0x01, 9, nullptr, 0, out);
  for (size_t i = 0; i < n; i++) r = reader.feed(out[i], frame, error);
  CHECK(r == hb::FEED_FRAME && frame.type == 0x01 && frame.seq == 9,
        "the reader recovers after an over-long frame");
}

static int first_difference(const int8_t* a, const int8_t* b, int n) {
  for (int i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return -1;
}

static void test_cnn_is_bit_exact() {
  static hb::CnnOutputs out;
  for (int v = 0; v < kNumVectors; v++) {
    const Vector& vec = kVectors[v];
    int predicted = hb::infer(vec.input, out);
    int d0 = first_difference(out.conv0, vec.conv0, sizeof out.conv0);
    int d1 = first_difference(out.conv1, vec.conv1, sizeof out.conv1);
    CHECK(d0 < 0, "vector %s: conv0 differs first at %d", vec.name, d0);
    CHECK(d1 < 0, "vector %s: conv1 differs first at %d", vec.name, d1);
    bool logits = memcmp(out.logits, vec.logits, sizeof out.logits) == 0;
    CHECK(logits, "vector %s: logits %ld %ld %ld %ld, expected %ld %ld %ld %ld", vec.name,
          (long)out.logits[0], (long)out.logits[1], (long)out.logits[2], (long)out.logits[3],
          (long)vec.logits[0], (long)vec.logits[1], (long)vec.logits[2], (long)vec.logits[3]);
    CHECK(predicted == vec.predicted, "vector %s: class %d, expected %d", vec.name, predicted,
          vec.predicted);
  }
}

static size_t from_hex(const char* hex, uint8_t* out) {
  size_t n = 0;
  for (; hex[0] && hex[1]; hex += 2) {
    unsigned value;
    sscanf(hex, "%2x", &value);
    out[n++] = (uint8_t)value;
  }
  return n;
}

static void test_serial_frame_vectors() {
  static uint8_t payload[HB_MAX_PAYLOAD], expected[HB_MAX_ENCODED + 1], out[HB_MAX_ENCODED + 1];
  for (int i = 0; i < kNumSerialFrames; i++) {
    const SerialFrame& f = kSerialFrames[i];
    size_t length = from_hex(f.payload_hex, payload);
    size_t want = from_hex(f.encoded_hex, expected);
    size_t n = hb::encode_frame(f.type, f.seq, payload, length, out);
    CHECK(n == want && memcmp(out, expected, n) == 0, "frame vector '%s' encodes differently",
          f.name);
    hb::FrameReader reader;
    hb::Frame frame;
    uint8_t error;
    hb::FeedResult r = hb::FEED_NONE;
    for (size_t k = 0; k < want; k++) r = reader.feed(expected[k], frame, error);
    CHECK(r == hb::FEED_FRAME && frame.type == f.type && frame.seq == f.seq &&
              frame.length == length && memcmp(frame.payload, payload, length) == 0,
          "frame vector '%s' decodes differently", f.name);
  }
}

int main() {
  test_serial_frame_vectors();
  test_crc32_matches_zlib();
  test_cobs_round_trip();
  test_frame_reader();
  test_cnn_is_bit_exact();
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
