// GROVE_CUDA_CHECK(expr): runs a CUDA runtime call and throws grove::Error if it failed.
//
// The message names the CUDA error (cudaGetErrorName and cudaGetErrorString), the expression,
// and the file and line of the call, like llm.c's cudaCheck. Use it around every CUDA runtime
// call, and as GROVE_CUDA_CHECK(cudaGetLastError()) after every kernel launch.
//
// Only files of the CUDA backend include this header (it needs the CUDA toolkit's headers); it
// compiles with g++ and with nvcc.
#pragma once

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace grove::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t error, const char* expression,
                                          const char* file, int line) {
  throw_error(join_message("CUDA error ", cudaGetErrorName(error), " (", cudaGetErrorString(error),
                           ") from ", expression),
              file, line);
}

}  // namespace grove::detail

#define GROVE_CUDA_CHECK(expr)                                                         \
  do {                                                                                 \
    const cudaError_t grove_cuda_error_ = (expr);                                      \
    if (grove_cuda_error_ != cudaSuccess) [[unlikely]] {                               \
      ::grove::detail::throw_cuda_error(grove_cuda_error_, #expr, __FILE__, __LINE__); \
    }                                                                                  \
  } while (false)
