// Switches for the CUDA matrix kernels (cuBLAS matmul/linear/bmm, cuDNN conv2d): precision
// (TF32) and how float32 products pick their kernels (benchmark mode).
//
// TF32: on Hopper, float32 matrix products can run on the tensor cores in TensorFloat-32, which
// rounds each input to a 10-bit mantissa (about 3 decimal digits) and accumulates in float32.
// That is up to ~7x faster for large products but differs from a float32 product by about 1e-3
// relative, so grove keeps it OFF by default: float32 results then match the CPU kernels within
// 1e-4. Turn it on for training where that precision is enough:
//
//   grove::ops::set_allow_tf32(true);   // like torch.backends.cuda.matmul.allow_tf32 = True
//
// The switch is read when a kernel is launched, so a captured graph keeps the mode it was
// captured with. CPU kernels ignore it. Thread-safe (an atomic flag shared by all threads).
#pragma once

namespace grove::ops {

void set_allow_tf32(bool allow);
bool allow_tf32();

// Benchmark mode for CUDA float32 matrix products (matmul, linear, bmm), the twin of
// set_conv_benchmark (ops/conv.h): off by default, so cuBLASLt's heuristic picks each shape's
// kernel without running anything. When on, the first call of each shape (per thread; with its
// transposes, strides, alignments and the TF32 switch) that is not inside a capture times the
// heuristic's candidates on that call's own buffers, which synchronises the host once, and keeps
// the fastest. A capture uses the measured kernel of an earlier eager call of the shape (the
// usual warm-up), or else the heuristic's. The candidates compute the same product and differ
// in summation order only, so results differ from the heuristic pick's within float32 rounding;
// once picked, a shape's kernel stays for the thread's life. See Note [Timing matmul kernels]
// in ops/cuda/linalg.cpp. float64 and CPU products ignore it. Thread-safe.
void set_matmul_benchmark(bool on);
bool matmul_benchmark();

}  // namespace grove::ops
