// Precision switches for the CUDA matrix kernels (cuBLAS matmul/linear/bmm, cuDNN conv2d).
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

}  // namespace grove::ops
