// CUDA kernels for layer_norm and layer_norm_backward; ops/cpu/layer_norm.cpp is the reference
// they match. Both work on the (M, N) view of contiguous copies (x: M rows of N elements, the
// batch dims flattened into M, the normalised dims into N), as the CPU kernel does.
//
// layer_norm: one warp per row (N <= kMaxWarpFeatures, eight rows per block) or one block per
// row, in three sweeps over the row as on the CPU: the mean (a sum in double), the variance
// (the sum of (x - mean)^2 in double: two passes, no cancellation), then y. Sums close with warp
// shuffles (and, for block rows, one shared-memory step) in a fixed order.
//
// layer_norm_backward, in three launches:
//   - grad_input, row by row as layer_norm: rstd (gw - mean(gw) - xhat mean(gw xhat)), with
//     gw = g * weight;
//   - grad_weight = sum over rows of g xhat and grad_bias = sum of g, as sums down the columns
//     of the (M, N) view (Note [Summing columns] in ops/cuda/column_sums.cuh): two launches,
//     deterministic without float atomics, reading whole rows.
// All sums are in double, like the CPU's; results differ from it only by summation order.
//
// Rows that split into whole 16-byte packs over a warp's lanes, at most kMaxLanePacks per lane
// (n a multiple of 128 up to 1024 for float32: a GPT's 384 or 768 features), with every operand
// 16-byte aligned, take packed warp-row kernels: each lane loads its packs once into registers
// (pack k * 32 + lane, so a warp's loads are contiguous), and the sweeps run on the registers.
// The scalar kernels read each element three times, 4 bytes a load: layer_norm over GPT-2
// small's (8192, 768) rows took 27 us and its input gradient 29 us on an H200, twice the time
// their bytes need.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "core/cuda/cuda_device.h"
#include "ops/attributes.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/layer_norm.h"
#include "ops/cuda/opmath.cuh"
#include "ops/norm_inputs.h"

namespace grove::ops::cuda {
namespace {

// Rows up to this many elements take one warp each; longer rows one block of kThreads.
constexpr std::int64_t kMaxWarpFeatures = 1024;
// x, y: (M, N) contiguous; weight, bias: (N) or null; mean, rstd: (M).
template <typename T, bool kWarpRows>
__global__ void layer_norm_rows(const T* x, const T* weight, const T* bias, T* y, T* mean_out,
                                T* rstd_out, std::int64_t m, std::int64_t n, double eps) {
  __shared__ double shared[kThreads / kWarp];
  const RowGroup<kWarpRows> group;
  for (std::int64_t row = group.first; row < m; row += group.step) {
    const T* x_row = x + row * n;
    T* y_row = y + row * n;
    double sum = 0.0;
    for (std::int64_t j = group.lane; j < n; j += group.width) sum += x_row[j];
    // n == 0: 0 / 0 makes mean and rstd NaN, as the CPU's "mean of nothing".
    const double mean = group.sum(sum, shared) / static_cast<double>(n);
    double squares = 0.0;
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      const double centred = x_row[j] - mean;
      squares += centred * centred;
    }
    const double rstd = 1.0 / ::sqrt(group.sum(squares, shared) / static_cast<double>(n) + eps);
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      double value = (x_row[j] - mean) * rstd;
      if (weight != nullptr) value *= weight[j];
      if (bias != nullptr) value += bias[j];
      y_row[j] = static_cast<T>(value);
    }
    if (group.lane == 0) {
      mean_out[row] = static_cast<T>(mean);
      rstd_out[row] = static_cast<T>(rstd);
    }
  }
}

constexpr int kMaxLanePacks = 8;

// Whether rows of n elements, at these addresses (null: absent), take the packed kernels.
template <typename T>
bool packed_rows(std::int64_t n, std::initializer_list<const void*> pointers) {
  constexpr std::int64_t kRowPack = kVecOf<T> * kWarp;
  if (n == 0 || n % kRowPack != 0 || n / kRowPack > kMaxLanePacks) return false;
  for (const void* pointer : pointers) {
    if (pointer != nullptr && !aligned16(pointer)) return false;
  }
  return true;
}

// layer_norm_rows for packed rows (see the top of this file): warp rows only.
template <typename T>
__global__ void layer_norm_rows_packed(const T* x, const T* weight, const T* bias, T* y,
                                       T* mean_out, T* rstd_out, std::int64_t m, std::int64_t n,
                                       double eps) {
  constexpr int kVec = kVecOf<T>;
  using P = Pack<T, kVec>;
  const RowGroup<true> group;
  const int lane_packs = static_cast<int>(n / (kVec * kWarp));
  const P* weights = reinterpret_cast<const P*>(weight);
  const P* biases = reinterpret_cast<const P*>(bias);
  for (std::int64_t row = group.first; row < m; row += group.step) {
    const P* x_row = reinterpret_cast<const P*>(x + row * n);
    P* y_row = reinterpret_cast<P*>(y + row * n);
    P values[kMaxLanePacks];
    double sum = 0.0;
#pragma unroll
    for (int k = 0; k < kMaxLanePacks; ++k) {
      if (k >= lane_packs) break;
      values[k] = x_row[k * kWarp + group.lane];
      for (int e = 0; e < kVec; ++e) sum += values[k].values[e];
    }
    const double mean = group.sum(sum, nullptr) / static_cast<double>(n);
    double squares = 0.0;
#pragma unroll
    for (int k = 0; k < kMaxLanePacks; ++k) {
      if (k >= lane_packs) break;
      for (int e = 0; e < kVec; ++e) {
        const double centred = values[k].values[e] - mean;
        squares += centred * centred;
      }
    }
    const double rstd = 1.0 / ::sqrt(group.sum(squares, nullptr) / static_cast<double>(n) + eps);
#pragma unroll
    for (int k = 0; k < kMaxLanePacks; ++k) {
      if (k >= lane_packs) break;
      const int p = k * kWarp + group.lane;
      const P w = weights != nullptr ? weights[p] : P{};
      const P b = biases != nullptr ? biases[p] : P{};
      P out;
      for (int e = 0; e < kVec; ++e) {
        double value = (values[k].values[e] - mean) * rstd;
        if (weights != nullptr) value *= w.values[e];
        if (biases != nullptr) value += b.values[e];
        out.values[e] = static_cast<T>(value);
      }
      y_row[p] = out;
    }
    if (group.lane == 0) {
      mean_out[row] = static_cast<T>(mean);
      rstd_out[row] = static_cast<T>(rstd);
    }
  }
}

// input_grad_rows for packed rows: g and x held in registers between the two sweeps.
template <typename T>
__global__ void input_grad_rows_packed(const T* grad, const T* x, const T* mean_in,
                                       const T* rstd_in, const T* weight, T* grad_input,
                                       std::int64_t m, std::int64_t n) {
  constexpr int kVec = kVecOf<T>;
  using P = Pack<T, kVec>;
  const RowGroup<true> group;
  const int lane_packs = static_cast<int>(n / (kVec * kWarp));
  const P* weights = reinterpret_cast<const P*>(weight);
  for (std::int64_t row = group.first; row < m; row += group.step) {
    const P* g_row = reinterpret_cast<const P*>(grad + row * n);
    const P* x_row = reinterpret_cast<const P*>(x + row * n);
    P* out_row = reinterpret_cast<P*>(grad_input + row * n);
    const double mean = mean_in[row];
    const double rstd = rstd_in[row];
    P gw[kMaxLanePacks];  // g * weight, as T
    P xs[kMaxLanePacks];
    double sum_gw = 0.0, sum_gw_xhat = 0.0;
#pragma unroll
    for (int k = 0; k < kMaxLanePacks; ++k) {
      if (k >= lane_packs) break;
      const int p = k * kWarp + group.lane;
      gw[k] = g_row[p];
      xs[k] = x_row[p];
      const P w = weights != nullptr ? weights[p] : P{};
      for (int e = 0; e < kVec; ++e) {
        const double product =
            weights == nullptr ? double(gw[k].values[e]) : double(gw[k].values[e]) * w.values[e];
        sum_gw += product;
        sum_gw_xhat += product * (xs[k].values[e] - mean) * rstd;
      }
    }
    const double mean_gw = group.sum(sum_gw, nullptr) / static_cast<double>(n);
    const double mean_gw_xhat = group.sum(sum_gw_xhat, nullptr) / static_cast<double>(n);
#pragma unroll
    for (int k = 0; k < kMaxLanePacks; ++k) {
      if (k >= lane_packs) break;
      const int p = k * kWarp + group.lane;
      const P w = weights != nullptr ? weights[p] : P{};
      P out;
      for (int e = 0; e < kVec; ++e) {
        const double product =
            weights == nullptr ? double(gw[k].values[e]) : double(gw[k].values[e]) * w.values[e];
        const double xhat = (xs[k].values[e] - mean) * rstd;
        out.values[e] = static_cast<T>(rstd * (product - mean_gw - xhat * mean_gw_xhat));
      }
      out_row[p] = out;
    }
  }
}

// grad_input = rstd (gw - mean(gw) - xhat mean(gw xhat)), row by row.
template <typename T, bool kWarpRows>
__global__ void input_grad_rows(const T* grad, const T* x, const T* mean_in, const T* rstd_in,
                                const T* weight, T* grad_input, std::int64_t m, std::int64_t n) {
  __shared__ double shared[kThreads / kWarp];
  const RowGroup<kWarpRows> group;
  for (std::int64_t row = group.first; row < m; row += group.step) {
    const T* g = grad + row * n;
    const T* x_row = x + row * n;
    T* out = grad_input + row * n;
    const double mean = mean_in[row];
    const double rstd = rstd_in[row];
    double sum_gw = 0.0, sum_gw_xhat = 0.0;
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      const double gw = weight == nullptr ? double(g[j]) : double(g[j]) * weight[j];
      sum_gw += gw;
      sum_gw_xhat += gw * (x_row[j] - mean) * rstd;
    }
    const double mean_gw = group.sum(sum_gw, shared) / static_cast<double>(n);
    const double mean_gw_xhat = group.sum(sum_gw_xhat, shared) / static_cast<double>(n);
    for (std::int64_t j = group.lane; j < n; j += group.width) {
      const double gw = weight == nullptr ? double(g[j]) : double(g[j]) * weight[j];
      const double xhat = (x_row[j] - mean) * rstd;
      out[j] = static_cast<T>(rstd * (gw - mean_gw - xhat * mean_gw_xhat));
    }
  }
}

// Element (row, column) of grad_weight's and grad_bias's sums: g xhat and g.
template <typename T>
struct ParameterGradElement {
  const T* grad;
  const T* x;
  const T* mean;
  const T* rstd;
  std::int64_t n;
  __device__ void operator()(std::int64_t row, std::int64_t column, double (&values)[2]) const {
    const double g = grad[row * n + column];
    values[0] =
        g * (x[row * n + column] - static_cast<double>(mean[row])) * static_cast<double>(rstd[row]);
    values[1] = g;
  }
};

// Where the two sums of each column go.
template <typename T>
struct ParameterGradResult {
  T* grad_weight;
  T* grad_bias;
  __device__ void operator()(std::int64_t column, int k, double sum) const {
    (k == 0 ? grad_weight : grad_bias)[column] = static_cast<T>(sum);
  }
};

template <typename T>
void launch_layer_norm(const OpCall& call, const OpOutputs& outputs) {
  const NormInputs inputs = norm_inputs(call, outputs);
  const std::int64_t n = inputs.n, m = inputs.m;
  if (m == 0) return;
  const Device device = outputs[0].device();
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  const bool warp_rows = n <= kMaxWarpFeatures;
  auto kernel = warp_rows ? layer_norm_rows<T, true> : layer_norm_rows<T, false>;
  if (packed_rows<T>(n, {inputs.x.data_ptr(), data_or_null<T>(inputs.weight),
                         data_or_null<T>(inputs.bias), outputs[0].data_ptr()})) {
    kernel = layer_norm_rows_packed<T>;
  }
  kernel<<<row_group_blocks(m, warp_rows), kThreads, 0, stream>>>(
      static_cast<const T*>(inputs.x.data_ptr()), data_or_null<T>(inputs.weight),
      data_or_null<T>(inputs.bias), static_cast<T*>(outputs[0].data_ptr()),
      static_cast<T*>(outputs[1].data_ptr()), static_cast<T*>(outputs[2].data_ptr()), m, n,
      inputs.attributes.eps);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_layer_norm_backward(const OpCall& call, const OpOutputs& outputs) {
  const NormBackwardInputs inputs = norm_backward_inputs(call, /*statistics=*/2);
  const std::int64_t m = inputs.m;
  const std::int64_t n = inputs.n;
  const Device device = outputs[0].device();
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  const T* g = static_cast<const T*>(inputs.grad.data_ptr());
  const T* x_data = static_cast<const T*>(inputs.x.data_ptr());
  const T* mean_data = static_cast<const T*>(inputs.stats[0].data_ptr());
  const T* rstd_data = static_cast<const T*>(inputs.stats[1].data_ptr());
  if (m > 0 && n > 0) {
    const bool warp_rows = n <= kMaxWarpFeatures;
    auto kernel = warp_rows ? input_grad_rows<T, true> : input_grad_rows<T, false>;
    if (packed_rows<T>(n, {g, x_data, data_or_null<T>(inputs.weight), outputs[0].data_ptr()})) {
      kernel = input_grad_rows_packed<T>;
    }
    kernel<<<row_group_blocks(m, warp_rows), kThreads, 0, stream>>>(
        g, x_data, mean_data, rstd_data, data_or_null<T>(inputs.weight),
        static_cast<T*>(outputs[0].data_ptr()), m, n);
    GROVE_CUDA_CHECK(cudaGetLastError());
  }
  if (n == 0) return;
  // With m == 0 one split of no rows: the gradients are 0, as on the CPU.
  const ParameterGradResult<T> result{static_cast<T*>(outputs[1].data_ptr()),
                                      static_cast<T*>(outputs[2].data_ptr())};
  launch_column_sums<2, PlainSum>(ParameterGradElement<T>{g, x_data, mean_data, rstd_data, n}, m, n,
                                  device, stream, result);
}

}  // namespace

void layer_norm(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_layer_norm<T>(call, outputs); });
}

void layer_norm_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_layer_norm_backward<T>(call, outputs); });
}

}  // namespace grove::ops::cuda
