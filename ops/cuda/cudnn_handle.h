// cuDNN plumbing for the CUDA kernels that call cuDNN (ops/cuda/conv*.cpp): GROVE_CUDNN_CHECK and
// the handle of the calling thread for a device.
//
// A cudnnHandle_t is not thread-safe, so each (thread, device) pair gets its own, created on
// first use and kept for the thread's life (never destroyed: destroying a handle after the CUDA
// context is gone at process exit can crash, and a thread makes at most one per device). Every
// call of cudnn_handle() binds the handle to the device's current grove stream, so the cuDNN
// work that follows is enqueued there (and captured with it). Plain C++ (g++), with the CUDA and
// cuDNN headers; only files of the CUDA backend include it.
#pragma once

#include <cudnn.h>

#include "core/device.h"
#include "core/error.h"

namespace grove::ops::cuda {

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* expression, const char* file,
                                    int line);

// The calling thread's handle for `device` (a CUDA device), bound to current_stream(device).
// Does not synchronise the host. The first call on a thread for a device creates the handle (in
// relaxed capture mode, so that it may happen while a graph captures).
cudnnHandle_t cudnn_handle(Device device);

}  // namespace grove::ops::cuda

// GROVE_CUDNN_CHECK(expr): runs a cuDNN call and throws grove::Error naming cudnnGetErrorString,
// the expression, file and line if it did not return CUDNN_STATUS_SUCCESS.
#define GROVE_CUDNN_CHECK(expr)                                                              \
  do {                                                                                       \
    const cudnnStatus_t grove_cudnn_status_ = (expr);                                        \
    if (grove_cudnn_status_ != CUDNN_STATUS_SUCCESS) [[unlikely]] {                          \
      ::grove::ops::cuda::throw_cudnn_error(grove_cudnn_status_, #expr, __FILE__, __LINE__); \
    }                                                                                        \
  } while (false)
