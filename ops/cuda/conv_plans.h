// cuDNN convolution plans, shared by the three files of the CUDA convolution: the kernels
// (ops/cuda/conv.cpp) find a shape's plan here and run it; the plan cache (ops/cuda/conv_plans.cpp)
// makes and keeps plans; benchmark mode (ops/cuda/conv_benchmark.cpp) times a plan's usable
// algorithms to pick one. See Note [cuDNN convolution plans] in ops/cuda/conv_plans.cpp. Internal
// to those files; includes cuDNN's headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/attributes.h"
#include "ops/cuda/cudnn_handle.h"
#include "ops/dispatch.h"

namespace grove::ops::cuda::convolution {

enum class Direction : std::int64_t { Forward, BackwardData, BackwardFilter };

// One call's device buffers: x, w and y (written) of the forward; for backward data w, dy and dx
// (written); for backward filter x, dy and dw (written).
struct CallBuffers {
  const void* first;
  const void* second;
  void* written;
};

// What one convolution needs besides its data. Made once per key, read-only after that.
struct ConvPlan {
  cudnnTensorDescriptor_t input = nullptr;   // x or dx: (N, C, H, W)
  cudnnFilterDescriptor_t weight = nullptr;  // w or dw: (O, C/G, kH, kW)
  cudnnTensorDescriptor_t output = nullptr;  // y or dy: (N, O, Ho, Wo)
  cudnnTensorDescriptor_t bias = nullptr;    // (1, O, 1, 1); forward only
  cudnnConvolutionDescriptor_t convolution = nullptr;
  int algorithm = 0;
  std::size_t workspace_bytes = 0;
};

// cuDNN's scaling factors: float for float32 data, double for float64.
struct Scale {
  float one_float = 1.0f, zero_float = 0.0f;
  double one_double = 1.0, zero_double = 0.0;
  bool is_float;
  explicit Scale(DType dtype) : is_float(dtype == DType::Float32) {}
  const void* one() const {
    return is_float ? static_cast<const void*>(&one_float) : static_cast<const void*>(&one_double);
  }
  const void* zero() const {
    return is_float ? static_cast<const void*>(&zero_float)
                    : static_cast<const void*>(&zero_double);
  }
};

// An algorithm a plan may use: cuDNN supports it for the shape, with this math type and
// workspace.
struct Usable {
  int algorithm;
  cudnnMathType_t math;
  std::size_t bytes;
};

// A 4-d NCHW tensor descriptor of `sizes` (the caller destroys it). `op` names the op in errors.
cudnnTensorDescriptor_t tensor_descriptor(DType dtype, IntArrayRef sizes, const char* op);

// A convolution's scratch memory of `bytes` on the current stream of `device`: the stream's
// library workspace (blas_workspace, ops/cuda/blas_handle.h) when it is large enough, else a
// buffer from the caching allocator, which `buffer` keeps alive until the call is enqueued. See
// Note [cuDNN convolution plans] in conv_plans.cpp. `data` is null for 0 bytes.
struct Workspace {
  Tensor buffer;  // undefined when the stream's workspace is used
  void* data = nullptr;
};
Workspace workspace(std::size_t bytes, Device device);

// Runs one convolution of `plan` with `algorithm` (the plan's convolution descriptor holds its
// math type) on the handle's stream: out = conv(...) with alpha 1, beta 0.
cudnnStatus_t run_convolution(cudnnHandle_t handle, Direction direction, const ConvPlan& plan,
                              int algorithm, const CallBuffers& buffers, void* space,
                              std::size_t bytes, const Scale& scale);

// The plan of one convolution (ops/cuda/conv_plans.cpp), made on first use;
// see Note [cuDNN convolution plans]. `buffers` are the call's, for benchmark mode. Thread-safe.
const ConvPlan& find_plan(cudnnHandle_t handle, Direction direction, DType dtype, Device device,
                          IntArrayRef input, IntArrayRef weight, IntArrayRef output,
                          const Conv2dAttributes& geometry, const CallBuffers& buffers,
                          const char* op);

// Benchmark mode (ops/cuda/conv_benchmark.cpp): times every usable algorithm on the call's own
// buffers (one warm-up run, then five between two CUDA events on the current stream, queued
// behind a 1 ms spin) and returns the index of the fastest in GPU time (of those within 5% of it,
// the first in cuDNN's rank). Synchronises the host; see Note [cuDNN convolution plans]. Throws if
// cuDNN refuses every candidate when it runs.
std::size_t fastest(cudnnHandle_t handle, Direction direction, const ConvPlan& plan,
                    const std::vector<Usable>& usable, const CallBuffers& buffers, DType dtype,
                    Device device, const char* op_name);

}  // namespace grove::ops::cuda::convolution
