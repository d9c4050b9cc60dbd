// The derivative table (gathered from the families' lists) and helpers shared by the rules.
#include "autograd/derivatives.h"

#include <array>
#include <optional>

#include "core/error.h"
#include "ops/reduce.h"

namespace grove::autograd {
namespace {

constexpr auto kNumOps = static_cast<std::size_t>(ops::OpKind::Count);

struct Table {
  std::array<std::optional<DerivativeRule>, kNumOps> rules;

  Table() {
    for (auto family : {elementwise_rules(), inplace_rules(), reduce_rules(), linalg_rules(),
                        nn_rules(), shape_rules()}) {
      for (const DerivativeRule& rule : family) {
        auto& slot = rules[static_cast<std::size_t>(rule.kind)];
        GROVE_INTERNAL_ASSERT(!slot.has_value(), "two derivative rules for ", rule.kind);
        GROVE_INTERNAL_ASSERT(
            (rule.differentiability == Differentiability::Rule) == (rule.backward != nullptr),
            "the rule for ", rule.kind, " must have a backward exactly when it is differentiable");
        slot = rule;
      }
    }
  }
};

}  // namespace

const DerivativeRule& derivative_rule(ops::OpKind kind) {
  static const Table table;
  const auto& slot = table.rules[static_cast<std::size_t>(kind)];
  GROVE_INTERNAL_ASSERT(slot.has_value(), "op ", kind,
                        " has no entry in the derivative table; add one to autograd/rules_*.cpp");
  return *slot;
}

const Tensor& BackwardContext::input(std::size_t i) const {
  GROVE_INTERNAL_ASSERT(i < saved_inputs.size() && saved_inputs[i].defined(),
                        "a derivative rule read input ", i, ", which it did not save");
  return saved_inputs[i];
}

const Tensor& BackwardContext::output(std::size_t i) const {
  GROVE_INTERNAL_ASSERT(i < saved_outputs.size() && saved_outputs[i].defined(),
                        "a derivative rule read output ", i, ", which it did not save");
  return saved_outputs[i];
}

// grad has the broadcast shape; `sizes` lines up with its trailing dims. Sum over the leading
// dims and over the dims where `sizes` is 1 and grad is not, keeping dims, then view as sizes.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes) {
  if (grad.sizes() == sizes) return grad;
  const std::int64_t leading = grad.dim() - static_cast<std::int64_t>(sizes.size());
  GROVE_INTERNAL_ASSERT(leading >= 0, "sum_to: a gradient of shape ", grad.sizes(),
                        " cannot come from broadcasting shape ", sizes);
  DimVector dims;
  for (std::int64_t d = 0; d < grad.dim(); ++d) {
    if (d < leading) {
      dims.push_back(d);
      continue;
    }
    const std::int64_t want = sizes[static_cast<std::size_t>(d - leading)];
    if (want == grad.size(d)) continue;
    GROVE_INTERNAL_ASSERT(want == 1, "sum_to: a gradient of shape ", grad.sizes(),
                          " cannot come from broadcasting shape ", sizes);
    dims.push_back(d);
  }
  if (dims.empty()) return grad.reshape(sizes);
  return ops::sum(grad, dims, /*keepdim=*/true).reshape(sizes);
}

}  // namespace grove::autograd
