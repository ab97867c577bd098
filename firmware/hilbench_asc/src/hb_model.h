// Which generated model the core is built with: src/model_data.h (what the sketch flashes), or
// the header named by HB_MODEL_HEADER (CMake -DHB_MODEL_HEADER=path: the unit tests' vectors
// model, or the host build made for a campaign's model; see README, "The model header").
#pragma once
#ifdef HB_MODEL_HEADER
#include HB_MODEL_HEADER
#else
#include "model_data.h"
#endif
