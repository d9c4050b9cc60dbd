// dispatch(): the common checks, output allocation, kernel launch and observers of every op.
#include "ops/dispatch.h"

#include <atomic>
#include <sstream>

#include "core/core_observer.h"
#include "core/host_reads.h"
#include "core/observer_list.h"
#include "ops/autocast.h"
#include "ops/op_table.h"
#include "ops/reduced_compute.h"

namespace grove::ops {
namespace {

// See Note [Op observers].
std::atomic<OpObserver*> autograd_observer{nullptr};
thread_local constinit ThreadObserverList<OpObserver> thread_observers;

// Calls `notify` on autograd's observer and then on a copy of this thread's list (so that a
// callback may add or remove observers).
template <typename Notify>
void notify_observers(Notify notify) {
  if (OpObserver* observer = autograd_observer.load(std::memory_order_acquire)) {
    notify(*observer);
  }
  if (!thread_observers.empty()) [[unlikely]] {
    const ThreadObserverList<OpObserver> list = thread_observers;
    for (OpObserver* observer : list.observers()) notify(*observer);
  }
}

constexpr std::string_view kOpNames[] = {
#define GROVE_OP_NAME(kind, name) name,
    GROVE_OPS(GROVE_OP_NAME)
#undef GROVE_OP_NAME
};

// "float32[2, 3] (strided) on cuda:0"
std::string describe_tensor(const Tensor& tensor) {
  std::ostringstream out;
  out << tensor.dtype() << tensor.sizes() << (tensor.is_contiguous() ? "" : " (strided)");
  out << " on " << tensor.device();
  return out.str();
}

}  // namespace

std::string_view op_name(OpKind kind) {
  const auto index = static_cast<std::size_t>(kind);
  return index < std::size(kOpNames) ? kOpNames[index] : "unknown op";
}

std::ostream& operator<<(std::ostream& out, OpKind kind) {
  return out << op_name(kind);
}

std::string describe_inputs(const OpCall& call) {
  std::ostringstream out;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& input = call.inputs[i];
    if (i > 0) out << ", ";
    if (!input.defined()) {
      out << "undefined";
    } else {
      out << input.dtype() << input.sizes();
      if (!input.device().is_cpu()) out << " on " << input.device();
    }
  }
  if (call.attributes.has_scalar)
    out << (call.inputs.empty() ? "" : ", ") << "scalar " << call.attributes.scalar;
  return out.str();
}

void set_autograd_op_observer(OpObserver* observer) {
  autograd_observer.store(observer, std::memory_order_release);
}

void add_op_observer(OpObserver* observer) {
  thread_observers.add(observer, "add_op_observer");
  detail::autocast_forget_casts();  // see Note [Autocast]
}

void remove_op_observer(OpObserver* observer) {
  thread_observers.remove(observer, "remove_op_observer");
  detail::autocast_forget_casts();
}

namespace {

// dispatch() and dispatch_into(): `destinations` is empty for the first.
OpOutputs dispatch_impl(const OpEntry& entry, std::span<const Tensor> inputs,
                        const OpAttributes& attributes, std::span<const Tensor> destinations) {
  const OpCall call{entry.kind, inputs, attributes};
  // The op's checks and kernel take raw pointers (Note [Host reads during a trace]).
  const InternalDataAccess internal;
  // 1. What every op needs: as many inputs as it takes, defined and on one device.
  const InputCount count = entry.count_inputs(attributes);
  if (inputs.size() < count.min || inputs.size() > count.max) [[unlikely]] {
    const std::string expected = count.min == count.max ? str(count.min)
                                 : count.max == InputCount::kAny
                                     ? str(count.min, " or more")
                                     : str(count.min, " to ", count.max);
    GROVE_OP_CHECK(call, false, "expected ", expected, " tensor inputs, but got ", inputs.size(),
                   " (the op's header lists what it takes)");
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    GROVE_OP_CHECK(call, inputs[i].defined(), "input ", i, " is undefined");
    GROVE_OP_CHECK(call, inputs[i].device() == inputs[0].device(),
                   "expected all inputs on one device, but input 0 is on ", inputs[0].device(),
                   " and input ", i, " is on ", inputs[i].device());
  }
  // 2. Autocast's casts, when a guard is on (Note [Autocast] in ops/autocast.h): the call is
  //    made again with the cast inputs, which autocast then leaves as they are.
  if (autocast_dtype()) [[unlikely]] {
    const std::vector<Tensor> cast = detail::autocast_inputs(entry, inputs);
    if (!cast.empty()) return dispatch_impl(entry, cast, attributes, destinations);
  }
  // 3. The op's own rules and its outputs.
  OutputSpecs specs;
  if (!inputs.empty()) specs.device = inputs[0].device();
  entry.infer(call, specs);
  // 4. Outputs.
  OpOutputs outputs;
  std::size_t written = 0;  // inputs written in place: [0, written)
  if (specs.in_place) {
    GROVE_OP_CHECK(call, destinations.empty(),
                   "dispatch_into: the op writes its first input in place; it takes no "
                   "destination");
    written = entry.writes(attributes);  // 1 but for optimizers
    for (std::size_t w = 0; w < written; ++w) {
      const Tensor& target = inputs[w];
      // Names the input in a message, when the op writes several; built only on failure.
      auto which = [&] { return written > 1 ? str("input ", w, ", ") : std::string(); };
      for (std::int64_t d = 0; d < target.dim(); ++d) {
        GROVE_OP_CHECK(call, target.strides()[d] != 0 || target.sizes()[d] <= 1,
                       "cannot write in place into a broadcast (expanded) view: ", which(),
                       "dimension ", d, " has stride 0; clone() it first");
      }
      GROVE_OP_CHECK(call, !has_internal_overlap(target.sizes(), target.strides()),
                     "cannot write in place into a tensor whose elements share memory locations "
                     "(",
                     which(), "strides ", target.strides(),
                     "); the result would depend on the order of the writes. clone() it first");
    }
    notify_observers([&](OpObserver& observer) { observer.before_in_place(call); });
    outputs.push_back(inputs[0]);
  } else {
    GROVE_OP_CHECK(call, destinations.size() <= static_cast<std::size_t>(specs.count),
                   "dispatch_into: the op has ", specs.count, " outputs, but got ",
                   destinations.size(), " destinations");
    for (int i = 0; i < specs.count; ++i) {
      const OutputSpecs::Spec& spec = specs.specs[static_cast<std::size_t>(i)];
      const auto at = static_cast<std::size_t>(i);
      if (at >= destinations.size() || !destinations[at].defined()) {
        outputs.push_back(empty(spec.sizes, TensorOptions(spec.dtype).device(specs.device)));
        continue;
      }
      const Tensor& destination = destinations[at];
      GROVE_OP_CHECK(call,
                     destination.sizes() == IntArrayRef(spec.sizes) &&
                         destination.dtype() == spec.dtype &&
                         destination.device() == specs.device && destination.is_contiguous(),
                     "dispatch_into: destination ", i, " must be a contiguous ", spec.dtype,
                     IntArrayRef(spec.sizes), " on ", specs.device, ", but got ",
                     describe_tensor(destination));
      for (const Tensor& input : inputs) {
        GROVE_OP_CHECK(call, !input.is_alias_of(destination), "dispatch_into: destination ", i,
                       " shares memory with an input");
      }
      for (std::size_t j = 0; j < at; ++j) {
        GROVE_OP_CHECK(call,
                       !destinations[j].defined() || !destinations[j].is_alias_of(destination),
                       "dispatch_into: destinations ", j, " and ", i, " share memory");
      }
      outputs.push_back(destination);
    }
  }
  // 5. The kernel, on float32 copies of 16-bit tensors it does not take
  //    (Note [Reduced-precision compute] in ops/reduced_compute.h).
  const bool on_cpu = specs.device.is_cpu();
  const KernelFn kernel = on_cpu ? entry.cpu : entry.cuda;
  GROVE_OP_CHECK(call, kernel != nullptr, "there is no kernel for ", specs.device,
                 " in this build");
  {
    const SuspendCoreObservers internal_views;  // see Note [Op observers]
    if (needs_widening(call, outputs, on_cpu ? entry.cpu_takes_reduced : entry.cuda_takes_reduced))
        [[unlikely]] {
      run_widened(kernel, call, outputs, written);
    } else {
      kernel(call, outputs);
    }
  }
  for (std::size_t w = 0; w < written; ++w) inputs[w].bump_version();
  for (const Tensor& destination : destinations) {
    if (destination.defined()) destination.bump_version();
  }
  // 6. Observers (autograd, tracing).
  notify_observers([&](OpObserver& observer) { observer.on_op(call, outputs); });
  return outputs;
}

}  // namespace

OpOutputs dispatch(const OpEntry& entry, std::span<const Tensor> inputs,
                   const OpAttributes& attributes) {
  return dispatch_impl(entry, inputs, attributes, {});
}

OpOutputs dispatch_into(const OpEntry& entry, std::span<const Tensor> inputs,
                        const OpAttributes& attributes, std::span<const Tensor> destinations) {
  return dispatch_impl(entry, inputs, attributes, destinations);
}

}  // namespace grove::ops
