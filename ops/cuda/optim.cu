// CUDA kernels of the fused optimizer updates; ops/cpu/optim.cpp is the reference and
// ops/optim_math.h holds the per-element formulas both use.
//
// One grid-stride kernel per call over a StridedLoop of (param, grad, states): make_loop merges
// dense tensors into one dimension, so the usual contiguous parameter needs no index division.
// AdamW's step and a learning-rate tensor are read from device memory when the kernel runs
// (and the coefficients that depend on them computed then), so a captured step stays correct
// on every replay.
#include <cuda_runtime_api.h>

#include "core/cuda/cuda_device.h"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/optim.h"
#include "ops/optim_math.h"

namespace grove::ops::cuda {
namespace {

template <typename T>
__global__ void sgd_kernel(T* param, const T* grad, T* velocity, SgdCoefficients<T> c, LrSource lr,
                           const __grid_constant__ StridedLoop<3> loop, std::int64_t n) {
  if (lr.data != nullptr) c.lr = static_cast<T>(read_lr(lr, 0.0));
  for (std::int64_t i = first_index(); i < n; i += grid_step()) {
    std::int64_t offsets[3];
    offsets_of<3>(loop, i, offsets);
    sgd_element(param[offsets[0]], grad[offsets[1]],
                c.has_velocity ? velocity + offsets[2] : nullptr, c);
  }
}

template <typename T>
__global__ void adamw_kernel(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, const void* step,
                             int step_dtype, AdamwCoefficients<T> c, double fixed_lr,
                             LrSource lr_tensor, double weight_decay, double beta1, double beta2,
                             const __grid_constant__ StridedLoop<4> loop, std::int64_t n) {
  const double lr = read_lr(lr_tensor, fixed_lr);
  if (lr_tensor.data != nullptr) set_adamw_lr(c, lr, weight_decay);
  set_adamw_step(c, lr, beta1, beta2, read_step(step, step_dtype));
  for (std::int64_t i = first_index(); i < n; i += grid_step()) {
    std::int64_t offsets[4];
    offsets_of<4>(loop, i, offsets);
    adamw_element(param[offsets[0]], grad[offsets[1]], exp_avg[offsets[2]], exp_avg_sq[offsets[3]],
                  c);
  }
}

template <typename T>
void sgd_typed(const OpCall& call) {
  const SgdCoefficients<T> c = sgd_coefficients<T>(call);
  const Tensor& param = call.input(0);
  const std::int64_t n = param.numel();
  sgd_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(param)>>>(
      optim_data<T>(call, 0), optim_data<T>(call, 1), optim_data<T>(call, 2), c, lr_source(call),
      optim_loop<3>(call), n);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void adamw_typed(const OpCall& call) {
  const AdamwAttributes a = AdamwAttributes::from(call.attributes);
  const AdamwCoefficients<T> c = adamw_coefficients<T>(call);
  const Tensor& param = call.input(0);
  const std::int64_t n = param.numel();
  adamw_kernel<T><<<blocks_for(n), kThreads, 0, stream_of(param)>>>(
      optim_data<T>(call, 0), optim_data<T>(call, 1), optim_data<T>(call, 2),
      optim_data<T>(call, 3), call.input(4).data_ptr(), static_cast<int>(call.input(4).dtype()), c,
      a.lr, lr_source(call), a.weight_decay, a.beta1, a.beta2, optim_loop<4>(call), n);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void sgd(const OpCall& call, const OpOutputs& /*outputs*/) {
  const Tensor& param = call.input(0);
  if (param.numel() == 0) return;
  cuda_backend::DeviceGuard guard(param.device());
  dispatch_floating(param.dtype(), op_name(call.kind), [&]<typename T>() { sgd_typed<T>(call); });
}

void adamw(const OpCall& call, const OpOutputs& /*outputs*/) {
  const Tensor& param = call.input(0);
  if (param.numel() == 0) return;
  cuda_backend::DeviceGuard guard(param.device());
  dispatch_floating(param.dtype(), op_name(call.kind), [&]<typename T>() { adamw_typed<T>(call); });
}

}  // namespace grove::ops::cuda
