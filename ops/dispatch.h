// The dispatch point: the one function every op goes through.
//
// An op's user function (ops::add, ops::matmul, ...) builds an OpCall (kind, inputs, attributes)
// and calls dispatch() with the op's OpEntry. dispatch():
//   1. checks what every op needs: as many inputs as it takes (OpEntry::count_inputs),
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
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>

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

// How many tensor inputs a call takes: min to max, both included.
struct InputCount {
  static constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();
  std::size_t min = 0;
  std::size_t max = 0;
  static constexpr InputCount exactly(std::size_t count) { return {count, count}; }
};

// Which dtypes an input of an op takes: the contract its kernels are written for. `infer`
// enforces it with the op's own message; the entry states it, for readers, for the tests that
// drive every op (tests/misuse/op_table_misuse_test.cpp) and for adding a dtype.
enum class InputDTypes : std::uint8_t {
  Floating,    // float32, float64, bfloat16 or float16: the op's compute dtype, one for all its
               // Floating and Numeric inputs
  Numeric,     // any dtype but bool (integers too): the op's compute dtype, as Floating
  Index,       // int64 indices or class targets
  Mask,        // bool: a condition or a mask
  AnyShared,   // any dtype, bool included: one for all the op's AnyShared inputs (cat's tensors)
  Any,         // any dtype, bool included, not tied to the other inputs (copy_'s source, sum's
               // input, the collectives')
  Count,       // a one-element tensor of any numeric dtype holding a count (adamw_'s step) or a
               // flag (the loss scaler's found_inf)
  Statistics,  // values a forward saved for its backward (a log-sum-exp, a mean) and a loss's
               // gradient, in compute_dtype of the op's Floating inputs (core/dtype.h): float32
               // for 16 bits
};

// One input of an op, as its header documents it.
struct InputSpec {
  const char* name;
  InputDTypes dtypes = InputDTypes::Floating;
  bool optional = false;  // may be left out; optional inputs come last
};

using InferFn = void (*)(const OpCall& call, OutputSpecs& outputs);
using KernelFn = void (*)(const OpCall& call, const OpOutputs& outputs);
using InputCountFn = InputCount (*)(const OpAttributes& attributes);
using DescribeFn = std::string (*)(const OpAttributes& attributes);
using WritesFn = std::size_t (*)(const OpAttributes& attributes);

// Everything grove knows about one op, in one place: its inputs, its rules, its kernels and how
// its attributes print. Each family writes its entries in ops/<family>.cpp and lists them at
// the end of that file; the op table (ops/op_table.h) finds one by kind. The recipe for a new op
// is in ops/op_kind.h. Outside the entry, by design: the derivative rule (autograd/, a layer
// above; autograd/derivatives.cpp finds it by kind) and the sample call the tests replay
// (tests/misuse/op_samples.h); tests check that every op has both.
struct OpEntry {
  OpKind kind;
  // The inputs in order, with every optional one given. Ops over lists repeat a layout: cat
  // takes any number of `tensors` (repeats_last_input); sgd_ and adamw_ over n parameters take
  // n of each per-parameter input, in the order of ops/optim.h (their input_count says how
  // many).
  std::span<const InputSpec> inputs;
  InferFn infer;  // the op's own checks, then its outputs' sizes and dtypes (or in place)
  KernelFn cpu;   // ops/cpu/<family>.cpp
  KernelFn cuda;  // ops/cuda/<family>.cu (null: no CUDA kernel yet; dispatch says so)
  // The attributes of a call as the IR printer and error messages show them ("dim=-1");
  // null: the op takes no attributes.
  DescribeFn describe = nullptr;
  // How many inputs a call takes when the attributes decide (a binary op with a scalar
  // right operand takes one); null: from `inputs`, leaving out any optional ones.
  InputCountFn input_count = nullptr;
  // In-place ops that write more than input 0 (sgd_ and adamw_ over n parameters write
  // inputs [0, n)); null: input 0 only.
  WritesFn in_place_writes = nullptr;
  bool repeats_last_input = false;  // cat: any number of inputs like the last one
  // Whether each kernel takes bfloat16 and float16 tensors as they are; one that does not is
  // handed float32 copies (Note [Reduced-precision compute] in ops/reduced_compute.h).
  bool cpu_takes_reduced = false;
  bool cuda_takes_reduced = false;

  // The number of inputs a call with these attributes takes (dispatch checks it first, so that
  // no `infer` reads an input that is not there).
  InputCount count_inputs(const OpAttributes& attributes) const;
  // How many leading inputs an in-place call writes (1 but for the optimizers).
  std::size_t writes(const OpAttributes& attributes) const;
  // The attributes printed ("" when the op has none).
  std::string describe_attributes(const OpAttributes& attributes) const;
  // What input i takes (a list op's later inputs repeat the layout's last).
  const InputSpec& input(std::size_t i) const;
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
