// CUDA kernels for reductions; ops/cpu/reduce.cpp is the reference they match.
//
// As on the CPU, the input's dims split into kept dims (one output element each) and reduced
// dims (the elements folded into it), each a StridedLoop: `outer` over (output, input) and
// `inner` over the input. One block folds one output element at a time (a grid-stride loop
// over outputs): each thread folds every blockDim-th reduced element, then warp shuffles and
// one shared-memory step combine the threads' partial results. The block is 32 to 256 threads,
// the smallest multiple of 32 that covers the row (short rows do not leave warps idle).
//
// Semantics are the CPU kernel's: floating-point sums (bfloat16 and float16 ones too, read as
// they are and rounded once from the double result) accumulate in double (Kahan-compensated
// per thread, with a plain sum that wins when the total is not finite, so inf and NaN propagate
// as IEEE says); var takes two passes (the mean, then the squared deviations); integer sums wrap
// in uint64; max keeps the first position on ties and a NaN beats every number (the first NaN
// wins). Positions are row-major over the reduced dims, which make_loop preserves.
//
// Few outputs over many elements each (a convolution's bias gradient: 32 channels, each a sum
// over batch and image, 100,352 elements) split each output's elements over several blocks:
// Note [Splitting a sum over blocks].
//
// Sums over outer dims (a linear layer's bias gradient: a (B, T, C) gradient summed over B and T)
// read whole rows at a time instead: Note [Summing columns] in ops/cuda/column_sums.cuh.
//
// Not done yet: several outputs per block for very short rows.
//
// Note [Splitting a sum over blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// One block per output leaves most of the GPU idle when there are fewer outputs than
// multiprocessors: the CNN's four bias-gradient sums took 83 us each on an H200 (ncu), 40% of
// its eager step's kernel time, on 32 or 64 blocks of 132 multiprocessors. When a sum or mean
// has fewer than kSplitBelowOutputs outputs and at least kSplitAtLeast elements each, its
// elements are cut into `parts` equal runs (as many as fill about kSplitBlocks blocks, each run
// at least kSplitAtLeast / 4 long); a first kernel sums each run in one block into a float64
// partial, and a second sums each output's partials in run order, with the same compensated
// sum, and divides. Which elements go to which run depends on the sizes only, so the result is
// the same from run to run. It may differ from one block's sum in the last bits of the double:
// rounding to float32 almost always hides that, a float64 output keeps it (both are within the
// CPU's tolerance). var keeps one block per output (its second pass needs the mean first).

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "core/cuda/cuda_device.h"
#include "ops/attributes.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/column_sums.cuh"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/opmath.cuh"
#include "ops/cuda/reduce.h"
#include "ops/reduce_loops.h"

namespace grove::ops::cuda {
namespace {

// Threads per block: the smallest multiple of 32 covering `count`, at most kThreads.
unsigned threads_for(std::int64_t count) {
  const std::int64_t warps = std::max<std::int64_t>(1, (count + kWarp - 1) / kWarp);
  return static_cast<unsigned>(std::min<std::int64_t>(warps * kWarp, kThreads));
}

// Note [Splitting a sum over blocks]: its thresholds, and how many runs each output's elements
// are cut into (1: no split).
constexpr std::int64_t kSplitBelowOutputs = 128;
constexpr std::int64_t kSplitAtLeast = 8192;
constexpr std::int64_t kSplitBlocks = 512;
std::int64_t split_parts(const ReduceLoops& loops) {
  if (loops.outputs >= kSplitBelowOutputs || loops.count < kSplitAtLeast) return 1;
  const std::int64_t to_fill = (kSplitBlocks + loops.outputs - 1) / loops.outputs;
  return std::max<std::int64_t>(1, std::min(to_fill, loops.count / (kSplitAtLeast / 4)));
}

// Note [Summing columns]: when a sum or mean takes that way: the outputs are consecutive
// elements of each input row, and the reduced dims make one strided run.
bool sums_columns(const ReduceLoops& loops) {
  return loops.outer.ndim == 1 && loops.outer.strides[1][0] == 1 && loops.inner.ndim == 1;
}

unsigned blocks_for_outputs(std::int64_t outputs) {
  return static_cast<unsigned>(std::min<std::int64_t>(outputs, kMaxBlocks));
}

// --- device side ---

// A Kahan-compensated sum in double with a plain sum beside it (see KahanSum in
// ops/cpu/reduce.cpp): the plain sum is the answer whenever it is not finite.
struct DeviceKahan {
  double sum = 0.0;
  double compensation = 0.0;
  double plain = 0.0;
  __device__ void add(double value) {
    const double y = value - compensation;
    const double t = sum + y;
    compensation = (t - sum) - y;
    sum = t;
    plain += value;
  }
  __device__ double value() const { return isfinite(plain) ? sum - compensation : plain; }
};

// The sum of f(v) over the reduced elements [begin, end) starting at `base`, this thread's share.
template <typename T, typename F>
__device__ double thread_sum_range(const StridedLoop<1>& inner, std::int64_t begin,
                                   std::int64_t end, const T* base, F f) {
  DeviceKahan total;
  for (std::int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
    std::int64_t offset[1];
    offsets_of<1>(inner, j, offset);
    total.add(f(base[offset[0]]));
  }
  return total.value();
}

// The sum of f(v) over all the reduced elements starting at `base`, this thread's share.
template <typename T, typename F>
__device__ double thread_sum(const StridedLoop<1>& inner, std::int64_t count, const T* base, F f) {
  return thread_sum_range(inner, 0, count, base, f);
}

// Note [Splitting a sum over blocks], first kernel: block b sums run b % parts of output
// b / parts into partials[b].
template <typename T>
__global__ void reduce_partials(const T* x, double* partials,
                                const __grid_constant__ StridedLoop<2> outer,
                                const __grid_constant__ StridedLoop<1> inner, std::int64_t count,
                                std::int64_t outputs, std::int64_t parts, std::int64_t run) {
  __shared__ double shared[kThreads / kWarp];
  for (std::int64_t b = blockIdx.x; b < outputs * parts; b += gridDim.x) {
    const std::int64_t i = b / parts;
    const std::int64_t begin = (b % parts) * run;
    const std::int64_t end = begin + run < count ? begin + run : count;
    std::int64_t offsets[2];
    offsets_of<2>(outer, i, offsets);
    const double total =
        block_reduce(thread_sum_range(inner, begin, end, x + offsets[1],
                                      [](T v) { return static_cast<double>(widen(v)); }),
                     shared, Sum{});
    if (threadIdx.x == 0) partials[b] = total;
  }
}

// Note [Splitting a sum over blocks], second kernel: one thread per output.
template <typename T>
__global__ void finish_partials(const double* partials, T* out,
                                const __grid_constant__ StridedLoop<2> outer, std::int64_t outputs,
                                std::int64_t parts, double divisor) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < outputs; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    DeviceKahan total;
    for (std::int64_t p = 0; p < parts; ++p) total.add(partials[i * parts + p]);
    std::int64_t offsets[2];
    offsets_of<2>(outer, i, offsets);
    out[offsets[0]] = static_cast<T>(total.value() / divisor);
  }
}

// Note [Summing columns]: element (row, column) of a column sum, and where each sum goes.
template <typename T>
struct ColumnElement {
  const T* x;
  std::int64_t row_stride;
  __device__ void operator()(std::int64_t row, std::int64_t column, double (&values)[1]) const {
    values[0] = static_cast<double>(widen(x[row * row_stride + column]));
  }
};
template <typename T>
struct ColumnResult {
  T* out;
  std::int64_t out_stride;
  double divisor;
  __device__ void operator()(std::int64_t column, int /*k*/, double sum) const {
    out[column * out_stride] = static_cast<T>(sum / divisor);
  }
};

// sum, mean or var of floating-point inputs; `divisor` as on the CPU.
template <typename T>
__global__ void reduce_floating(const T* x, T* out, const __grid_constant__ StridedLoop<2> outer,
                                const __grid_constant__ StridedLoop<1> inner, std::int64_t count,
                                std::int64_t outputs, bool var, double divisor) {
  __shared__ double shared[kThreads / kWarp];
  for (std::int64_t i = blockIdx.x; i < outputs; i += gridDim.x) {
    std::int64_t offsets[2];
    offsets_of<2>(outer, i, offsets);
    const T* base = x + offsets[1];
    double total = block_reduce(
        thread_sum(inner, count, base, [](T v) { return static_cast<double>(widen(v)); }), shared,
        Sum{});
    if (var) {
      const double mean = total / static_cast<double>(count);
      total = block_reduce(thread_sum(inner, count, base,
                                      [mean](T v) {
                                        const double deviation =
                                            static_cast<double>(widen(v)) - mean;
                                        return deviation * deviation;
                                      }),
                           shared, Sum{});
    }
    if (threadIdx.x == 0) out[offsets[0]] = static_cast<T>(total / divisor);
  }
}

// sum of int64, int32 or bool inputs into int64, wrapping (in uint64) on overflow.
template <typename T>
__global__ void reduce_integer_sum(const T* x, std::int64_t* out,
                                   const __grid_constant__ StridedLoop<2> outer,
                                   const __grid_constant__ StridedLoop<1> inner, std::int64_t count,
                                   std::int64_t outputs) {
  __shared__ unsigned long long shared[kThreads / kWarp];
  for (std::int64_t i = blockIdx.x; i < outputs; i += gridDim.x) {
    std::int64_t offsets[2];
    offsets_of<2>(outer, i, offsets);
    unsigned long long total = 0;
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      std::int64_t offset[1];
      offsets_of<1>(inner, j, offset);
      total +=
          static_cast<unsigned long long>(static_cast<std::int64_t>(x[offsets[1] + offset[0]]));
    }
    total = block_reduce(total, shared, Sum{});
    if (threadIdx.x == 0) out[offsets[0]] = static_cast<std::int64_t>(total);
  }
}

// True if (value, index) should replace (best, best_index): a NaN beats every number, a larger
// value beats a smaller one, and between equal values (or two NaNs) the first position wins.
template <typename T>
__device__ bool beats(T value, std::int64_t index, T best, std::int64_t best_index) {
  const bool value_nan = value != value;
  const bool best_nan = best != best;
  if (value_nan || best_nan) return value_nan && (!best_nan || index < best_index);
  return value > best || (value == best && index < best_index);
}

// The maximum and its first position for each output; either output pointer may be null.
template <typename T>
__global__ void reduce_max_kernel(const T* x, T* values, std::int64_t* indices,
                                  const __grid_constant__ StridedLoop<2> outer,
                                  const __grid_constant__ StridedLoop<1> inner, std::int64_t count,
                                  std::int64_t outputs) {
  __shared__ T shared_values[kThreads / kWarp];
  __shared__ std::int64_t shared_indices[kThreads / kWarp];
  const int warp = threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  for (std::int64_t i = blockIdx.x; i < outputs; i += gridDim.x) {
    std::int64_t offsets[2];
    offsets_of<2>(outer, i, offsets);
    const T* base = x + offsets[1];
    // Threads past the row start with (first element, position 0), which any tie or better
    // value replaces only by the rules of `beats`; infer rejects empty reductions.
    T best = base[0];
    std::int64_t best_index = 0;
    for (std::int64_t j = threadIdx.x; j < count; j += blockDim.x) {
      std::int64_t offset[1];
      offsets_of<1>(inner, j, offset);
      const T v = base[offset[0]];
      if (beats(v, j, best, best_index)) {
        best = v;
        best_index = j;
      }
    }
    for (int step = kWarp / 2; step > 0; step /= 2) {
      const T other = __shfl_down_sync(kFullMask, best, step);
      const std::int64_t other_index = __shfl_down_sync(kFullMask, best_index, step);
      if (beats(other, other_index, best, best_index)) {
        best = other;
        best_index = other_index;
      }
    }
    __syncthreads();  // the previous output's readers are done with the shared arrays
    if (lane == 0) {
      shared_values[warp] = best;
      shared_indices[warp] = best_index;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      for (int w = 1; w < static_cast<int>(blockDim.x / kWarp); ++w) {
        if (beats(shared_values[w], shared_indices[w], best, best_index)) {
          best = shared_values[w];
          best_index = shared_indices[w];
        }
      }
      if (values != nullptr) values[offsets[0]] = best;
      if (indices != nullptr) indices[offsets[0]] = best_index;
    }
  }
}

// --- host side ---

template <typename T>
void launch_sum(const OpCall& call, const Tensor& out, const ReduceLoops& loops) {
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = stream_of(out);
  const auto* x = static_cast<const T*>(call.input(0).data_ptr());
  const unsigned blocks = blocks_for_outputs(loops.outputs);
  const unsigned threads = threads_for(loops.count);
  if constexpr (std::is_floating_point_v<OpMath<T>>) {
    const auto count = static_cast<double>(loops.count);
    const double divisor =
        call.kind == OpKind::Sum ? 1.0
        : call.kind == OpKind::Mean
            ? count
            : std::max(0.0, count - ReduceAttributes::from(call.attributes).correction);
    if (call.kind != OpKind::Var && sums_columns(loops)) {  // Note [Summing columns]
      const ColumnResult<T> result{static_cast<T*>(out.data_ptr()), loops.outer.strides[0][0],
                                   divisor};
      launch_column_sums<1, DeviceKahan>(ColumnElement<T>{x, loops.inner.strides[0][0]},
                                         loops.count, loops.outputs, out.device(), stream, result);
      return;
    }
    const std::int64_t parts = split_parts(loops);
    if (parts > 1 && call.kind != OpKind::Var) {  // Note [Splitting a sum over blocks]
      const std::int64_t run = (loops.count + parts - 1) / parts;
      const Tensor partials =
          empty({loops.outputs * parts}, TensorOptions(DType::Float64).device(out.device()));
      auto* partial_sums = static_cast<double*>(partials.data_ptr());
      reduce_partials<T>
          <<<static_cast<unsigned>(std::min<std::int64_t>(loops.outputs * parts, kMaxBlocks)),
             kThreads, 0, stream>>>(x, partial_sums, loops.outer, loops.inner, loops.count,
                                    loops.outputs, parts, run);
      GROVE_CUDA_CHECK(cudaGetLastError());
      finish_partials<T><<<blocks_for(loops.outputs), kThreads, 0, stream>>>(
          partial_sums, static_cast<T*>(out.data_ptr()), loops.outer, loops.outputs, parts,
          divisor);
      GROVE_CUDA_CHECK(cudaGetLastError());
      return;
    }
    reduce_floating<T><<<blocks, threads, 0, stream>>>(
        x, static_cast<T*>(out.data_ptr()), loops.outer, loops.inner, loops.count, loops.outputs,
        call.kind == OpKind::Var, divisor);
  } else {  // infer lets only sum through with integer or bool inputs
    reduce_integer_sum<T>
        <<<blocks, threads, 0, stream>>>(x, static_cast<std::int64_t*>(out.data_ptr()), loops.outer,
                                         loops.inner, loops.count, loops.outputs);
  }
  GROVE_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_max(const OpCall& call, const OpOutputs& outputs, const ReduceLoops& loops) {
  const bool has_values = call.kind == OpKind::Max;
  const bool has_indices = call.kind == OpKind::Argmax || outputs.size() == 2;
  const Tensor& out = outputs[0];
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = stream_of(out);
  T* values = has_values ? static_cast<T*>(out.data_ptr()) : nullptr;
  auto* indices =
      has_indices ? static_cast<std::int64_t*>(outputs[outputs.size() - 1].data_ptr()) : nullptr;
  reduce_max_kernel<T><<<blocks_for_outputs(loops.outputs), threads_for(loops.count), 0, stream>>>(
      static_cast<const T*>(call.input(0).data_ptr()), values, indices, loops.outer, loops.inner,
      loops.count, loops.outputs);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void reduce_sum(const OpCall& call, const OpOutputs& outputs) {
  const ReduceLoops loops = make_reduce_loops(call, /*sort_inner=*/true);
  if (loops.outputs == 0) return;
  dispatch_dtype<DTypes::Stored>(call.input(0).dtype(), op_name(call.kind),
                                 [&]<typename T>() { launch_sum<T>(call, outputs[0], loops); });
}

void reduce_max(const OpCall& call, const OpOutputs& outputs) {
  const ReduceLoops loops = make_reduce_loops(call, /*sort_inner=*/false);
  if (loops.outputs == 0) return;
  dispatch_dtype<DTypes::AllButBool>(call.input(0).dtype(), op_name(call.kind),
                                     [&]<typename T>() { launch_max<T>(call, outputs, loops); });
}

}  // namespace grove::ops::cuda
