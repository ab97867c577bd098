// Int8 CNN inference, bit-exact with hilbench/workloads/asc/quant.py (QuantisedModel.infer);
// the arithmetic is specified in protocols/vectors/asc_int8/README.md.
#pragma once
#include <stdint.h>

#include "hb_model.h"

namespace hb {

constexpr int kConv0Frames = (HB_INPUT_FRAMES + HB_CONV0_POOL - 1) / HB_CONV0_POOL;
constexpr int kConv1Frames = (kConv0Frames + HB_CONV1_POOL - 1) / HB_CONV1_POOL;
static_assert(kConv1Frames * HB_CONV1_OUT == HB_DENSE_IN, "dense input size mismatch");

// Layer outputs, kept so tests can compare every layer with the vectors.
struct CnnOutputs {
  int8_t conv0[kConv0Frames * HB_CONV0_OUT];
  int8_t conv1[kConv1Frames * HB_CONV1_OUT];
  int32_t logits[HB_NUM_CLASSES];
};

// Runs the network on (HB_INPUT_FRAMES, HB_INPUT_FILTERS) int8 features; returns the class
// (the lowest index among equal largest logits).
int infer(const int8_t* features, CnnOutputs& out);

}  // namespace hb
