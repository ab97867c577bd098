#include "hb_app.h"

#include <stdio.h>
#include <string.h>

#include "hb_board.h"
#include "hb_cnn.h"
#include "hb_mfe.h"
#include "hb_wire.h"

namespace hb {

namespace {

constexpr uint32_t kSampleBytes = HB_SAMPLE_COUNT * 2;
constexpr uint32_t kFeatureBytes = HB_INPUT_FRAMES * HB_NUM_FILTERS;
constexpr uint32_t kMaxRepeatMs = 3600u * 1000u;

// The one sample the board holds (capacity 1): int16 PCM, or int8 features in its first bytes.
int16_t g_sample[HB_SAMPLE_COUNT];
int8_t g_features[kFeatureBytes];
CnnOutputs g_cnn;

struct Held {
  int32_t index = -1;   // -1: nothing held or being loaded
  uint8_t kind = 0;
  uint32_t total = 0;   // bytes announced by LOAD_BEGIN
  uint32_t received = 0;
  uint32_t crc = 0;     // announced whole-sample CRC-32
  bool complete = false;
} g_held;

struct Result {
  bool valid = false;
  uint16_t index = 0;
  uint8_t predicted = 0;
  uint8_t kind = 0;
  uint32_t pre_us = 0;
  uint32_t inf_us = 0;
  int32_t logits[HB_NUM_CLASSES];
} g_result;

FrameReader g_reader;
uint8_t g_out[HB_MAX_ENCODED + 1];
uint8_t g_payload[HB_MAX_PAYLOAD];

void send(uint8_t type, uint8_t seq, const uint8_t* payload, size_t length) {
  board::write(g_out, encode_frame(type, seq, payload, length, g_out));
}

void send_error(uint8_t seq, uint8_t code, const char* message) {
  g_payload[0] = code;
  size_t n = strlen(message);
  if (n > HB_MAX_PAYLOAD - 1) n = HB_MAX_PAYLOAD - 1;
  memcpy(g_payload + 1, message, n);
  send(HB_ERROR, seq, g_payload, n + 1);
}

// A frame that could not be read: the host resends what it asked (seq 0: its seq is unknown).
void report_unreadable(uint8_t error) {
  send_error(0, error, error == HB_E_BAD_CRC ? "frame checksum wrong" : "bad frame");
}

size_t identity(uint8_t* out) {
  int n = snprintf((char*)out, HB_MAX_PAYLOAD,
                   "board=%s fw=%s proto=%d model=%s classes=%s sample_rate=%d sample_count=%d "
                   "frames=%d filters=%d chunk=%d capacity=1 simulated=%d",
                   board::name(), HB_FIRMWARE_VERSION, HB_PROTOCOL_VERSION, HB_MODEL_FINGERPRINT,
                   HB_CLASS_NAMES, HB_SAMPLE_RATE, HB_SAMPLE_COUNT, HB_INPUT_FRAMES,
                   HB_NUM_FILTERS, HB_CHUNK_MAX_BYTES, board::simulated() ? 1 : 0);
  return n < 0 ? 0 : (size_t)n;
}

bool need(const Frame& f, uint16_t length) {
  if (f.length == length) return true;
  char message[64];
  snprintf(message, sizeof message, "command 0x%02x takes %u payload bytes, got %u", f.type,
           (unsigned)length, (unsigned)f.length);
  send_error(f.seq, HB_E_BAD_ARGUMENTS, message);
  return false;
}

bool holds(const Frame& f, uint16_t index) {
  if (g_held.complete && g_held.index == index) return true;
  send_error(f.seq, HB_E_NOT_LOADED, "no complete sample with that index: load it first");
  return false;
}

void on_load_begin(const Frame& f) {
  if (!need(f, 11)) return;
  const uint16_t index = get_u16(f.payload);
  const uint8_t kind = f.payload[2];
  const uint32_t total = get_u32(f.payload + 3);
  if (g_held.index >= 0 && g_held.index != index) {
    send_error(f.seq, HB_E_DEVICE_FULL, "another sample is held (capacity 1): unload it first");
    return;
  }
  const uint32_t expected = kind == HB_KIND_AUDIO_PCM16 ? kSampleBytes
                            : kind == HB_KIND_FEATURES_INT8 ? kFeatureBytes : 0;
  if (expected == 0 || total != expected) {
    send_error(f.seq, HB_E_BAD_ARGUMENTS,
               "kind 0 (pcm16) takes 2 bytes per audio sample, kind 1 (int8) frames*filters");
    return;
  }
  g_held.index = index;
  g_held.kind = kind;
  g_held.total = total;
  g_held.received = 0;
  g_held.crc = get_u32(f.payload + 7);
  g_held.complete = false;
  g_result.valid = false;
  uint8_t reply[7];
  put_u16(reply, index);
  reply[2] = kind;
  put_u32(reply + 3, total);
  send(HB_LOAD_READY, f.seq, reply, sizeof reply);
}

void on_load_chunk(const Frame& f) {
  if (f.length < 4) {
    send_error(f.seq, HB_E_BAD_ARGUMENTS, "LOAD_CHUNK needs an offset");
    return;
  }
  if (g_held.index < 0 || g_held.complete) {
    send_error(f.seq, HB_E_SAMPLE_INCOMPLETE, "LOAD_CHUNK without LOAD_BEGIN");
    return;
  }
  const uint32_t offset = get_u32(f.payload);
  const uint32_t n = f.length - 4;
  if (offset != g_held.received || offset + n > g_held.total) {
    char message[80];
    snprintf(message, sizeof message, "chunk at offset %lu, expected offset %lu of %lu",
             (unsigned long)offset, (unsigned long)g_held.received, (unsigned long)g_held.total);
    send_error(f.seq, HB_E_SAMPLE_INCOMPLETE, message);
    return;
  }
  memcpy((uint8_t*)g_sample + offset, f.payload + 4, n);
  g_held.received += n;
  uint8_t reply[4];
  put_u32(reply, g_held.received);
  send(HB_CHUNK_OK, f.seq, reply, sizeof reply);
}

void on_load_end(const Frame& f) {
  if (!need(f, 2)) return;
  const uint16_t index = get_u16(f.payload);
  if (g_held.index != index || g_held.received != g_held.total || g_held.total == 0) {
    char message[80];
    snprintf(message, sizeof message, "sample %u incomplete: %lu of %lu bytes", index,
             (unsigned long)g_held.received, (unsigned long)g_held.total);
    send_error(f.seq, HB_E_SAMPLE_INCOMPLETE, message);
    return;
  }
  const uint32_t crc = crc32((const uint8_t*)g_sample, g_held.total);
  if (crc != g_held.crc) {
    g_held.received = 0;  // the host sends it again from LOAD_BEGIN
    send_error(f.seq, HB_E_SAMPLE_CHECKSUM, "whole-sample CRC-32 differs: send it again");
    return;
  }
  g_held.complete = true;
  if (g_held.kind == HB_KIND_FEATURES_INT8) memcpy(g_features, g_sample, kFeatureBytes);
  uint8_t reply[11];
  put_u16(reply, index);
  reply[2] = g_held.kind;
  put_u32(reply + 3, g_held.total);
  put_u32(reply + 7, crc);
  send(HB_LOADED, f.seq, reply, sizeof reply);
}

void on_unload(const Frame& f) {
  if (!need(f, 2)) return;
  const uint16_t index = get_u16(f.payload);
  if (g_held.index != index) {
    send_error(f.seq, HB_E_NOT_LOADED, "that index is not held");
    return;
  }
  g_held = Held();
  g_result.valid = false;
  uint8_t reply[2];
  put_u16(reply, index);
  send(HB_UNLOADED, f.seq, reply, sizeof reply);
}

void send_result(uint8_t seq) {
  uint8_t* p = g_payload;
  put_u16(p, g_result.index);
  p[2] = g_result.predicted;
  p[3] = HB_NUM_CLASSES;
  p[4] = g_result.kind;
  put_u32(p + 5, g_result.pre_us);
  put_u32(p + 9, g_result.inf_us);
  for (int j = 0; j < HB_NUM_CLASSES; j++) put_u32(p + 13 + 4 * j, (uint32_t)g_result.logits[j]);
  send(HB_RESULT, seq, g_payload, 13 + 4 * HB_NUM_CLASSES);
}

void on_run(const Frame& f) {
  if (!need(f, 2)) return;
  const uint16_t index = get_u16(f.payload);
  if (!holds(f, index)) return;
  uint32_t pre_us = 0;
  if (g_held.kind == HB_KIND_AUDIO_PCM16) {
    board::marker(HB_STAGE_PREPROCESSING);
    const uint32_t t0 = board::micros();
    mfe(g_sample, g_features);
    pre_us = board::micros() - t0;
  }
  board::marker(HB_STAGE_INFERENCE);
  const uint32_t t1 = board::micros();
  const int predicted = infer(g_features, g_cnn);
  const uint32_t inf_us = board::micros() - t1;
  board::marker(HB_STAGE_IDLE);
  g_result.valid = true;
  g_result.index = index;
  g_result.predicted = (uint8_t)predicted;
  g_result.kind = g_held.kind;
  g_result.pre_us = pre_us;
  g_result.inf_us = inf_us;
  memcpy(g_result.logits, g_cnn.logits, sizeof g_result.logits);
  send_result(f.seq);
}

// True when a STOP arrived; any other command meanwhile is refused as busy.
bool stop_requested() {
  Frame frame;
  uint8_t error;
  int byte;
  bool stop = false;
  while ((byte = board::read_byte()) >= 0) {
    FeedResult r = g_reader.feed((uint8_t)byte, frame, error);
    if (r == FEED_FRAME) {
      if (frame.type == HB_STOP) stop = true;
      else send_error(frame.seq, HB_E_BUSY, "busy repeating: send STOP first");
    } else if (r == FEED_ERROR) {
      report_unreadable(error);
    }
  }
  return stop;
}

void on_repeat(const Frame& f) {
  if (!need(f, 7)) return;
  const uint16_t index = get_u16(f.payload);
  const uint8_t stage = f.payload[2];
  const uint32_t duration_ms = get_u32(f.payload + 3);
  if (stage > HB_STAGE_INFERENCE || duration_ms == 0 || duration_ms > kMaxRepeatMs) {
    send_error(f.seq, HB_E_BAD_ARGUMENTS, "stage must be 0..2 and duration 1..3600000 ms");
    return;
  }
  if (stage != HB_STAGE_IDLE && !holds(f, index)) return;
  if (stage == HB_STAGE_PREPROCESSING && g_held.kind != HB_KIND_AUDIO_PCM16) {
    send_error(f.seq, HB_E_BAD_ARGUMENTS, "pre-processing needs an audio sample (kind 0)");
    return;
  }
  if (stage == HB_STAGE_INFERENCE && g_held.kind == HB_KIND_AUDIO_PCM16) {
    mfe(g_sample, g_features);  // untimed: only inference is repeated
  }
  uint32_t iterations = 0, min_us = 0xFFFFFFFFu, max_us = 0;
  uint64_t sum = 0, sumsq = 0;
  bool stopped = false;
  const uint64_t duration_us = (uint64_t)duration_ms * 1000u;
  board::marker((HbStage)stage);
  const uint32_t start = board::micros();
  uint64_t elapsed = 0;
  while (elapsed < duration_us) {
    if (stage != HB_STAGE_IDLE) {
      const uint32_t a = board::micros();
      if (stage == HB_STAGE_PREPROCESSING) mfe(g_sample, g_features);
      else infer(g_features, g_cnn);
      const uint32_t us = board::micros() - a;
      iterations++;
      sum += us;
      sumsq += (uint64_t)us * us;
      if (us < min_us) min_us = us;
      if (us > max_us) max_us = us;
    }
    elapsed = (uint32_t)(board::micros() - start);
    if (stop_requested()) {
      stopped = elapsed < duration_us;
      break;
    }
  }
  board::marker(HB_STAGE_IDLE);
  uint8_t* p = g_payload;
  p[0] = stage;
  p[1] = stopped ? 1 : 0;
  put_u32(p + 2, iterations);
  put_u32(p + 6, (uint32_t)elapsed);
  put_u64(p + 10, sum);
  put_u64(p + 18, sumsq);
  put_u32(p + 26, iterations ? min_us : 0);
  put_u32(p + 30, max_us);
  send(HB_REPEAT_DONE, f.seq, g_payload, 34);
}

void dispatch(const Frame& f) {
  switch (f.type) {
    case HB_IDENTIFY:
      send(HB_IDENT, f.seq, g_payload, identity(g_payload));
      break;
    case HB_LOAD_BEGIN: on_load_begin(f); break;
    case HB_LOAD_CHUNK: on_load_chunk(f); break;
    case HB_LOAD_END: on_load_end(f); break;
    case HB_UNLOAD: on_unload(f); break;
    case HB_RUN: on_run(f); break;
    case HB_REPEAT: on_repeat(f); break;
    case HB_STOP: break;  // nothing is repeating: nothing to stop, no reply
    case HB_READ_RESULT:
      if (g_result.valid) send_result(f.seq);
      else send_error(f.seq, HB_E_NOT_LOADED, "no result since the last load");
      break;
    default:
      send_error(f.seq, HB_E_UNKNOWN_COMMAND, "unknown command type");
  }
}

}  // namespace

void app_begin() {
  g_held = Held();
  g_result.valid = false;
  g_reader.reset();
  board::marker(HB_STAGE_IDLE);
  send(HB_BOOT, 0, g_payload, identity(g_payload));
}

void app_poll() {
  Frame frame;
  uint8_t error;
  int byte;
  while ((byte = board::read_byte()) >= 0) {
    FeedResult r = g_reader.feed((uint8_t)byte, frame, error);
    if (r == FEED_FRAME) {
      dispatch(frame);
      return;
    }
    if (r == FEED_ERROR) report_unreadable(error);
  }
}

}  // namespace hb
