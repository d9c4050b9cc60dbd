// CUDA kernels for rms_norm and rms_norm_backward; ops/cpu/rms_norm.cpp is the reference they
// match. Both work on the (M, N) view of contiguous copies (M rows of N elements), with the row
// groups of layer_norm.cu: one warp per row (N <= kMaxWarpFeatures, eight rows per block) or one
// block per row.
//
// rms_norm: two sweeps over the row, the mean of squares (a sum in double, closed with warp
// shuffles in a fixed order) and then y.
// rms_norm_backward, in two launches: grad_input row by row, rrms (gw - xhat mean(gw xhat));
// grad_weight = sum over rows of g xhat, as sums down the columns of the (M, N) view
// (Note [Summing columns] in ops/cuda/column_sums.cuh). All sums in double, like the CPU's;
// results differ from it only by summation order.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "ops/attributes.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/rms_norm.h"
#include "ops/norm_inputs.h"

namespace grove::ops::cuda {
namespace {

// Rows up to this many elements take one warp each; longer rows one block of kThreads.
constexpr std::int64_t kMaxWarpFeatures = 1024;

// x, y: (M, N) contiguous; weight: (N) or null; rrms: (M).
template <typename T, bool kWarpRows>
__global__ void rms_norm_rows(const T* x, const T* weight, T* y, T* rrms_out, std::int64_t m,
                              std::int64_t n, double eps) {
  __shared__ double shared[kThreads / kWarp];
  const RowGroup<kWarpRows> group;
  for (std::int64_t row = group.first; row < m; row += group.step) {
    const T* x_row = x + row * n;
    T* y_row = y + row * n;
    double squares = 0.0;
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      squares += static_cast<double>(x_row[j]) * x_row[j];
    }
    const double total = group.sum(squares, shared);
    // A row of no elements: the mean of no squares is taken as 0, as on the CPU.
    const double mean_square = n == 0 ? 0.0 : total / static_cast<double>(n);
    const double rrms = 1.0 / ::sqrt(mean_square + eps);
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      double value = x_row[j] * rrms;
      if (weight != nullptr) value *= weight[j];
      y_row[j] = static_cast<T>(value);
    }
    if (group.lane == 0) rrms_out[row] = static_cast<T>(rrms);
  }
}

// grad_input = rrms (gw - xhat mean(gw xhat)), row by row.
template <typename T, bool kWarpRows>
__global__ void input_grad_rows(const T* grad, const T* x, const T* rrms_in, const T* weight,
                                T* grad_input, std::int64_t m, std::int64_t n) {
  __shared__ double shared[kThreads / kWarp];
  const RowGroup<kWarpRows> group;
  for (std::int64_t row = group.first; row < m; row += group.step) {
    const T* g = grad + row * n;
    const T* x_row = x + row * n;
    T* out = grad_input + row * n;
    const double rrms = rrms_in[row];
    double sum_gw_xhat = 0.0;
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      const double gw = weight == nullptr ? double(g[j]) : double(g[j]) * weight[j];
      sum_gw_xhat += gw * x_row[j] * rrms;
    }
    const double mean_gw_xhat = group.sum(sum_gw_xhat, shared) / static_cast<double>(n);
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      const double gw = weight == nullptr ? double(g[j]) : double(g[j]) * weight[j];
      out[j] = static_cast<T>(rrms * (gw - x_row[j] * rrms * mean_gw_xhat));
    }
  }
}

// Element (row, column) of grad_weight's sum: g xhat.
template <typename T>
struct WeightGradElement {
  const T* grad;
  const T* x;
  const T* rrms;
  std::int64_t n;
  __device__ void operator()(std::int64_t row, std::int64_t column, double (&values)[1]) const {
    values[0] = static_cast<double>(grad[row * n + column]) *
                (x[row * n + column] * static_cast<double>(rrms[row]));
  }
};

// Where each column's sum goes.
template <typename T>
struct WeightGradResult {
  T* grad_weight;
  __device__ void operator()(std::int64_t column, int /*k*/, double sum) const {
    grad_weight[column] = static_cast<T>(sum);
  }
};

template <typename T>
void launch_rms_norm(const OpCall& call, const OpOutputs& outputs) {
  const NormInputs inputs = norm_inputs(call, outputs);
  const std::int64_t n = inputs.n, m = inputs.m;
  if (m == 0) return;
  const Device device = outputs[0].device();
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  const bool warp_rows = n <= kMaxWarpFeatures;
  auto kernel = warp_rows ? rms_norm_rows<T, true> : rms_norm_rows<T, false>;
  kernel<<<row_group_blocks(m, warp_rows), kThreads, 0, stream>>>(
      static_cast<const T*>(inputs.x.data_ptr()), data_or_null<T>(inputs.weight),
      static_cast<T*>(outputs[0].data_ptr()), static_cast<T*>(outputs[1].data_ptr()), m, n,
      inputs.attributes.eps);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_rms_norm_backward(const OpCall& call, const OpOutputs& outputs) {
  const NormBackwardInputs inputs = norm_backward_inputs(call, /*statistics=*/1);
  const std::int64_t m = inputs.m;
  const std::int64_t n = inputs.n;
  const Device device = outputs[0].device();
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  const T* g = static_cast<const T*>(inputs.grad.data_ptr());
  const T* x_data = static_cast<const T*>(inputs.x.data_ptr());
  const T* rrms_data = static_cast<const T*>(inputs.stats[0].data_ptr());
  if (m > 0 && n > 0) {
    const bool warp_rows = n <= kMaxWarpFeatures;
    auto kernel = warp_rows ? input_grad_rows<T, true> : input_grad_rows<T, false>;
    kernel<<<row_group_blocks(m, warp_rows), kThreads, 0, stream>>>(
        g, x_data, rrms_data, data_or_null<T>(inputs.weight),
        static_cast<T*>(outputs[0].data_ptr()), m, n);
    GROVE_CUDA_CHECK(cudaGetLastError());
  }
  if (n == 0) return;
  // With m == 0 one split of no rows: the gradient is 0, as on the CPU.
  launch_column_sums<1, PlainSum>(WeightGradElement<T>{g, x_data, rrms_data, n}, m, n, device,
                                  stream,
                                  WeightGradResult<T>{static_cast<T*>(outputs[1].data_ptr())});
}

}  // namespace

void rms_norm(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_rms_norm<T>(call, outputs); });
}

void rms_norm_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_rms_norm_backward<T>(call, outputs); });
}

}  // namespace grove::ops::cuda
