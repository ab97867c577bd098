#include "hb_mfe.h"

#include <math.h>

namespace hb {

static_assert((HB_FFT_LENGTH & (HB_FFT_LENGTH - 1)) == 0, "FFT length must be a power of two");
static_assert(HB_FFT_LENGTH <= HB_FRAME_SAMPLES, "frames shorter than the FFT are not supported");

namespace {

constexpr int kBins = HB_FFT_LENGTH / 2 + 1;
constexpr double kPi = 3.14159265358979323846;
float g_cos[HB_FFT_LENGTH / 2];
float g_sin[HB_FFT_LENGTH / 2];
bool g_ready = false;

void init_tables() {
  for (int i = 0; i < HB_FFT_LENGTH / 2; i++) {
    double angle = -2.0 * kPi * i / HB_FFT_LENGTH;
    g_cos[i] = (float)cos(angle);
    g_sin[i] = (float)sin(angle);
  }
  g_ready = true;
}

// In-place iterative radix-2 FFT (decimation in time) of HB_FFT_LENGTH complex values.
void fft(float* re, float* im) {
  const int n = HB_FFT_LENGTH;
  for (int i = 1, j = 0; i < n; i++) {
    int bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j |= bit;
    if (i < j) {
      float t = re[i]; re[i] = re[j]; re[j] = t;
      t = im[i]; im[i] = im[j]; im[j] = t;
    }
  }
  for (int len = 2; len <= n; len <<= 1) {
    const int step = n / len;
    for (int start = 0; start < n; start += len) {
      for (int k = 0; k < len / 2; k++) {
        const float wr = g_cos[k * step], wi = g_sin[k * step];
        const int a = start + k, b = a + len / 2;
        const float xr = re[b] * wr - im[b] * wi;
        const float xi = re[b] * wi + im[b] * wr;
        re[b] = re[a] - xr;
        im[b] = im[a] - xi;
        re[a] += xr;
        im[a] += xi;
      }
    }
  }
}

}  // namespace

void mfe(const int16_t* pcm, int8_t* features, float* values) {
  if (!g_ready) init_tables();
  static float re[HB_FFT_LENGTH], im[HB_FFT_LENGTH], power[kBins];
  const float scale = 1.0f / 32768.0f;
  const float preemphasis = HB_PREEMPHASIS;
  const float floor_db = HB_NOISE_FLOOR_DB;
  const float range_db = 12.0f - floor_db;
  for (int f = 0; f < HB_INPUT_FRAMES; f++) {
    const int start = f * HB_FRAME_STRIDE;
    for (int i = 0; i < HB_FFT_LENGTH; i++) {
      const int n = start + i;
      const float x = (float)pcm[n] * scale;
      const float previous = n > 0 ? (float)pcm[n - 1] * scale : 0.0f;
      re[i] = x - preemphasis * previous;  // pre-emphasis; the sample before the first is 0
      im[i] = 0.0f;
    }
    fft(re, im);
    for (int k = 0; k < kBins; k++) {
      power[k] = (re[k] * re[k] + im[k] * im[k]) / (float)HB_FFT_LENGTH;
    }
    int w = 0;
    for (int m = 0; m < HB_NUM_FILTERS; m++) {
      float energy = 0.0f;
      for (int k = 0; k < HB_MEL_LENGTH[m]; k++) {
        energy += power[HB_MEL_START[m] + k] * HB_MEL_WEIGHTS[w + k];
      }
      w += HB_MEL_LENGTH[m];
      const float db = 10.0f * log10f(energy > 1e-30f ? energy : 1e-30f);
      float v = (db - floor_db) / range_db;
      v = v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
      if (values) values[f * HB_NUM_FILTERS + m] = v;
      float q = nearbyintf(v * 256.0f);  // round half to even, as numpy's rint
      q = q > 255.0f ? 255.0f : q;
      features[f * HB_NUM_FILTERS + m] = (int8_t)((int)q + HB_FEATURE_ZERO_POINT);
    }
  }
}

}  // namespace hb
