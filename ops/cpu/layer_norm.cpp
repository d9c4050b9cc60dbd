// CPU kernel for layer_norm: one pass per row for the mean, one for the variance (two passes
// are exact where sum(x^2) - mean^2 cancels), one to write y; all sums in double.
//   x: (M, N) after flattening the batch dims into M rows and the normalised dims into N.
// A non-contiguous x, weight or bias is made contiguous first (a copy kernel on the same
// stream), so the row loop reads dense memory.
#include "ops/cpu/layer_norm.h"

#include <cmath>
#include <limits>

namespace grove::ops::cpu {

void layer_norm(const OpCall& call, const OpOutputs& outputs) {
  const bool has_weight = call.attributes.flag;
  const std::size_t bias_index = has_weight ? 2 : 1;
  const Tensor x = call.input(0).contiguous();
  const Tensor weight = has_weight ? call.input(1).contiguous() : Tensor();
  const Tensor bias =
      call.inputs.size() > bias_index ? call.input(bias_index).contiguous() : Tensor();
  const std::int64_t n = product(call.attributes.ints);  // N: elements per row
  const std::int64_t m = outputs[1].numel();             // M: rows
  if (m == 0) return;
  const double eps = call.attributes.reals[0];
  GROVE_DISPATCH_DTYPE(x.dtype(), "layer_norm", [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) {
      const T* in = static_cast<const T*>(x.data_ptr());
      const T* w = weight.defined() ? static_cast<const T*>(weight.data_ptr()) : nullptr;
      const T* b = bias.defined() ? static_cast<const T*>(bias.data_ptr()) : nullptr;
      T* y = static_cast<T*>(outputs[0].data_ptr());
      T* mean_out = static_cast<T*>(outputs[1].data_ptr());
      T* rstd_out = static_cast<T*>(outputs[2].data_ptr());
      launch_cpu(current_stream(x.device()), [=] {
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
    }
  });
}

}  // namespace grove::ops::cpu
