// CUDA kernels for the random family; ops/cpu/random.cpp (and the recipes in ops/cpu/random.h)
// is the reference they match.
//
// One thread per Philox counter (a grid-stride loop over counters): thread c computes the four
// words of counter offset + c once and writes the elements that use them, found by their flat
// row-major index through a StridedLoop, so the element -> (counter, word) map is the CPU's:
//   float32 uniform, dropout : elements 4c .. 4c+3 <- words 0 .. 3
//   float64 uniform, randint : elements 2c, 2c+1 <- words (0, 1), (2, 3)
//   float32 normal           : elements 4c, 4c+1 <- Box-Muller of words (0, 1);
//                              elements 4c+2, 4c+3 <- Box-Muller of words (2, 3)
//   float64 normal           : elements 2c, 2c+1 <- Box-Muller of (words 0-1, words 2-3)
// The arithmetic is the CPU's, step by step in the same precision, written with _rn intrinsics
// so that nvcc rounds exactly where we say. One subtlety: the CPU kernels are built for
// x86-64-v3 (GROVE_MARCH) and g++ contracts `low + range * u` and `mean + std * z` into one
// fused multiply-add (vfmadd...sd in ops/cpu/random.cpp.o), so the GPU uses __fma_rn for those
// two; every other multiply-add of the recipes has an exact product (a power of two), where
// fusing changes nothing. With GROVE_MARCH empty the CPU rounds twice and uniform_ / normal_
// with low != 0 or range != 1 (mean != 0 or std != 1) may differ from the GPU in the last bit.
// So rand, randint, dropout and uniform_ are bit-identical to the CPU; normal goes through
// CUDA's double log, cos and sin, which may differ from the host's libm by an ulp or two of
// double, so a float64 normal may differ in its last bits and a float32 one (rounded from the
// double) rarely by one ulp of float.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "ops/attributes.h"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/philox.cuh"
#include "ops/cuda/random.h"
#include "ops/random.h"
#include "ops/random_counters.h"

namespace grove::ops::cuda {
namespace {

constexpr double kTwoPi = 6.283185307179586;  // the CPU's normal_at constant

std::uint64_t ceil_div(std::int64_t n, std::int64_t d) {
  return static_cast<std::uint64_t>((n + d - 1) / d);
}

__device__ inline std::int64_t element_offset(const StridedLoop<1>& loop, std::int64_t i) {
  std::int64_t offsets[1];
  offsets_of<1>(loop, i, offsets);
  return offsets[0];
}

// out[i] = low + range * U[0, 1), computed in double as on the CPU (one fused multiply-add).
template <typename T>
__global__ void uniform_kernel(T* out, const __grid_constant__ StridedLoop<1> loop,
                               std::int64_t numel, std::int64_t counters, double low, double range,
                               PhiloxArgs args) {
  const ResolvedPhilox philox = resolve(args);
  for (std::int64_t c = first_index(); c < counters; c += grid_step()) {
    const PhiloxWords4 words = philox4x32_10(philox.offset + c, 0, philox.seed);
    if constexpr (sizeof(T) == sizeof(float)) {
      for (int w = 0; w < 4 && 4 * c + w < numel; ++w) {
        const double u = static_cast<double>(device_uniform_float(words.word[w]));
        out[element_offset(loop, 4 * c + w)] = static_cast<T>(__fma_rn(range, u, low));
      }
    } else {
      for (int j = 0; j < 2 && 2 * c + j < numel; ++j) {
        const double u = device_uniform_double(words.word[2 * j], words.word[2 * j + 1]);
        out[element_offset(loop, 2 * c + j)] = static_cast<T>(__fma_rn(range, u, low));
      }
    }
  }
}

// Box-Muller of (u1, u2) as the CPU's normal_at: r = sqrt(-2 ln u1), the pair r cos(2 pi u2),
// r sin(2 pi u2); each value is rounded to T, then mean + std * value in double (one fused
// multiply-add), rounded to T.
template <typename T>
__device__ inline void store_pair(T* out, const StridedLoop<1>& loop, std::int64_t first,
                                  std::int64_t numel, double u1, double u2, double mean,
                                  double std) {
  const double radius = ::sqrt(__dmul_rn(-2.0, ::log(u1)));
  const double theta = __dmul_rn(kTwoPi, u2);
  const T values[2] = {static_cast<T>(__dmul_rn(radius, ::cos(theta))),
                       static_cast<T>(__dmul_rn(radius, ::sin(theta)))};
  for (int k = 0; k < 2 && first + k < numel; ++k) {
    const double scaled = __fma_rn(std, static_cast<double>(values[k]), mean);
    out[element_offset(loop, first + k)] = static_cast<T>(scaled);
  }
}

template <typename T>
__global__ void normal_kernel(T* out, const __grid_constant__ StridedLoop<1> loop,
                              std::int64_t numel, std::int64_t counters, double mean, double std,
                              PhiloxArgs args) {
  const ResolvedPhilox philox = resolve(args);
  for (std::int64_t c = first_index(); c < counters; c += grid_step()) {
    const PhiloxWords4 words = philox4x32_10(philox.offset + c, 0, philox.seed);
    if constexpr (sizeof(T) == sizeof(float)) {
      for (int pair = 0; pair < 2 && 4 * c + 2 * pair < numel; ++pair) {
        const double u1 =
            __dsub_rn(1.0, static_cast<double>(device_uniform_float(words.word[2 * pair])));
        const double u2 = static_cast<double>(device_uniform_float(words.word[2 * pair + 1]));
        store_pair(out, loop, 4 * c + 2 * pair, numel, u1, u2, mean, std);
      }
    } else {
      const double u1 = __dsub_rn(1.0, device_uniform_double(words.word[0], words.word[1]));
      const double u2 = device_uniform_double(words.word[2], words.word[3]);
      store_pair(out, loop, 2 * c, numel, u1, u2, mean, std);
    }
  }
}

// out[i] = low + bits64 % range, in unsigned arithmetic (range = high - low may exceed int64).
__global__ void randint_kernel(std::int64_t* out, const __grid_constant__ StridedLoop<1> loop,
                               std::int64_t numel, std::int64_t counters, std::uint64_t low,
                               std::uint64_t range, PhiloxArgs args) {
  const ResolvedPhilox philox = resolve(args);
  for (std::int64_t c = first_index(); c < counters; c += grid_step()) {
    const PhiloxWords4 words = philox4x32_10(philox.offset + c, 0, philox.seed);
    for (int j = 0; j < 2 && 2 * c + j < numel; ++j) {
      const std::uint64_t bits =
          (static_cast<std::uint64_t>(words.word[2 * j]) << 32) | words.word[2 * j + 1];
      out[element_offset(loop, 2 * c + j)] = static_cast<std::int64_t>(low + bits % range);
    }
  }
}

// loop operands: 0 out, 1 keep mask, 2 x. keep = U[0, 1) (24 bits) >= p;
// out = keep ? x * scale : 0.
template <typename T>
__global__ void dropout_kernel(T* out, bool* keep, const T* x,
                               const __grid_constant__ StridedLoop<3> loop, std::int64_t numel,
                               std::int64_t counters, float threshold, T scale, PhiloxArgs args) {
  const ResolvedPhilox philox = resolve(args);
  for (std::int64_t c = first_index(); c < counters; c += grid_step()) {
    const PhiloxWords4 words = philox4x32_10(philox.offset + c, 0, philox.seed);
    for (int w = 0; w < 4 && 4 * c + w < numel; ++w) {
      std::int64_t offsets[3];
      offsets_of<3>(loop, 4 * c + w, offsets);
      const bool kept = device_uniform_float(words.word[w]) >= threshold;
      keep[offsets[1]] = kept;
      out[offsets[0]] = kept ? static_cast<T>(x[offsets[2]] * scale) : T(0);
    }
  }
}

StridedLoop<1> loop_over(const Tensor& out, const char* name) {
  const IntArrayRef strides[1] = {out.strides()};
  return make_loop<1>(out.sizes(), strides, name);
}

// Launches the uniform or normal kernel over `out` (float32 or float64; infer has checked).
void launch_fill_kernel(const Tensor& out, double first, double second, PhiloxArgs args,
                        bool normal) {
  if (out.numel() == 0) return;
  const std::int64_t numel = out.numel();
  const auto counters = static_cast<std::int64_t>(
      normal ? counters_for_normal(out.dtype(), numel) : counters_for_uniform(out.dtype(), numel));
  const StridedLoop<1> loop = loop_over(out, normal ? "normal" : "uniform");
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(out.device()));
  cuda_backend::DeviceGuard guard(out.device());
  const unsigned blocks = blocks_for(counters);
  dispatch_floating(out.dtype(), normal ? "normal" : "uniform", [&]<typename T>() {
    T* o = static_cast<T*>(out.data_ptr());
    if (normal) {
      normal_kernel<T>
          <<<blocks, kThreads, 0, stream>>>(o, loop, numel, counters, first, second, args);
    } else {
      uniform_kernel<T>
          <<<blocks, kThreads, 0, stream>>>(o, loop, numel, counters, first, second - first, args);
    }
  });
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void rand(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::uint64_t counters = counters_for_uniform(out.dtype(), out.numel());
  launch_fill_kernel(out, 0.0, 1.0, detail::reserve_philox(call, out.device(), counters), false);
}

void randn(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::uint64_t counters = counters_for_normal(out.dtype(), out.numel());
  launch_fill_kernel(out, 0.0, 1.0, detail::reserve_philox(call, out.device(), counters), true);
}

void uniform(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = outputs[0];
  const std::uint64_t counters = counters_for_uniform(x.dtype(), x.numel());
  const UniformAttributes attributes = UniformAttributes::from(call.attributes);
  launch_fill_kernel(x, attributes.low, attributes.high,
                     detail::reserve_philox(call, x.device(), counters), false);
}

void normal(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = outputs[0];
  const std::uint64_t counters = counters_for_normal(x.dtype(), x.numel());
  const NormalAttributes attributes = NormalAttributes::from(call.attributes);
  launch_fill_kernel(x, attributes.mean, attributes.std,
                     detail::reserve_philox(call, x.device(), counters), true);
}

void randint(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const RandintAttributes attributes = RandintAttributes::from(call.attributes);
  const std::int64_t low = attributes.low;
  const std::uint64_t range = attributes.range();
  const PhiloxArgs args = detail::reserve_philox(call, out.device(), ceil_div(out.numel(), 2));
  if (out.numel() == 0) return;
  const std::int64_t numel = out.numel();
  const auto counters = static_cast<std::int64_t>(ceil_div(numel, 2));
  const StridedLoop<1> loop = loop_over(out, "randint");
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(out.device()));
  cuda_backend::DeviceGuard guard(out.device());
  randint_kernel<<<blocks_for(counters), kThreads, 0, stream>>>(
      out.data<std::int64_t>(), loop, numel, counters, static_cast<std::uint64_t>(low), range,
      args);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

void dropout(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = call.input(0);
  const Tensor& out = outputs[0];
  const Tensor& mask = outputs[1];
  const double p = DropoutAttributes::from(call.attributes).p;
  const PhiloxArgs args = detail::reserve_philox(call, x.device(), ceil_div(x.numel(), 4));
  if (x.numel() == 0) return;
  const std::int64_t numel = x.numel();
  const auto counters = static_cast<std::int64_t>(ceil_div(numel, 4));
  const IntArrayRef strides[3] = {out.strides(), mask.strides(), x.strides()};
  const StridedLoop<3> loop = make_loop<3>(x.sizes(), strides, "dropout");
  const float threshold = static_cast<float>(p);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(x.device()));
  cuda_backend::DeviceGuard guard(x.device());
  const unsigned blocks = blocks_for(counters);
  bool* keep = mask.data<bool>();
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
    dropout_kernel<T><<<blocks, kThreads, 0, stream>>>(
        static_cast<T*>(out.data_ptr()), keep, static_cast<const T*>(x.data_ptr()), loop, numel,
        counters, threshold, static_cast<T>(1.0 / (1.0 - p)), args);
  });
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace grove::ops::cuda
