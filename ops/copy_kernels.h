// The kernels of cat, fill_ and copy_, one for every device. Each is only a sequence of core's
// strided copies and fills (launch_copy, launch_fill in core/copy_kernel.h), which launch on the
// current stream of the destination's device and pick that device's copy kernel
// (core/copy_kernel.cpp on the CPU, core/cuda/copy_kernel.cu on CUDA) after the device-agnostic
// part (overlap between source and destination) is done. So there is nothing device-specific
// left to write twice: ops/cpu/ and ops/cuda/ name these functions as their own kernels (the
// using-declarations in ops/cpu/shape.h, ops/cpu/inplace.h, ops/cuda/shape.h and
// ops/cuda/inplace.h), and the op table's `cpu` and `cuda` entries of Cat, Fill and Copy are the
// same function. A device's entry is still null where that device has no backend in the build
// (GROVE_CUDA_KERNEL in ops/cuda/kernel_entry.h).
//
// None of them synchronises the host or allocates, except a copy whose source overlaps its
// destination, which core first clones on the same stream.
#pragma once

#include "ops/dispatch.h"

namespace grove::ops::any_device {

// out = [input 0 | input 1 | ...] along CatAttributes' dim: one strided copy per non-empty input
// into its slice out.narrow(dim, start, length).
void cat(const OpCall& call, const OpOutputs& outputs);
// outputs[0] (x, written in place) = attributes.scalar at every element.
void fill(const OpCall& call, const OpOutputs& outputs);
// outputs[0] (x, written in place) = input 1 broadcast to x's sizes, converted to x's dtype.
void copy(const OpCall& call, const OpOutputs& outputs);

}  // namespace grove::ops::any_device
