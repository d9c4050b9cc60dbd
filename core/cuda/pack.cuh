// kVec elements of T in one aligned load or store: the 16-byte packs of the dense CUDA kernels
// (the copy kernel here, and the op kernels through ops/cuda/opmath.cuh). Only .cu files include
// this header.
#pragma once

namespace grove::cuda_backend {

template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Pack {
  T values[kVec];
};

}  // namespace grove::cuda_backend
