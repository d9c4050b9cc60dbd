// CPU kernel for rms_norm: per row, one pass for the mean of squares and one to write y; sums in
// double; rows spread over threads, each row by one thread, so the results do not depend on the
// thread count.
//   x: (M, N) after flattening the batch dims into M rows and the normalised dims into N.
// Inputs are made contiguous first (Note [Scratch copies before a CPU kernel] in
// ops/cpu/linalg.h), so the loops read dense memory.
//
// rms_norm_backward works on the same (M, N) view in two independent parts, as layer_norm's:
// grad_input row by row (each row needs mean(gw xhat)) and grad_weight column by column (sums
// over the M rows, a block of columns per thread).
#include "ops/cpu/rms_norm.h"

#include <algorithm>
#include <cmath>

#include "ops/attributes.h"
#include "ops/norm_inputs.h"

namespace grove::ops::cpu {
namespace {

// Below this many elements the kernels run on one thread.
constexpr std::int64_t kMinParallelElements = std::int64_t{1} << 15;
// grad_weight is summed in blocks of this many columns, one thread per block.
constexpr std::int64_t kColumnBlock = 64;

// What rms_norm_backward captures: trivially copyable.
template <typename T>
struct RmsNormBackwardPlan {
  const T* grad = nullptr;    // (M, N), contiguous
  const T* x = nullptr;       // (M, N), contiguous
  const T* rrms = nullptr;    // (M)
  const T* weight = nullptr;  // (N), or null for ones
  T* grad_input = nullptr;    // (M, N)
  T* grad_weight = nullptr;   // (N)
  std::int64_t m = 0, n = 0;
};

// grad_input = rrms (gw - xhat mean(gw xhat)), row by row.
template <typename T>
void input_grad_rows(const RmsNormBackwardPlan<T>& plan) {
#pragma omp parallel for schedule(static) if (plan.m * plan.n >= kMinParallelElements)
  for (std::int64_t row = 0; row < plan.m; ++row) {
    const T* g = plan.grad + row * plan.n;
    const T* x = plan.x + row * plan.n;
    T* out = plan.grad_input + row * plan.n;
    const double rrms = plan.rrms[row];
    double sum_gw_xhat = 0.0;
    for (std::int64_t j = 0; j < plan.n; ++j) {
      const double gw = plan.weight == nullptr ? g[j] : double(g[j]) * plan.weight[j];
      sum_gw_xhat += gw * x[j] * rrms;
    }
    const double mean_gw_xhat = sum_gw_xhat / static_cast<double>(plan.n);
    for (std::int64_t j = 0; j < plan.n; ++j) {
      const double gw = plan.weight == nullptr ? g[j] : double(g[j]) * plan.weight[j];
      out[j] = static_cast<T>(rrms * (gw - x[j] * rrms * mean_gw_xhat));
    }
  }
}

// grad_weight = sum over rows of g xhat; a block of columns per iteration, its rows in order.
template <typename T>
void weight_grad_columns(const RmsNormBackwardPlan<T>& plan) {
  const std::int64_t blocks = (plan.n + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (plan.m * plan.n >= kMinParallelElements)
  for (std::int64_t block = 0; block < blocks; ++block) {
    const std::int64_t begin = block * kColumnBlock;
    const std::int64_t width = std::min(kColumnBlock, plan.n - begin);
    double sums[kColumnBlock] = {};
    for (std::int64_t row = 0; row < plan.m; ++row) {
      const T* g = plan.grad + row * plan.n + begin;
      const T* x = plan.x + row * plan.n + begin;
      const double rrms = plan.rrms[row];
      for (std::int64_t j = 0; j < width; ++j) sums[j] += g[j] * (x[j] * rrms);
    }
    for (std::int64_t j = 0; j < width; ++j) plan.grad_weight[begin + j] = static_cast<T>(sums[j]);
  }
}

}  // namespace

void rms_norm(const OpCall& call, const OpOutputs& outputs) {
  const NormInputs inputs = norm_inputs(call, outputs);
  const Tensor& x = inputs.x;
  const std::int64_t n = inputs.n, m = inputs.m;
  if (m == 0) return;
  const double eps = inputs.attributes.eps;
  dispatch_floating(x.dtype(), "rms_norm", [&]<typename T>() {
    const T* in = static_cast<const T*>(x.data_ptr());
    const T* w =
        inputs.weight.defined() ? static_cast<const T*>(inputs.weight.data_ptr()) : nullptr;
    T* y = static_cast<T*>(outputs[0].data_ptr());
    T* rrms_out = static_cast<T*>(outputs[1].data_ptr());
    launch_cpu(current_stream(x.device()), [=] {
#pragma omp parallel for schedule(static) if (m * n >= kMinParallelElements)
      for (std::int64_t row = 0; row < m; ++row) {
        const T* x_row = in + row * n;
        T* y_row = y + row * n;
        double squares = 0.0;
        for (std::int64_t j = 0; j < n; ++j) squares += double(x_row[j]) * x_row[j];
        // A row of no elements: the mean of no squares is taken as 0.
        const double mean_square = n == 0 ? 0.0 : squares / static_cast<double>(n);
        const double rrms = 1.0 / std::sqrt(mean_square + eps);
        for (std::int64_t j = 0; j < n; ++j) {
          double value = x_row[j] * rrms;
          if (w != nullptr) value *= w[j];
          y_row[j] = static_cast<T>(value);
        }
        rrms_out[row] = static_cast<T>(rrms);
      }
    });
  });
}

void rms_norm_backward(const OpCall& call, const OpOutputs& outputs) {
  const NormBackwardInputs inputs = norm_backward_inputs(call, /*statistics=*/1);
  dispatch_floating(inputs.x.dtype(), "rms_norm_backward", [&]<typename T>() {
    RmsNormBackwardPlan<T> plan;
    plan.grad = static_cast<const T*>(inputs.grad.data_ptr());
    plan.x = static_cast<const T*>(inputs.x.data_ptr());
    plan.rrms = static_cast<const T*>(inputs.stats[0].data_ptr());
    plan.weight =
        inputs.weight.defined() ? static_cast<const T*>(inputs.weight.data_ptr()) : nullptr;
    plan.grad_input = static_cast<T*>(outputs[0].data_ptr());
    plan.grad_weight = static_cast<T*>(outputs[1].data_ptr());
    plan.m = inputs.m;
    plan.n = inputs.n;
    launch_cpu(current_stream(inputs.x.device()), [plan] {
      input_grad_rows(plan);
      weight_grad_columns(plan);
    });
  });
}

}  // namespace grove::ops::cpu
