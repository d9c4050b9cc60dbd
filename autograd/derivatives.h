// Derivative rules: one per op, in the order of ops/op_kind.h.
//
// A rule says what the op's backward needs (which inputs and outputs to save) and computes
// the gradients of the inputs from the gradient of the output with ops, so that a backward
// pass is itself a sequence of op calls (it can run eagerly, be traced and be captured). Each
// rule is headed by its math, as in PyTorch's derivatives.yaml.
//
// Conventions every rule may rely on (OpNode enforces them):
//   - grad is the gradient of output 0, defined, with output 0's shape. Every op with several
//     outputs has only output 0 differentiable (the others are indices, masks or statistics).
//   - A rule may return a gradient in the broadcast shape of the op: OpNode sums it back to
//     the input's shape (see sum_to). It must return the input's dtype.
//   - Gradients of inputs that need none (ctx.needs(i) false) may be left undefined, and
//     should be, to save work.
//   - The scalar variant of an op (attributes.has_scalar: mul(x, 2)) saves no inputs; its rule
//     reads the scalar from the attributes.
//   - For in-place ops, saved input 0 is the target as it was before the op wrote it (kept
//     only when the rule says keeps_old_self), and output 0 is the target after.
//
// Ops fall into three kinds: differentiable (a rule), never differentiable (comparisons,
// argmax, random factories, one_hot: their outputs never require gradients), and ops without a
// rule (the backward ops themselves: grove does not compute gradients of gradients), which
// throw if asked to record a graph.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "autograd/node.h"
#include "ops/dispatch.h"

namespace grove::autograd {

struct BackwardContext {
  const ops::OpAttributes& attributes;
  std::span<const Tensor> saved_inputs;      // undefined where the rule did not ask
  std::span<const Tensor> saved_outputs;     // undefined where the rule did not ask
  std::span<const TensorMeta> inputs;        // every input's shape, dtype and device
  const Tensor& grad;                        // gradient of output 0
  std::span<const std::uint8_t> needs_grad;  // per input: 1 if its gradient is wanted

  bool needs(std::size_t i) const { return i < needs_grad.size() && needs_grad[i] != 0; }
  const Tensor& input(std::size_t i) const;   // a saved input (asserts it was saved)
  const Tensor& output(std::size_t i) const;  // a saved output
};

// One gradient per input, pre-sized by the caller; rules fill those they compute.
using InputGrads = std::vector<Tensor>;
using BackwardFn = void (*)(const BackwardContext& ctx, InputGrads& grads);

enum class Differentiability : std::uint8_t { Rule, Never, NoRule };

struct DerivativeRule {
  static constexpr std::uint8_t kAll = 0xff;

  ops::OpKind kind;
  Differentiability differentiability = Differentiability::Rule;
  std::uint8_t saved_inputs = 0;   // bit i: save input i (kAll: every input)
  std::uint8_t saved_outputs = 0;  // bit i: save output i
  bool keeps_old_self = false;     // in-place ops whose backward needs the target's old values
  BackwardFn backward = nullptr;
  // needed_by[i] (inputs 0-3): the inputs whose gradients need saved input i; it is saved only
  // if one of them requires gradients (mul's x is needed only for dw). 0: whenever saved.
  std::array<std::uint8_t, 4> needed_by{};

  bool saves_input(std::size_t i) const {
    return saved_inputs == kAll || (i < 8 && ((saved_inputs >> i) & 1U) != 0);
  }
  // Whether input i must be saved, given which inputs' gradients are wanted (bit j: input j).
  bool must_save_input(std::size_t i, std::uint32_t wanted) const {
    if (!saves_input(i)) return false;
    return i >= needed_by.size() || needed_by[i] == 0 || (needed_by[i] & wanted) != 0;
  }
  bool saves_output(std::size_t i) const { return i < 8 && ((saved_outputs >> i) & 1U) != 0; }
};

// The rule of every op (the table covers every OpKind; a test checks it).
const DerivativeRule& derivative_rule(ops::OpKind kind);

// Sums `grad` over the dims that were broadcast to make it from a tensor of shape `sizes`.
Tensor sum_to(const Tensor& grad, IntArrayRef sizes);

// The families' rule lists (autograd/rules_<family>.cpp), gathered by derivative_rule().
std::span<const DerivativeRule> elementwise_rules();
std::span<const DerivativeRule> inplace_rules();
std::span<const DerivativeRule> reduce_rules();
std::span<const DerivativeRule> linalg_rules();
std::span<const DerivativeRule> nn_rules();  // softmax, losses, layer_norm, embedding, conv, pool
std::span<const DerivativeRule> shape_rules();  // shape and random ops

}  // namespace grove::autograd
