// CUDA kernels for elementwise ops; ops/cpu/elementwise.cpp is the reference they match.
//
// Two kernels per shape of op: a dense one for operands laid out like the (contiguous) output,
// which loads and stores 16 bytes per operand at a time when every pointer is 16-byte aligned
// (float4-sized packs), and a strided one that finds each operand's element through a
// StridedLoop (broadcast operands have stride 0). Both are grid-stride loops.
//
// To keep nvcc builds short (CI compiles on 2 cores), kernels are templated on the element
// types only; the op is a runtime OpKind switched on per element. The switch is uniform across
// the launch, so it costs a few instructions per element of a memory-bound loop. Only the
// dtypes an op accepts are instantiated (arithmetic: float32, float64, int32, int64, bfloat16,
// float16; unary floating math: float32, float64, bfloat16, float16; comparisons, where,
// masked_fill: every dtype). bfloat16 and float16 are computed on in float32
// (ops/cuda/opmath.cuh): each element is widened as it is loaded and rounded once as it is
// stored, and a pack of them is 8 elements (16 bytes) like a pack of 4 float32.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/cuda/cuda_device.h"
#include "ops/attributes.h"
#include "ops/broadcast.h"
#include "ops/cuda/elementwise.h"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/opmath.cuh"
#include "ops/wrapping.h"

namespace grove::ops::cuda {
namespace {

// grad * gelu'(x); the formulas of ops/elementwise.h.
template <typename T>
__device__ inline T gelu_derivative_times(T grad, T x, bool approximate) {
  if (approximate) {
    constexpr T kSqrt2OverPi = T(0.7978845608028654);
    constexpr T kCubic = T(0.044715);
    const T t = tanh_of(kSqrt2OverPi * (x + kCubic * x * x * x));
    const T du_dx = kSqrt2OverPi * (T(1) + T(3) * kCubic * x * x);
    return grad * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du_dx);
  }
  constexpr T kInvSqrt2 = T(0.7071067811865476);
  constexpr T kInvSqrt2Pi = T(0.3989422804014327);
  const T cdf = T(0.5) * (T(1) + erf_of(x * kInvSqrt2));
  const T pdf = kInvSqrt2Pi * exp_of(T(-0.5) * x * x);
  return grad * (cdf + x * pdf);
}

// The binary ops: arithmetic (R = T) or comparisons (R = bool).
template <typename T, typename R>
__device__ inline R binary_op(OpKind kind, T a, T b, bool flag) {
  if constexpr (std::is_same_v<R, bool>) {
    switch (kind) {
      case OpKind::Eq:
        return a == b;
      case OpKind::Ne:
        return a != b;
      case OpKind::Lt:
        return a < b;
      case OpKind::Le:
        return a <= b;
      case OpKind::Gt:
        return a > b;
      default:
        return a >= b;  // Ge
    }
  } else {
    switch (kind) {
      case OpKind::Add:
        return wrapping(a, b, '+');
      case OpKind::Sub:
        return wrapping(a, b, '-');
      case OpKind::Mul:
        return wrapping(a, b, '*');
      // NaN propagates, as in PyTorch (the CPU kernel's expressions, character for character).
      case OpKind::Maximum:
        return a != a ? a : (a > b || b != b ? (b != b ? b : a) : b);
      case OpKind::Minimum:
        return a != a ? a : (a < b || b != b ? (b != b ? b : a) : b);
      default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (kind == OpKind::Div) return T(a / b);
      if (kind == OpKind::ReluBackward) return b <= T(0) ? T(0) : a;  // a = grad, b = y
      return gelu_derivative_times(a, b, flag);  // GeluBackward: a = grad, b = x
    }
    return T(0);  // infer() lets only valid (kind, dtype) pairs through
  }
}

// One binary op on stored operands: widened to the compute type, computed, and the result
// stored as R (a comparison's bool, or T rounded once).
template <typename T, typename R>
__device__ inline R binary_element(OpKind kind, T a, T b, bool flag) {
  if constexpr (std::is_same_v<R, bool>) {
    return binary_op<OpMath<T>, bool>(kind, widen(a), widen(b), flag);
  } else {
    return narrow<T>(binary_op<OpMath<T>, OpMath<T>>(kind, widen(a), widen(b), flag));
  }
}
template <typename T, typename R>
__device__ inline R binary_element(OpKind kind, T a, OpMath<T> scalar, bool flag) {
  if constexpr (std::is_same_v<R, bool>) {
    return binary_op<OpMath<T>, bool>(kind, widen(a), scalar, flag);
  } else {
    return narrow<T>(binary_op<OpMath<T>, OpMath<T>>(kind, widen(a), scalar, flag));
  }
}

// out[i] = op(a[i], b ? b[i] : scalar) over n dense elements. With `vectorise`, every pointer
// is 16-byte aligned and the first n / kVec * kVec elements go in packs. With kGelu the op is
// gelu_backward, fixed at compile time: the GPT's gelu_backward over (B, T, 4C) took 80 us on an
// H200 with the op switched on per element, compute-bound on erf and exp.
template <typename T, typename R, bool kGelu = false>
__global__ void binary_dense(R* out, const T* a, const T* b, OpMath<T> scalar, OpKind kind,
                             bool flag, std::int64_t n, bool vectorise) {
  if constexpr (kGelu) kind = OpKind::GeluBackward;  // the switch folds away
  constexpr int kVec = kVecOf<T>;
  const std::int64_t packs = vectorise ? n / kVec : 0;
  for (std::int64_t p = first_index(); p < packs; p += grid_step()) {
    const Pack<T, kVec> x = reinterpret_cast<const Pack<T, kVec>*>(a)[p];
    Pack<R, kVec> o;
    if (b != nullptr) {
      const Pack<T, kVec> y = reinterpret_cast<const Pack<T, kVec>*>(b)[p];
      for (int j = 0; j < kVec; ++j)
        o.values[j] = binary_element<T, R>(kind, x.values[j], y.values[j], flag);
    } else {
      for (int j = 0; j < kVec; ++j)
        o.values[j] = binary_element<T, R>(kind, x.values[j], scalar, flag);
    }
    reinterpret_cast<Pack<R, kVec>*>(out)[p] = o;
  }
  for (std::int64_t i = packs * kVec + first_index(); i < n; i += grid_step()) {
    out[i] = b != nullptr ? binary_element<T, R>(kind, a[i], b[i], flag)
                          : binary_element<T, R>(kind, a[i], scalar, flag);
  }
}

// The same through strides: loop.strides[0] are out's, [1] a's, [2] b's (unused for a scalar).
template <typename T, typename R>
__global__ void binary_strided(R* out, const T* a, const T* b, OpMath<T> scalar, OpKind kind,
                               bool flag, const __grid_constant__ StridedLoop<3> loop,
                               std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_step()) {
    std::int64_t offsets[3];
    offsets_of<3>(loop, i, offsets);
    out[offsets[0]] = b != nullptr ? binary_element<T, R>(kind, a[offsets[1]], b[offsets[2]], flag)
                                   : binary_element<T, R>(kind, a[offsets[1]], scalar, flag);
  }
}

// The unary ops' arguments: clamp's bounds (or pow's exponent, in `low`), as T for integer T
// (see unary_args) and as double for floating T, which clamp compares in, as the CPU does. Kept
// small on purpose: a launch can cost more with more argument bytes (64 more bytes: +0.33 us on
// one H200, +0.01-0.04 us on another; bench/cuda_dispatch_bench.cpp), and relu is launched often.
template <typename T>
struct UnaryArgs {
  using Bound = std::conditional_t<std::is_integral_v<T>, T, double>;
  Bound low;
  Bound high;
  OpKind kind;
  bool approximate;  // gelu
};

template <typename T>
__device__ inline T unary_op(const UnaryArgs<T>& args, T v) {
  switch (args.kind) {
    case OpKind::Neg:
      return wrapping(T(0), v, '-');
    case OpKind::Abs:
      return v < T(0) ? wrapping(T(0), v, '-') : v;
    case OpKind::Relu:
      return v > T(0) ? v : (v != v ? v : T(0));
    case OpKind::Clamp:
      if constexpr (std::is_integral_v<T>) {
        const T low_clamped = v < args.low ? args.low : v;         // std::max(v, low)
        return args.high < low_clamped ? args.high : low_clamped;  // std::min(., high)
      } else {
        if (v != v) return v;  // NaN stays NaN
        double d = static_cast<double>(v);
        d = d < args.low ? args.low : d;
        d = args.high < d ? args.high : d;
        return static_cast<T>(d);
      }
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<T>) {
    switch (args.kind) {
      case OpKind::Exp:
        return exp_of(v);
      case OpKind::Log:
        return log_of(v);
      case OpKind::Sqrt:
        return sqrt_of(v);
      case OpKind::Rsqrt:
        return T(1) / sqrt_of(v);
      case OpKind::Tanh:
        return tanh_of(v);
      case OpKind::Sigmoid:
        return T(1) / (T(1) + exp_of(-v));
      case OpKind::Pow:
        return pow_of(v, static_cast<T>(args.low));
      case OpKind::Gelu:
        if (args.approximate) {
          const T inner = T(0.7978845608028654) * (v + T(0.044715) * v * v * v);
          return T(0.5) * v * (T(1) + tanh_of(inner));
        }
        return T(0.5) * v * (T(1) + erf_of(v * T(0.7071067811865476)));
      default:
        break;
    }
  }
  return v;  // infer() lets only valid (kind, dtype) pairs through
}

// One unary op on a stored value, computed in OpMath<T> (args are in the compute type).
template <typename T>
__device__ inline T unary_element(const UnaryArgs<OpMath<T>>& args, T v) {
  return narrow<T>(unary_op(args, widen(v)));
}

// With kGelu the op is gelu, fixed at compile time (as binary_dense's kGelu).
template <typename T, bool kGelu = false>
__global__ void unary_dense(T* out, const T* x, UnaryArgs<OpMath<T>> args, std::int64_t n,
                            bool vectorise) {
  if constexpr (kGelu) args.kind = OpKind::Gelu;  // the switch folds away
  constexpr int kVec = kVecOf<T>;
  const std::int64_t packs = vectorise ? n / kVec : 0;
  for (std::int64_t p = first_index(); p < packs; p += grid_step()) {
    Pack<T, kVec> v = reinterpret_cast<const Pack<T, kVec>*>(x)[p];
    for (int j = 0; j < kVec; ++j) v.values[j] = unary_element(args, v.values[j]);
    reinterpret_cast<Pack<T, kVec>*>(out)[p] = v;
  }
  for (std::int64_t i = packs * kVec + first_index(); i < n; i += grid_step()) {
    out[i] = unary_element(args, x[i]);
  }
}

template <typename T>
__global__ void unary_strided(T* out, const T* x, const UnaryArgs<OpMath<T>> args,
                              const __grid_constant__ StridedLoop<2> loop, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_step()) {
    std::int64_t offsets[2];
    offsets_of<2>(loop, i, offsets);
    out[offsets[0]] = unary_element(args, x[offsets[1]]);
  }
}

// loop.strides: out, condition, a, b.
template <typename T>
__global__ void where_strided(T* out, const bool* condition, const T* a, const T* b,
                              const __grid_constant__ StridedLoop<4> loop, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_step()) {
    std::int64_t offsets[4];
    offsets_of<4>(loop, i, offsets);
    out[offsets[0]] = condition[offsets[1]] ? a[offsets[2]] : b[offsets[3]];
  }
}

// loop.strides: out, x, mask.
template <typename T>
__global__ void masked_fill_strided(T* out, const T* x, const bool* mask, T value,
                                    const __grid_constant__ StridedLoop<3> loop, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_step()) {
    std::int64_t offsets[3];
    offsets_of<3>(loop, i, offsets);
    out[offsets[0]] = mask[offsets[2]] ? value : x[offsets[1]];
  }
}

// --- host side ---

template <typename T>
T* typed(const Tensor& tensor) {
  return static_cast<T*>(tensor.data_ptr());
}

const char* name_of(const OpCall& call) {
  return op_name(call.kind).data();
}

bool dense_like(const Tensor& input, const Tensor& out) {
  return input.is_contiguous() && input.sizes() == out.sizes();
}

// out = op(a, b) with a, b (or the call's scalar) broadcast to out.
template <typename T, typename R>
void launch_binary(const OpCall& call, const Tensor& out) {
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const Tensor& a = call.input(0);
  const bool has_scalar = call.attributes.has_scalar;
  const OpMath<T> scalar = has_scalar ? call.attributes.scalar.to<OpMath<T>>() : OpMath<T>{};
  const T* x = typed<const T>(a);
  const T* y = has_scalar ? nullptr : typed<const T>(call.input(1));
  R* o = typed<R>(out);
  // gelu_backward's approximation; false for the other binary ops.
  const bool flag =
      call.kind == OpKind::GeluBackward && GeluAttributes::from(call.attributes).approximate;
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = stream_of(out);
  if (dense_like(a, out) && (has_scalar || dense_like(call.input(1), out))) {
    const bool vectorise = aligned16(x) && aligned16(o) && (y == nullptr || aligned16(y));
    const std::int64_t work = vectorise ? (n + kVecOf<T> - 1) / kVecOf<T> : n;
    if constexpr (std::is_floating_point_v<OpMath<T>> && !std::is_same_v<R, bool>) {
      if (call.kind == OpKind::GeluBackward) {
        binary_dense<T, R, true><<<blocks_for(work), kThreads, 0, stream>>>(
            o, x, y, scalar, call.kind, flag, n, vectorise);
        GROVE_CUDA_CHECK(cudaGetLastError());
        return;
      }
    }
    binary_dense<T, R>
        <<<blocks_for(work), kThreads, 0, stream>>>(o, x, y, scalar, call.kind, flag, n, vectorise);
    GROVE_CUDA_CHECK(cudaGetLastError());
    return;
  }
  const DimVector a_strides = broadcast_strides(a, out.sizes());
  const DimVector b_strides =
      has_scalar ? DimVector(out.sizes().size(), 0) : broadcast_strides(call.input(1), out.sizes());
  const IntArrayRef strides[3] = {out.strides(), a_strides, b_strides};
  const StridedLoop<3> loop = make_loop<3>(out.sizes(), strides, name_of(call));
  binary_strided<T, R>
      <<<blocks_for(n), kThreads, 0, stream>>>(o, x, y, scalar, call.kind, flag, loop, n);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

bool is_comparison(OpKind kind) {
  return kind == OpKind::Eq || kind == OpKind::Ne || kind == OpKind::Lt || kind == OpKind::Le ||
         kind == OpKind::Gt || kind == OpKind::Ge;
}

template <typename T>
UnaryArgs<T> unary_args(const OpCall& call) {
  const UnaryParameters parameters = UnaryParameters::of(call);
  const double low = parameters.first;
  const double high = parameters.second;
  UnaryArgs<T> args{T{}, T{}, call.kind, parameters.approximate};
  if constexpr (std::is_integral_v<T>) {
    if (call.kind == OpKind::Clamp) {
      // Bounds were checked to be integers in T's range (or infinite) by infer.
      constexpr double kLowest = static_cast<double>(std::numeric_limits<T>::lowest());
      constexpr double kHighest = static_cast<double>(std::numeric_limits<T>::max());
      args.low = low <= kLowest ? std::numeric_limits<T>::lowest() : static_cast<T>(low);
      args.high = high >= kHighest ? std::numeric_limits<T>::max() : static_cast<T>(high);
    }
  } else {
    args.low = low;
    args.high = high;
  }
  return args;
}

}  // namespace

void binary(const OpCall& call, const OpOutputs& outputs) {
  if (is_comparison(call.kind)) {
    dispatch_dtype<DTypes::Stored>(call.input(0).dtype(), "binary",
                                   [&]<typename T>() { launch_binary<T, bool>(call, outputs[0]); });
    return;
  }
  dispatch_dtype<DTypes::ArithmeticAndReduced>(call.input(0).dtype(), "binary", [&]<typename T>() {
    launch_binary<T, T>(call, outputs[0]);
  });
}

// out = grad * gelu'(x): the binary kernels with GeluBackward as their op.
void gelu_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_dtype<DTypes::FloatingAndReduced>(
      outputs[0].dtype(), "gelu_backward",
      [&]<typename T>() { launch_binary<T, T>(call, outputs[0]); });
}

// out = grad where y > 0, else 0: the binary kernels with ReluBackward as their op.
void relu_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_dtype<DTypes::FloatingAndReduced>(
      outputs[0].dtype(), "relu_backward",
      [&]<typename T>() { launch_binary<T, T>(call, outputs[0]); });
}

void unary(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const Tensor& input = call.input(0);
  const std::int64_t n = out.numel();
  if (n == 0) return;
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = stream_of(out);
  dispatch_dtype<DTypes::ArithmeticAndReduced>(input.dtype(), "unary", [&]<typename T>() {
    const UnaryArgs<OpMath<T>> args = unary_args<OpMath<T>>(call);
    const T* x = typed<const T>(input);
    T* o = typed<T>(out);
    if (dense_like(input, out)) {
      const bool vectorise = aligned16(x) && aligned16(o);
      const std::int64_t work = vectorise ? (n + kVecOf<T> - 1) / kVecOf<T> : n;
      if constexpr (std::is_floating_point_v<OpMath<T>>) {
        if (call.kind == OpKind::Gelu) {
          unary_dense<T, true><<<blocks_for(work), kThreads, 0, stream>>>(o, x, args, n, vectorise);
          GROVE_CUDA_CHECK(cudaGetLastError());
          return;
        }
      }
      unary_dense<T><<<blocks_for(work), kThreads, 0, stream>>>(o, x, args, n, vectorise);
      GROVE_CUDA_CHECK(cudaGetLastError());
      return;
    }
    const DimVector input_strides = broadcast_strides(input, out.sizes());
    const IntArrayRef strides[2] = {out.strides(), input_strides};
    const StridedLoop<2> loop = make_loop<2>(out.sizes(), strides, name_of(call));
    unary_strided<T><<<blocks_for(n), kThreads, 0, stream>>>(o, x, args, loop, n);
    GROVE_CUDA_CHECK(cudaGetLastError());
  });
}

void where(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const DimVector condition_strides = broadcast_strides(call.input(0), out.sizes());
  const DimVector a_strides = broadcast_strides(call.input(1), out.sizes());
  const DimVector b_strides = broadcast_strides(call.input(2), out.sizes());
  const IntArrayRef strides[4] = {out.strides(), condition_strides, a_strides, b_strides};
  const StridedLoop<4> loop = make_loop<4>(out.sizes(), strides, "where");
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = stream_of(out);
  dispatch_dtype<DTypes::Stored>(out.dtype(), "where", [&]<typename T>() {
    where_strided<T><<<blocks_for(n), kThreads, 0, stream>>>(
        typed<T>(out), typed<const bool>(call.input(0)), typed<const T>(call.input(1)),
        typed<const T>(call.input(2)), loop, n);
    GROVE_CUDA_CHECK(cudaGetLastError());
  });
}

void masked_fill(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::int64_t n = out.numel();
  if (n == 0) return;
  const DimVector x_strides = broadcast_strides(call.input(0), out.sizes());
  const DimVector mask_strides = broadcast_strides(call.input(1), out.sizes());
  const IntArrayRef strides[3] = {out.strides(), x_strides, mask_strides};
  const StridedLoop<3> loop = make_loop<3>(out.sizes(), strides, "masked_fill");
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = stream_of(out);
  dispatch_dtype<DTypes::Stored>(out.dtype(), "masked_fill", [&]<typename T>() {
    masked_fill_strided<T><<<blocks_for(n), kThreads, 0, stream>>>(
        typed<T>(out), typed<const T>(call.input(0)), typed<const bool>(call.input(1)),
        call.attributes.scalar.to<T>(), loop, n);
    GROVE_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace grove::ops::cuda
