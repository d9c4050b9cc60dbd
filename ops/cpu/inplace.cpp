// CPU kernels for in-place updates. `update` builds one StridedLoop over x and its operands
// (broadcast operands read through stride-0 dims) and applies the op's formula element by
// element; each formula is a small lambda over (x, operands), so every op is one line below.
#include "ops/cpu/inplace.h"

#include <array>

#include "core/strided_loop.h"
#include "ops/aliasing.h"
#include "ops/attributes.h"
#include "ops/broadcast.h"
#include "ops/cpu/random.h"
#include "ops/random.h"

namespace grove::ops::cpu {
namespace {

// x[i] = fn(x[i], operands at i), with kInputs tensor operands after x (inputs 1..kInputs).
template <typename T, int kInputs, typename Fn>
void launch_update(const OpCall& call, Fn fn) {
  constexpr int kOperands = kInputs + 1;
  constexpr int kSlots = kInputs > 0 ? kInputs : 1;
  const Tensor& x = call.input(0);
  if (x.numel() == 0) return;
  std::array<Tensor, kSlots> operands;  // kept alive until the kernel is launched
  DimVector strides[kOperands];
  IntArrayRef stride_refs[kOperands];
  std::array<const T*, kSlots> inputs{};
  strides[0] = x.strides();
  for (int k = 0; k < kInputs; ++k) {
    operands[k] = unaliased(x, call.input(static_cast<std::size_t>(k) + 1));
    strides[k + 1] = broadcast_strides(operands[k], x.sizes());
    inputs[k] = static_cast<const T*>(operands[k].data_ptr());
  }
  for (int k = 0; k < kOperands; ++k) stride_refs[k] = strides[k];
  const StridedLoop<kOperands> loop =
      make_loop<kOperands>(x.sizes(), stride_refs, op_name(call.kind).data());
  T* target = static_cast<T*>(x.data_ptr());
  launch_cpu(current_stream(x.device()), [=] {
    const int last = loop.ndim - 1;
    for_each_run<kOperands>(loop, [&](const std::int64_t* offset, std::int64_t n) {
      for (std::int64_t j = 0; j < n; ++j) {
        T values[kSlots]{};
        for (int k = 0; k < kInputs; ++k) {
          values[k] = inputs[k][offset[k + 1] + j * loop.strides[k + 1][last]];
        }
        T& element = target[offset[0] + j * loop.strides[0][last]];
        element = fn(element, values);
      }
    });
  });
}

template <typename T>
void update_typed(const OpCall& call) {
  const T scalar = call.attributes.scalar.to<T>();
  switch (call.kind) {
    case OpKind::AddInplace:  // x + alpha * y
      return launch_update<T, 1>(call, [scalar](T x, const T* v) { return T(x + scalar * v[0]); });
    case OpKind::MulInplace:
      if (call.attributes.has_scalar) {
        return launch_update<T, 0>(call, [scalar](T x, const T*) { return T(x * scalar); });
      }
      return launch_update<T, 1>(call, [](T x, const T* v) { return T(x * v[0]); });
    case OpKind::Addcmul:  // x + value * a * b
      return launch_update<T, 2>(call,
                                 [scalar](T x, const T* v) { return T(x + scalar * v[0] * v[1]); });
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    // weight < 0.5 ? x + w (end - x) : end - (end - x)(1 - w): exact at both ends (PyTorch's).
    auto lerp = [](T x, T end, T w) {
      return w < T(0.5) ? T(x + w * (end - x)) : T(end - (end - x) * (T(1) - w));
    };
    switch (call.kind) {
      case OpKind::Addcdiv:  // x + value * a / b
        return launch_update<T, 2>(
            call, [scalar](T x, const T* v) { return T(x + scalar * v[0] / v[1]); });
      case OpKind::Lerp:
        if (call.inputs.size() == 2) {
          return launch_update<T, 1>(call, [=](T x, const T* v) { return lerp(x, v[0], scalar); });
        }
        return launch_update<T, 2>(call, [=](T x, const T* v) { return lerp(x, v[0], v[1]); });
      default:
        break;
    }
  }
  GROVE_INTERNAL_ASSERT(false, op_name(call.kind), " reached update() with dtype ",
                        call.input(0).dtype(), "; its infer should have refused it");
}

}  // namespace

void update(const OpCall& call, const OpOutputs& /*outputs*/) {
  dispatch_dtype<DTypes::AllButBool>(call.input(0).dtype(), "update",
                                     [&]<typename T>() { update_typed<T>(call); });
}

void uniform(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = outputs[0];
  const std::uint64_t counters = counters_for_uniform(x.dtype(), x.numel());
  const UniformAttributes attributes = UniformAttributes::from(call.attributes);
  launch_uniform(x, attributes.low, attributes.high,
                 detail::reserve_philox(call, x.device(), counters));
}

void normal(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = outputs[0];
  const std::uint64_t counters = counters_for_normal(x.dtype(), x.numel());
  const NormalAttributes attributes = NormalAttributes::from(call.attributes);
  launch_normal(x, attributes.mean, attributes.std,
                detail::reserve_philox(call, x.device(), counters));
}

}  // namespace grove::ops::cpu
