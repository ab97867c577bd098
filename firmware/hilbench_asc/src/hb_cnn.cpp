#include "hb_cnn.h"

namespace hb {

namespace {

inline int8_t requantise(int32_t acc, int32_t mult, int32_t shift, int32_t zero_point) {
  const int64_t product = (int64_t)acc * mult;
  int32_t v = (int32_t)((product + ((int64_t)1 << (shift - 1))) >> shift);
  v += zero_point;
  const int32_t low = zero_point > -128 ? zero_point : -128;  // ReLU: real 0 is the zero point
  if (v < low) v = low;
  if (v > 127) v = 127;
  return (int8_t)v;
}

// conv1d ("same", stride 1) + ReLU + max-pool over time (window `pool`, short last window).
void conv_block(const int8_t* x, int frames, int in_ch, int out_ch, int kernel, int pool,
                int32_t in_zp, int32_t out_zp, const int8_t* weight, const int32_t* bias,
                const int32_t* mult, const int32_t* shift, int8_t* out) {
  const int pad = kernel / 2;
  const int out_frames = (frames + pool - 1) / pool;
  for (int u = 0; u < out_frames; u++) {
    for (int o = 0; o < out_ch; o++) {
      int8_t best = -128;
      for (int p = 0; p < pool; p++) {
        const int t = u * pool + p;
        if (t >= frames) break;
        int32_t acc = bias[o];
        for (int k = 0; k < kernel; k++) {
          const int s = t + k - pad;
          if (s < 0 || s >= frames) continue;
          const int8_t* w = weight + (o * kernel + k) * in_ch;
          const int8_t* xs = x + s * in_ch;
          for (int c = 0; c < in_ch; c++) acc += (int32_t)w[c] * ((int32_t)xs[c] - in_zp);
        }
        const int8_t y = requantise(acc, mult[o], shift[o], out_zp);
        if (p == 0 || y > best) best = y;
      }
      out[u * out_ch + o] = best;
    }
  }
}

}  // namespace

int infer(const int8_t* features, CnnOutputs& out) {
  conv_block(features, HB_INPUT_FRAMES, HB_CONV0_IN, HB_CONV0_OUT, HB_CONV0_KERNEL, HB_CONV0_POOL,
             HB_CONV0_IN_ZP, HB_CONV0_OUT_ZP, HB_CONV0_WEIGHT, HB_CONV0_BIAS, HB_CONV0_MULT,
             HB_CONV0_SHIFT, out.conv0);
  conv_block(out.conv0, kConv0Frames, HB_CONV1_IN, HB_CONV1_OUT, HB_CONV1_KERNEL, HB_CONV1_POOL,
             HB_CONV1_IN_ZP, HB_CONV1_OUT_ZP, HB_CONV1_WEIGHT, HB_CONV1_BIAS, HB_CONV1_MULT,
             HB_CONV1_SHIFT, out.conv1);
  int best = 0;
  for (int j = 0; j < HB_NUM_CLASSES; j++) {
    int32_t acc = HB_DENSE_BIAS[j];
    const int8_t* w = HB_DENSE_WEIGHT + j * HB_DENSE_IN;
    for (int i = 0; i < HB_DENSE_IN; i++) acc += (int32_t)w[i] * ((int32_t)out.conv1[i] - HB_DENSE_IN_ZP);
    out.logits[j] = acc;
    if (acc > out.logits[best]) best = j;
  }
  return best;
}

}  // namespace hb
