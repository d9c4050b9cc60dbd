// CPU kernel for layer_norm: one pass per row for the mean, one for the variance (two passes
// are exact where sum(x^2) - mean^2 cancels), one to write y; all sums in double; rows spread
// over threads, each row by one thread, so the results do not depend on the thread count.
//   x: (M, N) after flattening the batch dims into M rows and the normalised dims into N.
// A non-contiguous x, weight or bias is made contiguous first (a copy kernel on the same
// stream), so the row loop reads dense memory.
//
// layer_norm_backward works on the same (M, N) view, in two independent parts: grad_input row
// by row (each row needs its own two sums, mean(gw) and mean(gw xhat)), and grad_weight and
// grad_bias column by column (sums over the M rows). Rows, and blocks of columns, are spread
// over threads; each sum is computed by one thread in a fixed order, in double, so the results
// do not depend on the thread count.
#include "ops/cpu/layer_norm.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/attributes.h"
#include "ops/norm_inputs.h"

namespace grove::ops::cpu {
namespace {

// Below this many elements layer_norm_backward runs on one thread.
constexpr std::int64_t kMinParallelElements = std::int64_t{1} << 15;
// grad_weight and grad_bias are summed in blocks of this many columns, one thread per block.
constexpr std::int64_t kColumnBlock = 64;

// What layer_norm_backward captures: trivially copyable.
template <typename T>
struct LayerNormBackwardPlan {
  const T* grad = nullptr;    // (M, N), contiguous
  const T* x = nullptr;       // (M, N), contiguous
  const T* mean = nullptr;    // (M)
  const T* rstd = nullptr;    // (M)
  const T* weight = nullptr;  // (N), or null for ones
  T* grad_input = nullptr;    // (M, N)
  T* grad_weight = nullptr;   // (N)
  T* grad_bias = nullptr;     // (N)
  std::int64_t m = 0, n = 0;
};

// grad_input = rstd (gw - mean(gw) - xhat mean(gw xhat)), row by row.
template <typename T>
void input_grad_rows(const LayerNormBackwardPlan<T>& plan) {
#pragma omp parallel for schedule(static) if (plan.m * plan.n >= kMinParallelElements)
  for (std::int64_t row = 0; row < plan.m; ++row) {
    const T* g = plan.grad + row * plan.n;
    const T* x = plan.x + row * plan.n;
    T* out = plan.grad_input + row * plan.n;
    const double mean = plan.mean[row];
    const double rstd = plan.rstd[row];
    double sum_gw = 0.0, sum_gw_xhat = 0.0;
    for (std::int64_t j = 0; j < plan.n; ++j) {
      const double gw = plan.weight == nullptr ? g[j] : double(g[j]) * plan.weight[j];
      sum_gw += gw;
      sum_gw_xhat += gw * (x[j] - mean) * rstd;
    }
    const double mean_gw = sum_gw / static_cast<double>(plan.n);
    const double mean_gw_xhat = sum_gw_xhat / static_cast<double>(plan.n);
    for (std::int64_t j = 0; j < plan.n; ++j) {
      const double gw = plan.weight == nullptr ? g[j] : double(g[j]) * plan.weight[j];
      const double xhat = (x[j] - mean) * rstd;
      out[j] = static_cast<T>(rstd * (gw - mean_gw - xhat * mean_gw_xhat));
    }
  }
}

// grad_weight = sum over rows of g xhat, grad_bias = sum over rows of g; a block of columns per
// iteration, its rows in order.
template <typename T>
void parameter_grad_columns(const LayerNormBackwardPlan<T>& plan) {
  const std::int64_t blocks = (plan.n + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (plan.m * plan.n >= kMinParallelElements)
  for (std::int64_t block = 0; block < blocks; ++block) {
    const std::int64_t begin = block * kColumnBlock;
    const std::int64_t width = std::min(kColumnBlock, plan.n - begin);
    double weight_sums[kColumnBlock] = {};
    double bias_sums[kColumnBlock] = {};
    for (std::int64_t row = 0; row < plan.m; ++row) {
      const T* g = plan.grad + row * plan.n + begin;
      const T* x = plan.x + row * plan.n + begin;
      const double mean = plan.mean[row];
      const double rstd = plan.rstd[row];
      for (std::int64_t j = 0; j < width; ++j) {
        weight_sums[j] += g[j] * (x[j] - mean) * rstd;
        bias_sums[j] += g[j];
      }
    }
    for (std::int64_t j = 0; j < width; ++j) {
      plan.grad_weight[begin + j] = static_cast<T>(weight_sums[j]);
      plan.grad_bias[begin + j] = static_cast<T>(bias_sums[j]);
    }
  }
}

}  // namespace

void layer_norm(const OpCall& call, const OpOutputs& outputs) {
  const NormInputs inputs = norm_inputs(call, outputs);
  const Tensor& x = inputs.x;
  const std::int64_t n = inputs.n, m = inputs.m;
  if (m == 0) return;
  const double eps = inputs.attributes.eps;
  dispatch_floating(x.dtype(), "layer_norm", [&]<typename T>() {
    const T* in = static_cast<const T*>(x.data_ptr());
    const T* w =
        inputs.weight.defined() ? static_cast<const T*>(inputs.weight.data_ptr()) : nullptr;
    const T* b = inputs.bias.defined() ? static_cast<const T*>(inputs.bias.data_ptr()) : nullptr;
    T* y = static_cast<T*>(outputs[0].data_ptr());
    T* mean_out = static_cast<T*>(outputs[1].data_ptr());
    T* rstd_out = static_cast<T*>(outputs[2].data_ptr());
    launch_cpu(current_stream(x.device()), [=] {
#pragma omp parallel for schedule(static) if (m * n >= kMinParallelElements)
      for (std::int64_t row = 0; row < m; ++row) {
        const T* x_row = in + row * n;
        T* y_row = y + row * n;
        if (n == 0) {  // the mean of nothing
          mean_out[row] = rstd_out[row] = std::numeric_limits<T>::quiet_NaN();
          continue;
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j < n; ++j) sum += x_row[j];
        const double mean = sum / static_cast<double>(n);
        double squares = 0.0;
        for (std::int64_t j = 0; j < n; ++j) {
          const double centred = x_row[j] - mean;
          squares += centred * centred;
        }
        const double rstd = 1.0 / std::sqrt(squares / static_cast<double>(n) + eps);
        for (std::int64_t j = 0; j < n; ++j) {
          double value = (x_row[j] - mean) * rstd;
          if (w != nullptr) value *= w[j];
          if (b != nullptr) value += b[j];
          y_row[j] = static_cast<T>(value);
        }
        mean_out[row] = static_cast<T>(mean);
        rstd_out[row] = static_cast<T>(rstd);
      }
    });
  });
}

void layer_norm_backward(const OpCall& call, const OpOutputs& outputs) {
  // See Note [Scratch copies before a CPU kernel] in ops/cpu/linalg.h.
  const NormBackwardInputs inputs = norm_backward_inputs(call, /*statistics=*/2);
  dispatch_floating(inputs.x.dtype(), "layer_norm_backward", [&]<typename T>() {
    LayerNormBackwardPlan<T> plan;
    plan.grad = static_cast<const T*>(inputs.grad.data_ptr());
    plan.x = static_cast<const T*>(inputs.x.data_ptr());
    plan.mean = static_cast<const T*>(inputs.stats[0].data_ptr());
    plan.rstd = static_cast<const T*>(inputs.stats[1].data_ptr());
    plan.weight =
        inputs.weight.defined() ? static_cast<const T*>(inputs.weight.data_ptr()) : nullptr;
    plan.grad_input = static_cast<T*>(outputs[0].data_ptr());
    plan.grad_weight = static_cast<T*>(outputs[1].data_ptr());
    plan.grad_bias = static_cast<T*>(outputs[2].data_ptr());
    plan.m = inputs.m;
    plan.n = inputs.n;
    launch_cpu(current_stream(inputs.x.device()), [plan] {
      input_grad_rows(plan);
      parameter_grad_columns(plan);
    });
  });
}

}  // namespace grove::ops::cpu
