// CPU kernels of the fused optimizer updates: one StridedLoop over the parameter, the gradient
// and the state tensors, and the shared per-element formulas of ops/optim_math.h. AdamW's step
// and a learning-rate tensor are read when the kernel runs (not when it is launched), so a
// captured step replays correctly.
#include "ops/cpu/optim.h"

#include <type_traits>

#include "ops/optim_math.h"

namespace grove::ops::cpu {
namespace {

// Elements from which a contiguous update is spread over the OpenMP threads (each element is
// updated alone, so threads change no value).
constexpr std::int64_t kMinParallelElements = std::int64_t{1} << 15;

// True if the loop's runs are contiguous in all N operands (the usual parameter, gradient and
// state tensors): then each run is one loop over plain pointers, which the compiler vectorises,
// instead of a strided index per operand and element (measured: the mlp's SGD update took 8% of
// its 2-thread CPU step that way).
template <int N>
bool contiguous_run(const StridedLoop<N>& loop) {
  for (int i = 0; i < N; ++i) {
    if (loop.strides[i][loop.ndim - 1] != 1) return false;
  }
  return true;
}

template <typename T>
void sgd_typed(const OpCall& call) {
  const SgdCoefficients<T> fixed = sgd_coefficients<T>(call);
  const LrSource lr = lr_source(call);
  const SkipSource skip = skip_source(call);
  const StridedLoop<3> loop = optim_loop<3>(call);
  T* param = optim_data<T>(call, 0);
  const T* grad = optim_data<T>(call, 1);
  T* velocity = optim_data<T>(call, 2);
  launch_cpu(current_stream(call.input(0).device()), [=] {
    if (skipped(skip)) return;
    SgdCoefficients<T> c = fixed;
    if (lr.data != nullptr) c.lr = static_cast<T>(read_lr(lr, 0.0));
    const int last = loop.ndim - 1;
    const bool contiguous = contiguous_run(loop);
    for_each_run<3>(loop, [&](const std::int64_t* offset, std::int64_t n) {
      if (contiguous) {
        T* __restrict p = param + offset[0];
        const T* __restrict g = grad + offset[1];
        T* __restrict v = c.has_velocity ? velocity + offset[2] : nullptr;
        if (v != nullptr) {
#pragma omp parallel for simd schedule(static) if (n >= kMinParallelElements) \
    firstprivate(p, g, v, c)
          for (std::int64_t j = 0; j < n; ++j) sgd_element(p[j], g[j], v + j, c);
        } else {
#pragma omp parallel for simd schedule(static) if (n >= kMinParallelElements) firstprivate(p, g, c)
          for (std::int64_t j = 0; j < n; ++j) sgd_element(p[j], g[j], static_cast<T*>(nullptr), c);
        }
        return;
      }
      for (std::int64_t j = 0; j < n; ++j) {
        T* v = c.has_velocity ? velocity + offset[2] + j * loop.strides[2][last] : nullptr;
        sgd_element(param[offset[0] + j * loop.strides[0][last]],
                    grad[offset[1] + j * loop.strides[1][last]], v, c);
      }
    });
  });
}

template <typename T>
void adamw_typed(const OpCall& call) {
  const AdamwAttributes a = AdamwAttributes::from(call.attributes);
  const double fixed_lr = a.lr;
  const double weight_decay = a.weight_decay;
  const double beta1 = a.beta1;
  const double beta2 = a.beta2;
  const LrSource lr_tensor = lr_source(call);
  const SkipSource skip = skip_source(call);
  const AdamwCoefficients<T> c = adamw_coefficients<T>(call);
  const StridedLoop<4> loop = optim_loop<4>(call);
  T* param = optim_data<T>(call, 0);
  const T* grad = optim_data<T>(call, 1);
  T* exp_avg = optim_data<T>(call, 2);
  T* exp_avg_sq = optim_data<T>(call, 3);
  const void* step = adamw_step_input(call).data_ptr();
  const int step_dtype = static_cast<int>(adamw_step_input(call).dtype());
  launch_cpu(current_stream(call.input(0).device()), [=] {
    if (skipped(skip)) return;
    AdamwCoefficients<T> coefficients = c;
    const double lr = read_lr(lr_tensor, fixed_lr);
    if (lr_tensor.data != nullptr) set_adamw_lr(coefficients, lr, weight_decay);
    set_adamw_step(coefficients, lr, beta1, beta2, read_step(step, step_dtype));
    const int last = loop.ndim - 1;
    const bool contiguous = contiguous_run(loop);
    for_each_run<4>(loop, [&](const std::int64_t* offset, std::int64_t n) {
      if (contiguous) {
        T* __restrict p = param + offset[0];
        const T* __restrict g = grad + offset[1];
        T* __restrict m = exp_avg + offset[2];
        T* __restrict v = exp_avg_sq + offset[3];
#pragma omp parallel for simd schedule(static) if (n >= kMinParallelElements) \
    firstprivate(p, g, m, v, coefficients)
        for (std::int64_t j = 0; j < n; ++j) adamw_element(p[j], g[j], m[j], v[j], coefficients);
        return;
      }
      for (std::int64_t j = 0; j < n; ++j) {
        adamw_element(param[offset[0] + j * loop.strides[0][last]],
                      grad[offset[1] + j * loop.strides[1][last]],
                      exp_avg[offset[2] + j * loop.strides[2][last]],
                      exp_avg_sq[offset[3] + j * loop.strides[3][last]], coefficients);
      }
    });
  });
}

}  // namespace

// A call over several parameters is a loop over them (Note [One update over many parameters]
// in ops/optim.h): on the CPU one pass per parameter costs nothing a fused pass would save.
void sgd(const OpCall& call, const OpOutputs& outputs) {
  if (optim_params(call) > 1) {
    for_each_param(call, [&](const OpCall& one) { sgd(one, outputs); });
    return;
  }
  if (call.input(0).numel() == 0) return;
  dispatch_floating(call.input(0).dtype(), op_name(call.kind),
                    [&]<typename T>() { sgd_typed<T>(call); });
}

void adamw(const OpCall& call, const OpOutputs& outputs) {
  if (optim_params(call) > 1) {
    for_each_param(call, [&](const OpCall& one) { adamw(one, outputs); });
    return;
  }
  if (call.input(0).numel() == 0) return;
  dispatch_floating(call.input(0).dtype(), op_name(call.kind),
                    [&]<typename T>() { adamw_typed<T>(call); });
}

// One pass per gradient; found_inf is written only when a pass met a value that is not finite.
void unscale_grads(const OpCall& call, const OpOutputs&) {
  const std::size_t grads = call.inputs.size() - 2;
  auto* found_inf = static_cast<float*>(call.input(grads).data_ptr());
  const auto* scale = static_cast<const float*>(call.input(grads + 1).data_ptr());
  for (std::size_t i = 0; i < grads; ++i) {
    const Tensor& grad = call.input(i);
    if (grad.numel() == 0) continue;
    const IntArrayRef strides[1] = {grad.strides()};
    const StridedLoop<1> loop = make_loop<1>(grad.sizes(), strides, "unscale_grads_");
    dispatch_floating(grad.dtype(), op_name(call.kind), [&]<typename T>() {
      T* data = static_cast<T*>(grad.data_ptr());
      launch_cpu(current_stream(grad.device()), [=] {
        const float inverse = inverse_scale(*scale);
        bool bad = false;
        const std::int64_t stride = loop.strides[0][loop.ndim - 1];
        for_each_run<1>(loop, [&](const std::int64_t* offset, std::int64_t n) {
          T* run = data + offset[0];
          for (std::int64_t j = 0; j < n; ++j) bad |= unscale_element(run[j * stride], inverse);
        });
        if (bad) *found_inf = 1.0f;
      });
    });
  }
}

void update_scale(const OpCall& call, const OpOutputs&) {
  const UpdateScaleAttributes a = UpdateScaleAttributes::from(call.attributes);
  auto* scale = static_cast<float*>(call.input(0).data_ptr());
  auto* growth_tracker = static_cast<std::int32_t*>(call.input(1).data_ptr());
  const auto* found_inf = static_cast<const float*>(call.input(2).data_ptr());
  launch_cpu(current_stream(call.input(0).device()), [=] {
    update_scale_value(*scale, *growth_tracker, *found_inf, a.growth_factor, a.backoff_factor,
                       a.growth_interval);
  });
}

}  // namespace grove::ops::cpu
