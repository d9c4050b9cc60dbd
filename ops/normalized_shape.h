// Argument checks shared by the normalisations over trailing dimensions (layer_norm, rms_norm and
// their backward ops): x against its normalized_shape, and a weight or bias against both. Each
// raises the op's own error (GROVE_OP_CHECK, naming the op and its inputs).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops {

// x is floating point and normalized_shape is 1 to x.dim() of x's trailing sizes. Returns the
// shape of the per-row statistics: x's, with the normalised dims set to 1.
DimVector check_normalized_input(const OpCall& call, const Tensor& x, IntArrayRef normalized_shape);

// `parameter` (named `name` in the message) has shape normalized_shape and x's dtype.
void check_norm_parameter(const OpCall& call, const Tensor& x, const Tensor& parameter,
                          IntArrayRef normalized_shape, const char* name);

}  // namespace grove::ops
