// GROVE_CUDA_KERNEL(name): the `cuda` field of an OpEntry (ops/dispatch.h). In builds with the
// CUDA backend (GROVE_HAS_CUDA, set by grove_core) it names ops::cuda::name from ops/cuda/;
// otherwise it is nullptr and dispatch() refuses CUDA tensors with "there is no kernel for ...".
// Plain C++: op files include it without the CUDA toolkit.
#pragma once

#ifdef GROVE_HAS_CUDA
#define GROVE_CUDA_KERNEL(kernel) ::grove::ops::cuda::kernel
#else
#define GROVE_CUDA_KERNEL(kernel) nullptr
#endif
