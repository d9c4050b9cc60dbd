// CUDA kernel for the arithmetic in-place updates; ops/cpu/inplace.cpp is the reference.
//
// One grid-stride kernel per dtype over a StridedLoop of (x, operand 0, operand 1): make_loop
// merges dense tensors into one dimension, so the dense case needs no index division. The op is
// a runtime OpKind (one kernel per dtype keeps nvcc builds short). As on the CPU, an operand
// that overlaps x other than element for element is copied first (on the device, on the same
// stream), so results never depend on the order in which threads update x.
//
// Operands whose elements run in rows of unit stride, every row starting 16 bytes aligned and
// as long as a whole number of packs (a dense tensor; a slice of a wider tensor, as the
// gradients that the backward of q, k and v's chunks of one projection add into its gradient),
// take a second kernel that moves 16 bytes per operand at a time: at one 2-byte element per
// thread those bfloat16 slice updates took 50 us each at GPT-2's shape on an H200. bfloat16 and
// float16 are updated in float32 and rounded once (ops/cuda/opmath.cuh).
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

// Rows of packs: operand k's row r starts at r * row_stride[k] elements; a pack is kVecOf<T>
// consecutive elements.
struct RowsLayout {
  std::int64_t rows = 0, packs_per_row = 0;
  std::int64_t row_stride[3] = {};
};

template <typename T>
__global__ void update_rows(T* x, const T* v0, const T* v1, OpMath<T> scalar, OpKind kind,
                            int operands, const RowsLayout layout) {
  using C = OpMath<T>;
  constexpr int kVec = kVecOf<T>;
  using P = Pack<T, kVec>;
  const std::int64_t total = layout.rows * layout.packs_per_row;
  for (std::int64_t p = first_index(); p < total; p += grid_step()) {
    std::int64_t row, pack;
    if (((p | layout.packs_per_row) >> 32) == 0) {  // a 32-bit division (see offsets_of)
      row = static_cast<std::uint32_t>(p) / static_cast<std::uint32_t>(layout.packs_per_row);
    } else {
      row = p / layout.packs_per_row;
    }
    pack = p - row * layout.packs_per_row;
    P* target = reinterpret_cast<P*>(x + row * layout.row_stride[0]) + pack;
    P a{}, b{};
    if (operands > 0) a = reinterpret_cast<const P*>(v0 + row * layout.row_stride[1])[pack];
    if (operands > 1) b = reinterpret_cast<const P*>(v1 + row * layout.row_stride[2])[pack];
    P values = *target;
    for (int j = 0; j < kVec; ++j) {
      const C first = operands > 0 ? widen(a.values[j]) : C(0);
      const C second = operands > 1 ? widen(b.values[j]) : C(0);
      values.values[j] =
          narrow<T>(update_op<C>(kind, widen(values.values[j]), first, second, scalar, operands));
    }
    *target = values;
  }
}

// The loop as rows of packs, if every operand in use allows it (see the top of this file).
template <typename T>
bool rows_of_packs(const StridedLoop<3>& loop, int operands, const void* const (&data)[3],
                   RowsLayout& layout) {
  constexpr int kVec = kVecOf<T>;
  if (loop.ndim < 1 || loop.ndim > 2) return false;
  const int inner = loop.ndim - 1;
  const std::int64_t columns = loop.sizes[inner];
  if (columns % kVec != 0) return false;
  layout.rows = loop.ndim == 2 ? loop.sizes[0] : 1;
  layout.packs_per_row = columns / kVec;
  for (int k = 0; k <= operands; ++k) {
    layout.row_stride[k] = loop.ndim == 2 ? loop.strides[k][0] : 0;
    if (loop.strides[k][inner] != 1 || layout.row_stride[k] % kVec != 0 || !aligned16(data[k])) {
      return false;
    }
  }
  return true;
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
  const auto scalar = call.attributes.scalar.to<OpMath<T>>();
  RowsLayout layout;
  const void* const data[3] = {x.data_ptr(), inputs[0], inputs[1]};
  if (rows_of_packs<T>(loop, operands, data, layout)) {
    update_rows<T><<<blocks_for(layout.rows * layout.packs_per_row), kThreads, 0, stream>>>(
        static_cast<T*>(x.data_ptr()), inputs[0], inputs[1], scalar, call.kind, operands, layout);
    GROVE_CUDA_CHECK(cudaGetLastError());
    return;
  }
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
