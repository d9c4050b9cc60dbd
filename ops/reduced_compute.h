// How the dispatcher runs an op on bfloat16 and float16 tensors whose kernel computes in float32
// and float64 only (step 4 of dispatch(), ops/dispatch.cpp).
//
// Note [Reduced-precision compute]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// bfloat16 and float16 (core/reduced_float.h) are storage dtypes: grove computes with them in
// float32, as PyTorch does (its "opmath" type). Every op takes them wherever it takes float32,
// and returns them where it would return float32 (cross_entropy of bfloat16 logits is a bfloat16
// loss); what the kernel does depends on its entry:
//   - a kernel that takes them (OpEntry::cpu_takes_reduced / cuda_takes_reduced) loads each
//     16-bit value, widens it, computes in float32 (sums accumulate in float32) and rounds once
//     when it stores: the fast path, for the ops that decide a step's time (matrix products on
//     the tensor cores, attention, the elementwise ops of a transformer);
//   - any other kernel is handed float32 copies: each 16-bit input is widened into a float32
//     temporary, the kernel computes the float32 op, and each 16-bit output (and each 16-bit
//     input it writes in place) is rounded from the float32 result. The values are those of the
//     fast path up to the order of sums; it costs a copy each way, so it is correct everywhere
//     and fast nowhere. The CPU, the reference, runs every op this way.
// Rounding follows Note [Rounding to a 16-bit float]. The temporaries come from the allocator of
// the op's device, on its stream, like any intermediate of a kernel, so a traced, compiled or
// captured op widens the same way when it replays. Mixed dtypes are not promoted here: an op
// that takes one dtype for several inputs refuses bfloat16 with float32, as it refuses float32
// with float64 (autocast, ops/autocast.h, casts them first).
#pragma once

#include "ops/dispatch.h"

namespace grove::ops {

// True if the call has a 16-bit float input or output that `kernel_takes_reduced` says the
// kernel cannot take as it is.
bool needs_widening(const OpCall& call, const OpOutputs& outputs, bool kernel_takes_reduced);

// Runs `kernel` on float32 copies of the call's 16-bit inputs and outputs, then rounds the
// results into `outputs` and into the first `written` inputs (the in-place targets).
void run_widened(KernelFn kernel, const OpCall& call, const OpOutputs& outputs,
                 std::size_t written);

}  // namespace grove::ops
