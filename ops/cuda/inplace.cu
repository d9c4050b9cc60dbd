// CUDA kernel for the arithmetic in-place updates; ops/cpu/inplace.cpp is the reference.
//
// One grid-stride kernel per dtype over a StridedLoop of (x, operand 0, operand 1): make_loop
// merges dense tensors into one dimension, so the dense case needs no index division. The op is
// a runtime OpKind (one kernel per dtype keeps nvcc builds short). As on the CPU, an operand
// that overlaps x other than element for element is copied first (on the device, on the same
// stream), so results never depend on the order in which threads update x. bfloat16 and float16
// are updated in float32 and rounded once (ops/cuda/opmath.cuh).
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <type_traits>

#include "core/cuda/cuda_device.h"
#include "ops/aliasing.h"
#include "ops/broadcast.h"
#include "ops/cuda/inplace.h"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/opmath.cuh"

namespace grove::ops::cuda {
namespace {

// The update formulas of ops/cpu/inplace.cpp. `scalar` is alpha, the factor, value or the
// weight; `operands` is how many tensor operands the call has.
template <typename T>
__device__ inline T update_op(OpKind kind, T x, T v0, T v1, T scalar, int operands) {
  switch (kind) {
    case OpKind::AddInplace:  // x + alpha * y
      return T(x + scalar * v0);
    case OpKind::MulInplace:
      return operands == 0 ? T(x * scalar) : T(x * v0);
    case OpKind::Addcmul:  // x + value * a * b
      return T(x + scalar * v0 * v1);
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T weight = operands == 1 ? scalar : v1;
    switch (kind) {
      case OpKind::Addcdiv:  // x + value * a / b
        return T(x + scalar * v0 / v1);
      case OpKind::Lerp:  // exact at both ends (PyTorch's form)
        return weight < T(0.5) ? T(x + weight * (v0 - x)) : T(v0 - (v0 - x) * (T(1) - weight));
      default:
        break;
    }
  }
  return x;  // infer() lets only valid (kind, dtype) pairs through
}

// loop.strides: x, operand 0, operand 1 (zeros for missing operands, which are not read).
template <typename T>
__global__ void update_strided(T* x, const T* v0, const T* v1, OpMath<T> scalar, OpKind kind,
                               int operands, const __grid_constant__ StridedLoop<3> loop,
                               std::int64_t n) {
  using C = OpMath<T>;
  for (std::int64_t i = first_index(); i < n; i += grid_step()) {
    std::int64_t offsets[3];
    offsets_of<3>(loop, i, offsets);
    const C a = operands > 0 ? widen(v0[offsets[1]]) : C(0);
    const C b = operands > 1 ? widen(v1[offsets[2]]) : C(0);
    T& element = x[offsets[0]];
    element = narrow<T>(update_op<C>(kind, widen(element), a, b, scalar, operands));
  }
}

template <typename T>
void launch_update(const OpCall& call) {
  const Tensor& x = call.input(0);
  const std::int64_t n = x.numel();
  if (n == 0) return;
  const int operands = static_cast<int>(call.inputs.size()) - 1;
  std::array<Tensor, 2>
      kept;  // alive until the kernel is launched (the allocator is stream-ordered)
  DimVector strides[3] = {x.strides(), DimVector(x.sizes().size(), 0),
                          DimVector(x.sizes().size(), 0)};
  std::array<const T*, 2> inputs{};
  for (int k = 0; k < operands; ++k) {
    kept[k] = unaliased(x, call.input(static_cast<std::size_t>(k) + 1));
    strides[k + 1] = broadcast_strides(kept[k], x.sizes());
    inputs[k] = static_cast<const T*>(kept[k].data_ptr());
  }
  const IntArrayRef stride_refs[3] = {strides[0], strides[1], strides[2]};
  const StridedLoop<3> loop = make_loop<3>(x.sizes(), stride_refs, op_name(call.kind).data());
  cuda_backend::DeviceGuard guard(x.device());
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(x.device()));
  update_strided<T><<<blocks_for(n), kThreads, 0, stream>>>(
      static_cast<T*>(x.data_ptr()), inputs[0], inputs[1], call.attributes.scalar.to<OpMath<T>>(),
      call.kind, operands, loop, n);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void update(const OpCall& call, const OpOutputs& /*outputs*/) {
  dispatch_dtype<DTypes::ArithmeticAndReduced>(call.input(0).dtype(), op_name(call.kind),
                                               [&]<typename T>() { launch_update<T>(call); });
}

}  // namespace grove::ops::cuda
