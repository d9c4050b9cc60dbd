// Aliasing between the target of an in-place update and its operands, for the update kernels of
// every device (ops/cpu/inplace.cpp, ops/cuda/inplace.cu).
//
// Host code only: it compares sizes, strides and storages (never reads tensor data) and, when
// it must, copies on the target's device and current stream.
#pragma once

#include "core/tensor.h"

namespace grove::ops {

// `operand` itself, or a copy of it when it shares memory with x other than element for element
// (x.add_(x) is fine): otherwise an element could be read after the update overwrote it. The
// copy (operand.clone()) is made on x's device and current stream, so a kernel launched after it
// on that stream reads the copy.
Tensor unaliased(const Tensor& x, const Tensor& operand);

}  // namespace grove::ops
