// The dispatch point: the one function every op goes through.
//
// An op's user function (ops::add, ops::matmul, ...) builds an OpCall (kind, inputs, attributes)
// and calls dispatch() with the op's OpEntry. dispatch():
//   1. checks what every op needs: as many inputs as it takes (input_count in op_table.h),
//      defined and on one device;
//   2. runs the entry's `infer`, which checks the op's own rules (dtypes, shapes, ranges) and
//      says what the outputs are; its errors name the op, the input shapes and dtypes;
//   3. allocates the outputs through the caching allocator (or, for in-place ops, returns
//      input 0 and bumps its version);
//   4. launches the device's kernel on the current stream (recorded while it captures);
//   5. tells the op observers about the call: autograd's, which records the backward graph,
//      and the calling thread's, such as a tracer; see Note [Op observers].
// Kernels for a device that has none yet fail with a clear error, never a crash.
//
// Note [Op observers]
// ~~~~~~~~~~~~~~~~~~~
// Autograd and tracing see every op through one interface instead of calls sprinkled over the
// ops: an OpObserver gets on_op(call, outputs) after each kernel launch, on the thread that
// called the op. It may attach data to the outputs (autograd's grad_fn) but must not change
// their values. In-place ops also call before_in_place(call) after the argument checks and
// before the kernel writes input 0: the last moment to refuse the write (autograd refuses
// in-place writes into leaves that require gradients) or to keep the old values.
// An observer sits in one of two places:
//   - autograd's slot, one for the process (set_autograd_op_observer, installed when the
//     program starts): it sees every op of every thread, and is called first;
//   - the calling thread's list (add_op_observer, OpObserverGuard): an observer sees the ops of
//     the thread that registered it and of no other, after autograd's, in registration order.
//     Tree managers and traces belong to one thread: a data-loader thread's ops must never
//     reach a trace being recorded on the main thread.
// Autograd has a process-wide slot rather than a registration per thread because gradients are
// recorded on every thread that runs ops, threads grove never sees start included; registering
// it lazily on each thread would cost the same per-op test and hide the rule in a side effect.
// Core's views, copies and writes reach the same two kinds of observer through core's own
// interface: Note [Core observers] in core/core_observer.h. Dispatch suspends core's reports
// while a kernel runs (the views a kernel makes of its inputs are not the user's); the op
// observers see the op as a whole.
// Registering is per thread and needs no lock; adding or removing an observer from inside a
// callback applies from the next op. With no observer anywhere the cost is one atomic load
// (autograd's slot) and one thread-local read per op; with autograd linked in, the recorder's
// on_op runs for every op and returns at once unless an input requires gradients.
#pragma once

#include <array>
#include <initializer_list>
#include <span>

#include "core/observer_list.h"
#include "core/rng.h"
#include "core/tensor.h"
#include "ops/op_kind.h"

namespace grove::ops {

// The non-tensor arguments of a call, in one copyable form (autograd and tracing keep them).
// Each op documents which fields it uses, next to its OpEntry.
struct OpAttributes {
  DimVector ints;                  // dims, sizes, kernel sizes, strides, paddings, indices
  std::array<double, 4> reals{};   // eps, probabilities, clamp bounds, exponents
  Scalar scalar;                   // scalar operand (add(x, 2)) or fill value
  bool has_scalar = false;         // binary op whose right operand is `scalar`
  bool flag = false;               // keepdim, training, approximate, ...
  DType dtype = DType::Float32;    // output dtype for factories
  Generator* generator = nullptr;  // random ops; null: the device's default generator
};

struct OpCall {
  OpKind kind;
  std::span<const Tensor> inputs;
  const OpAttributes& attributes;

  const Tensor& input(std::size_t i) const { return inputs[i]; }
};

// What `infer` decides: up to kMaxOutputs outputs with sizes and dtypes, or "in place".
struct OutputSpecs {
  static constexpr int kMaxOutputs = 3;
  struct Spec {
    DimVector sizes;
    DType dtype = DType::Float32;
  };
  std::array<Spec, kMaxOutputs> specs;
  int count = 0;
  bool in_place = false;  // the op writes input 0 and returns it
  Device device = kCPU;   // where outputs go (factories have no inputs to take it from)

  void add(IntArrayRef sizes, DType dtype) {
    specs[static_cast<std::size_t>(count)].sizes = sizes;
    specs[static_cast<std::size_t>(count)].dtype = dtype;
    ++count;
  }
};

// The results of one call: up to three tensors, without a heap allocation.
class OpOutputs {
 public:
  Tensor& operator[](std::size_t i) { return tensors_[i]; }
  const Tensor& operator[](std::size_t i) const { return tensors_[i]; }
  std::size_t size() const { return count_; }
  std::span<const Tensor> span() const { return {tensors_.data(), count_}; }
  void push_back(Tensor tensor) { tensors_[count_++] = std::move(tensor); }

 private:
  std::array<Tensor, OutputSpecs::kMaxOutputs> tensors_;
  std::size_t count_ = 0;
};

using InferFn = void (*)(const OpCall& call, OutputSpecs& outputs);
using KernelFn = void (*)(const OpCall& call, const OpOutputs& outputs);

struct OpEntry {
  OpKind kind;
  InferFn infer;
  KernelFn cpu;   // ops/cpu/
  KernelFn cuda;  // ops/cuda/ (null until the CUDA backend has it)
};

OpOutputs dispatch(const OpEntry& entry, std::span<const Tensor> inputs,
                   const OpAttributes& attributes);

// dispatch() for an op that is not in place, whose kernel writes output i into destinations[i]
// instead of a new tensor where that is defined (the others are allocated as usual); returns the
// outputs, the destinations among them (their versions bumped, as a write bumps them). A
// destination must have its output's sizes and dtype, be contiguous, live on the op's device and
// share no memory with the inputs or another destination (checked). The interpreter uses it to let
// an op write straight into the buffer that a later copy_ would have filled
// (Note [Writing into the copy's target] in graphs/ir/interpreter.h). It is meant for work
// recorded by no autograd: with grad mode on and an input that requires gradients, the
// destination, an existing tensor, would take the op's history (call it under NoGradGuard).
OpOutputs dispatch_into(const OpEntry& entry, std::span<const Tensor> inputs,
                        const OpAttributes& attributes, std::span<const Tensor> destinations);
// Output 0 into `destination`.
inline OpOutputs dispatch_into(const OpEntry& entry, std::span<const Tensor> inputs,
                               const OpAttributes& attributes, const Tensor& destination) {
  return dispatch_into(entry, inputs, attributes, std::span<const Tensor>(&destination, 1));
}
inline OpOutputs dispatch_into(const OpEntry& entry, std::initializer_list<Tensor> inputs,
                               const OpAttributes& attributes, const Tensor& destination) {
  return dispatch_into(entry, std::span<const Tensor>(inputs.begin(), inputs.size()), attributes,
                       destination);
}
inline OpOutputs dispatch_into(const OpEntry& entry, std::initializer_list<Tensor> inputs,
                               const OpAttributes& attributes,
                               std::span<const Tensor> destinations) {
  return dispatch_into(entry, std::span<const Tensor>(inputs.begin(), inputs.size()), attributes,
                       destinations);
}
inline OpOutputs dispatch(const OpEntry& entry, std::initializer_list<Tensor> inputs,
                          const OpAttributes& attributes = {}) {
  return dispatch(entry, std::span<const Tensor>(inputs.begin(), inputs.size()), attributes);
}

// "float32[2, 3], int64[5]": the inputs of a call, for error messages.
std::string describe_inputs(const OpCall& call);

// See Note [Op observers].
class OpObserver {
 public:
  virtual ~OpObserver() = default;
  virtual void on_op(const OpCall& call, const OpOutputs& outputs) = 0;
  // In-place ops only: called before the kernel overwrites input 0. May throw to refuse.
  virtual void before_in_place(const OpCall& /*call*/) {}
};

// Autograd's slot: null, or the one observer that sees every op of every thread. Set once by
// autograd when the program starts.
void set_autograd_op_observer(OpObserver* observer);

// Registers `observer` for the calling thread only (at most kMaxThreadObservers per thread);
// remove it on the same thread.
void add_op_observer(OpObserver* observer);
void remove_op_observer(OpObserver* observer);

// Registers an observer on this thread for the guard's lifetime.
class OpObserverGuard {
 public:
  explicit OpObserverGuard(OpObserver* observer) : observer_(observer) {
    add_op_observer(observer);
  }
  ~OpObserverGuard() { remove_op_observer(observer_); }
  OpObserverGuard(const OpObserverGuard&) = delete;
  OpObserverGuard& operator=(const OpObserverGuard&) = delete;

 private:
  OpObserver* observer_;
};

}  // namespace grove::ops

// Checks an op's own rule inside `infer`; the error names the op and describes its inputs:
//   GROVE_OP_CHECK(call, a.dim() == 2, "expected a 2-d input, but got ", a.dim(), " dims");
#define GROVE_OP_CHECK(call, cond, ...)                                    \
  GROVE_CHECK(cond, ::grove::ops::op_name((call).kind), ": ", __VA_ARGS__, \
              " (inputs: ", ::grove::ops::describe_inputs(call), ")")
