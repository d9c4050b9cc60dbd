// gradcheck: numerical and analytical Jacobians, compared element by element.
#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "core/error.h"

namespace grove::autograd {
namespace {

// Storage element (in units of double) of logical element `flat` (row-major).
std::int64_t storage_index(const Tensor& tensor, std::int64_t flat) {
  std::int64_t index = tensor.storage_offset();
  for (std::int64_t d = tensor.dim() - 1; d >= 0; --d) {
    const std::int64_t size = tensor.size(d);
    index += (flat % size) * tensor.stride(d);
    flat /= size;
  }
  return index;
}

std::string index_string(IntArrayRef sizes, std::int64_t flat) {
  DimVector index(sizes.size());
  for (std::int64_t d = static_cast<std::int64_t>(sizes.size()) - 1; d >= 0; --d) {
    const auto u = static_cast<std::size_t>(d);
    index[u] = flat % sizes[u];
    flat /= sizes[u];
  }
  std::ostringstream out;
  out << IntArrayRef(index);
  return out.str();
}

std::vector<double> evaluate(const GradcheckFn& fn, const std::vector<Tensor>& inputs) {
  const NoGradGuard no_grad;
  return fn(inputs).contiguous().to_vector<double>();
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options) {
  std::vector<std::size_t> checked;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& input = inputs[k];
    if (!input.defined() || !input.requires_grad()) continue;
    GROVE_CHECK(input.dtype() == DType::Float64, "gradcheck: input ", k,
                " must be float64 to be checked, but it is ", input.dtype());
    GROVE_CHECK(!has_internal_overlap(input.sizes(), input.strides()), "gradcheck: input ", k,
                " is an expanded view (strides ", input.strides(),
                "); pass a tensor whose elements have their own memory");
    checked.push_back(k);
  }
  GROVE_CHECK(!checked.empty(), "gradcheck: no input requires gradients");

  const Tensor output = fn(inputs);
  GROVE_CHECK(output.dtype() == DType::Float64, "gradcheck: the function must return float64, ",
              "but returned ", output.dtype());
  GROVE_CHECK(output.requires_grad(), "gradcheck: the output does not require gradients");
  const std::int64_t num_outputs = output.numel();

  // Analytical: row i of each input's Jacobian is the gradient for output gradient e_i.
  std::vector<Tensor> checked_inputs;
  for (std::size_t k : checked) checked_inputs.push_back(inputs[k]);
  std::vector<std::vector<double>> analytical(checked.size());  // [input][i * n_in + j]
  for (std::size_t c = 0; c < checked.size(); ++c) {
    analytical[c].assign(static_cast<std::size_t>(num_outputs * inputs[checked[c]].numel()), 0.0);
  }
  for (std::int64_t i = 0; i < num_outputs; ++i) {
    Tensor unit = zeros(output.sizes(), TensorOptions(DType::Float64).device(output.device()));
    unit.view({-1}).select(0, i).fill_(1.0);
    std::vector<Tensor> grads =
        grad({output}, checked_inputs, {unit}, {.retain_graph = true, .allow_unused = true});
    for (std::size_t c = 0; c < checked.size(); ++c) {
      if (!grads[c].defined()) continue;  // zero row
      const std::vector<double> row = grads[c].contiguous().to_vector<double>();
      std::copy(row.begin(), row.end(),
                analytical[c].begin() +
                    static_cast<std::ptrdiff_t>(i) * static_cast<std::ptrdiff_t>(row.size()));
    }
  }

  // Numerical: column j from central differences, perturbing the input's memory in place
  // through a one-element view of a detached alias (no autograd history), filled on the input's
  // device: the same code serves CPU and CUDA inputs.
  GradcheckResult result;
  for (std::size_t c = 0; c < checked.size(); ++c) {
    const Tensor& input = inputs[checked[c]];
    const std::int64_t num_inputs = input.numel();
    const Tensor alias = input.detach();
    const std::vector<double> saved_values = input.detach().contiguous().to_vector<double>();
    std::int64_t bad = 0;
    double worst_excess = 0.0;
    std::string worst;
    for (std::int64_t j = 0; j < num_inputs; ++j) {
      const Tensor element = alias.as_strided({}, {}, storage_index(input, j));
      const double saved = saved_values[static_cast<std::size_t>(j)];
      element.fill_(saved + options.eps);
      const std::vector<double> plus = evaluate(fn, inputs);
      element.fill_(saved - options.eps);
      const std::vector<double> minus = evaluate(fn, inputs);
      element.fill_(saved);
      for (std::int64_t i = 0; i < num_outputs; ++i) {
        const auto u = static_cast<std::size_t>(i);
        const double numerical = (plus[u] - minus[u]) / (2.0 * options.eps);
        const double analytic = analytical[c][static_cast<std::size_t>(i * num_inputs + j)];
        const double allowed = options.atol + options.rtol * std::abs(numerical);
        const double difference = std::abs(numerical - analytic);
        if (!(difference <= allowed)) {  // also catches NaN
          ++bad;
          const double excess = std::isnan(difference) ? INFINITY : difference - allowed;
          if (excess >= worst_excess) {
            worst_excess = excess;
            std::ostringstream out;
            out << "input " << checked[c] << " (" << input.dtype() << input.sizes() << "), element "
                << index_string(input.sizes(), j) << ", output element "
                << index_string(output.sizes(), i) << ": numerical " << numerical
                << " vs analytical " << analytic << " (|difference| " << difference << " > allowed "
                << allowed << ")";
            worst = out.str();
          }
        }
      }
    }
    if (bad > 0) {
      result.ok = false;
      std::ostringstream out;
      out << "gradcheck failed: " << bad << " of " << num_outputs * num_inputs
          << " Jacobian entries of input " << checked[c] << " are off; worst: " << worst << "\n";
      result.report += out.str();
    }
  }
  return result;
}

}  // namespace grove::autograd
