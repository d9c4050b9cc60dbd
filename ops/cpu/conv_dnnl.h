// conv2d and its two gradients on the CPU through oneDNN, the deep learning primitives library
// (Debian's libdnnl): JIT-compiled direct convolutions, the path libtorch takes on the CPU.
// The im2col + GEMM kernels (ops/cpu/conv.cpp, conv_backward.cpp) serve whatever this does not.
//
// Note [Convolutions through oneDNN]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Which: float32 with one group, in a build that found oneDNN (GROVE_HAS_DNNL). Everything else
// (float64, groups, a right padding below zero, a primitive oneDNN refuses) keeps im2col + GEMM.
//
// Layouts: grove's tensors stay NCHW and OIHW. The primitives are made with the format `any`,
// so oneDNN picks the blocked layouts its kernels want (nChw16c with AVX-512), and operands are
// reordered into scratch before a primitive and results back after it. Measured on a 2-core
// AVX-512 machine, batch 128, the cnn's second layer (32 -> 64 channels, 14 x 14), reorders
// included: forward 2.26 ms against 5.07 ms for im2col + Eigen; in plain layouts oneDNN's own
// im2col + GEMM took 3.79 ms.
//
// Threads and determinism: the batch is cut into chunks whose bounds depend on N only (as the
// weight gradient of conv_backward.cpp), each chunk runs on one thread (inside an OpenMP team
// oneDNN runs serially), and the weight gradient's per-chunk sums are added in chunk order. So,
// as with the im2col kernels, a result does not depend on the thread count.
//
// Capture (Note [CPU streams simulate CUDA capture] in core/stream.h): a kernel holds raw
// pointers only: to scratch allocated before launch (Note [Scratch copies before a CPU kernel]
// in ops/cpu/linalg.h) and to primitives cached for the life of the process, one per pass,
// geometry and chunk size, never evicted, so a recorded kernel can always replay.
#pragma once

#include "core/device.h"
#include "ops/cpu/conv.h"

namespace grove::ops::cpu::dnnl_conv {

enum class Pass {
  Forward,         // a = input (N, C, H, W), b = weight, bias (O) or null; out = output
  BackwardInput,   // a = grad (N, O, Ho, Wo), b = weight; out = grad_input (N, C, H, W)
  BackwardWeight,  // a = grad (N, O, Ho, Wo), b = input; out = grad_weight (O, C, kH, kW)
};

// Launches one pass on the current stream of `device` (the CPU) and returns true, or returns
// false, having launched nothing, where oneDNN does not serve this convolution (see the Note).
// Every operand is contiguous, float32.
bool launch(Pass pass, const ConvShape& shape, const float* a, const float* b, const float* bias,
            float* out, Device device);

}  // namespace grove::ops::cpu::dnnl_conv
