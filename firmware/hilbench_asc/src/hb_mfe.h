// MFE pre-processing (log mel filterbank energies), float32, as hilbench/workloads/asc/features.py:
// pre-emphasis, 99 frames of 256 FFT samples every 160, power spectrum / 256, 40 mel filters,
// dB, noise floor, then int8 features q = clip(rint(v * 256), 0, 255) - 128.
#pragma once
#include <stdint.h>

#include "hb_model.h"

namespace hb {

// Features of one second of int16 PCM (HB_SAMPLE_COUNT values, real value = pcm / 32768).
// `features` receives HB_INPUT_FRAMES x HB_NUM_FILTERS int8 (frame-major); `values`, if not
// null, the float MFE values in [0, 1] before quantisation (for the tolerance check).
void mfe(const int16_t* pcm, int8_t* features, float* values = nullptr);

}  // namespace hb
