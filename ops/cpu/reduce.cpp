// CPU kernels for reductions. The input's dims are split into kept dims (one output element per
// position) and reduced dims (the elements folded into it); each becomes a StridedLoop: `outer`
// over (output, input) and `inner` over the input alone. A kernel walks `outer` and, for each
// output element, folds the `inner` elements starting at that element's input offset.
//
// Sums of floating-point values accumulate in double with Kahan compensation (eight independent
// lanes on dense runs, which the compiler vectorises), so float32 results are exact to rounding
// and float64 results lose no accuracy on long rows. When the reduced dims are not the
// innermost ones (sum over dim 0 of a row-major matrix), `outer`'s dense runs are folded a chunk
// of outputs at a time, reading each input row once, instead of one strided column per output.
// var uses two passes (the mean, then the squared deviations from it), which is exact enough
// without Welford's update and reads the input twice.
#include "ops/cpu/reduce.h"

#include <algorithm>
#include <cmath>

#include "core/strided_loop.h"
#include "ops/attributes.h"
#include "ops/reduce_loops.h"

namespace grove::ops::cpu {
namespace {

// Kahan-compensated sum in double: the error stays a few ulps whatever the number of terms.
// An infinite or NaN term makes the compensation NaN, so a plain sum runs alongside and is
// the answer whenever it is not finite (inf + 1 is inf, inf - inf is NaN, as IEEE says).
struct KahanSum {
  double sum = 0.0;
  double compensation = 0.0;
  double plain = 0.0;
  void add(double value) {
    const double y = value - compensation;
    const double t = sum + y;
    compensation = (t - sum) - y;
    sum = t;
    plain += value;
  }
  double value() const { return std::isfinite(plain) ? sum - compensation : plain; }
};

// kLanes or kChunk Kahan sums side by side, written so the compiler vectorises across lanes.
template <int kWidth>
struct KahanLanes {
  double sum[kWidth] = {};
  double compensation[kWidth] = {};
  double plain[kWidth] = {};
  void add(int k, double value) {
    const double y = value - compensation[k];
    const double t = sum[k] + y;
    compensation[k] = (t - sum[k]) - y;
    sum[k] = t;
    plain[k] += value;
  }
  double value(int k) const {
    return std::isfinite(plain[k]) ? sum[k] - compensation[k] : plain[k];
  }
};

constexpr int kLanes = 8;   // independent accumulators on a dense run
constexpr int kChunk = 64;  // outputs folded together in the column strategy

// Adds f(x[0]), f(x[stride]), ... (n terms) to `total`.
template <typename T, typename F>
void add_run(KahanSum& total, const T* x, std::int64_t n, std::int64_t stride, F f) {
  std::int64_t j = 0;
  if (stride == 1 && n >= 2 * kLanes) {
    KahanLanes<kLanes> lanes;
    for (; j + kLanes <= n; j += kLanes) {
      for (int k = 0; k < kLanes; ++k) lanes.add(k, f(x[j + k]));
    }
    for (int k = 0; k < kLanes; ++k) total.add(lanes.value(k));
  }
  for (; j < n; ++j) total.add(f(x[j * stride]));
}

// The sum of f(v) over the reduced elements that start at `base`.
template <typename T, typename F>
double fold_row(const StridedLoop<1>& inner, const T* base, F f) {
  KahanSum total;
  const std::int64_t stride = inner.strides[0][inner.ndim - 1];
  for_each_run<1>(inner, [&](const std::int64_t* offset, std::int64_t n) {
    add_run(total, base + offset[0], n, stride, f);
  });
  return total.value();
}

// sums[k] = the sum of f(k, v) over the reduced elements that start at base + k, k < len: the
// outputs' inputs are adjacent, so each step reads `len` neighbours (vectorised).
template <typename T, typename F>
void fold_columns(const StridedLoop<1>& inner, const T* base, int len, F f, double* sums) {
  KahanLanes<kChunk> lanes;
  const std::int64_t stride = inner.strides[0][inner.ndim - 1];
  for_each_run<1>(inner, [&](const std::int64_t* offset, std::int64_t n) {
    for (std::int64_t r = 0; r < n; ++r) {
      const T* row = base + offset[0] + r * stride;
      for (int k = 0; k < len; ++k) lanes.add(k, f(k, row[k]));
    }
  });
  for (int k = 0; k < len; ++k) sums[k] = lanes.value(k);
}

// sum, mean or var of floating-point inputs.
// Outputs times reduced elements from which a reduction's outputs are spread over threads.
constexpr std::int64_t kMinParallelReduce = std::int64_t{1} << 16;

template <typename T>
void launch_floating(const ReduceLoops& loops, const T* x, T* out, OpKind kind, double correction,
                     Stream stream) {
  launch_cpu(stream, [=] {
    const auto count = static_cast<double>(loops.count);
    // var: the sum of squared deviations over max(0, count - correction), NaN if that is 0.
    const double divisor = kind == OpKind::Sum    ? 1.0
                           : kind == OpKind::Mean ? count
                                                  : std::max(0.0, count - correction);
    const int last = loops.outer.ndim - 1;
    const std::int64_t out_stride = loops.outer.strides[0][last];
    const std::int64_t in_stride = loops.outer.strides[1][last];
    const bool columns =
        in_stride == 1 && loops.count > 1 && loops.inner.strides[0][loops.inner.ndim - 1] != 1;
    auto identity = [](T v) { return static_cast<double>(v); };
    // One output from its reduced elements, which start at `base`.
    auto reduce_one = [&](const T* base) {
      double total = fold_row(loops.inner, base, identity);
      if (kind == OpKind::Var) {
        const double mean = total / count;
        total = fold_row(loops.inner, base, [mean](T v) {
          const double deviation = static_cast<double>(v) - mean;
          return deviation * deviation;
        });
      }
      return static_cast<T>(total / divisor);
    };
    // Few outputs of many elements each (a convolution's bias gradient: per channel, over batch
    // and image) are spread over the OpenMP threads, one output per thread at a time: each is
    // folded by one thread in the same order as without threads, so no value changes.
    if (!columns && loops.outer.ndim == 1 && loops.outputs > 1 &&
        loops.outputs * loops.count >= kMinParallelReduce) {
#pragma omp parallel for schedule(static)
      for (std::int64_t i = 0; i < loops.outputs; ++i) {
        out[i * out_stride] = reduce_one(x + i * in_stride);
      }
      return;
    }
    for_each_run<2>(loops.outer, [&](const std::int64_t* offset, std::int64_t n) {
      if (!columns) {
        for (std::int64_t j = 0; j < n; ++j) {
          out[offset[0] + j * out_stride] = reduce_one(x + offset[1] + j * in_stride);
        }
        return;
      }
      // Chunks of columns are independent: spread over threads when there is work enough (a
      // linear layer's bias gradient), each folded by one thread as without threads.
      const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1 && n * loops.count >= kMinParallelReduce)
      for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
        const std::int64_t start = chunk * kChunk;
        const int len = static_cast<int>(std::min<std::int64_t>(kChunk, n - start));
        const T* base = x + offset[1] + start;
        double sums[kChunk];
        fold_columns(
            loops.inner, base, len, [](int, T v) { return static_cast<double>(v); }, sums);
        if (kind == OpKind::Var) {
          double means[kChunk];
          for (int k = 0; k < len; ++k) means[k] = sums[k] / count;
          fold_columns(
              loops.inner, base, len,
              [&means](int k, T v) {
                const double deviation = static_cast<double>(v) - means[k];
                return deviation * deviation;
              },
              sums);
        }
        for (int k = 0; k < len; ++k) {
          out[offset[0] + (start + k) * out_stride] = static_cast<T>(sums[k] / divisor);
        }
      }
    });
  });
}

// sum of int64, int32 or bool inputs into int64 (wrapping on overflow, like PyTorch).
template <typename T>
void launch_integer_sum(const ReduceLoops& loops, const T* x, std::int64_t* out, Stream stream) {
  launch_cpu(stream, [=] {
    const int last = loops.outer.ndim - 1;
    const std::int64_t inner_stride = loops.inner.strides[0][loops.inner.ndim - 1];
    for_each_run<2>(loops.outer, [&](const std::int64_t* offset, std::int64_t n) {
      for (std::int64_t j = 0; j < n; ++j) {
        const T* base = x + offset[1] + j * loops.outer.strides[1][last];
        std::uint64_t total = 0;  // unsigned: overflow wraps instead of being undefined
        for_each_run<1>(loops.inner, [&](const std::int64_t* inner_offset, std::int64_t m) {
          const T* run = base + inner_offset[0];
          for (std::int64_t r = 0; r < m; ++r) {
            total += static_cast<std::uint64_t>(static_cast<std::int64_t>(run[r * inner_stride]));
          }
        });
        out[offset[0] + j * loops.outer.strides[0][last]] = static_cast<std::int64_t>(total);
      }
    });
  });
}

// The maximum and its first position (row-major over the reduced dims) for each output; either
// output pointer may be null. A NaN beats every number, and the first NaN wins.
template <typename T>
void launch_max(const ReduceLoops& loops, const T* x, T* values, std::int64_t* indices,
                Stream stream) {
  launch_cpu(stream, [=] {
    const int last = loops.outer.ndim - 1;
    const std::int64_t inner_stride = loops.inner.strides[0][loops.inner.ndim - 1];
    for_each_run<2>(loops.outer, [&](const std::int64_t* offset, std::int64_t n) {
      for (std::int64_t j = 0; j < n; ++j) {
        const T* base = x + offset[1] + j * loops.outer.strides[1][last];
        T best = base[0];  // infer rejects empty reductions
        std::int64_t best_index = 0;
        std::int64_t position = 0;
        for_each_run<1>(loops.inner, [&](const std::int64_t* inner_offset, std::int64_t m) {
          const T* run = base + inner_offset[0];
          for (std::int64_t r = 0; r < m; ++r, ++position) {
            const T v = run[r * inner_stride];
            if (v > best || (v != v && best == best)) {
              best = v;
              best_index = position;
            }
          }
        });
        const std::int64_t out_offset = offset[0] + j * loops.outer.strides[0][last];
        if (values != nullptr) values[out_offset] = best;
        if (indices != nullptr) indices[out_offset] = best_index;
      }
    });
  });
}

}  // namespace

void reduce_sum(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const ReduceLoops loops = make_reduce_loops(call, /*sort_inner=*/true);
  const Stream stream = current_stream(out.device());
  const void* x = call.input(0).data_ptr();
  void* o = out.data_ptr();
  dispatch_dtype(call.input(0).dtype(), "reduce_sum", [&]<typename T>() {
    if constexpr (std::is_floating_point_v<T>) {
      launch_floating<T>(loops, static_cast<const T*>(x), static_cast<T*>(o), call.kind,
                         ReduceAttributes::from(call.attributes).correction, stream);
    } else {  // infer lets only sum through with integer or bool inputs
      launch_integer_sum<T>(loops, static_cast<const T*>(x), static_cast<std::int64_t*>(o), stream);
    }
  });
}

void reduce_max(const OpCall& call, const OpOutputs& outputs) {
  const bool has_values = call.kind == OpKind::Max;
  const bool has_indices = call.kind == OpKind::Argmax || outputs.size() == 2;
  const Tensor& out = outputs[0];
  const ReduceLoops loops = make_reduce_loops(call, /*sort_inner=*/false);
  const Stream stream = current_stream(out.device());
  const void* x = call.input(0).data_ptr();
  void* values = has_values ? out.data_ptr() : nullptr;
  auto* indices =
      has_indices ? static_cast<std::int64_t*>(outputs[outputs.size() - 1].data_ptr()) : nullptr;
  dispatch_dtype<DTypes::AllButBool>(call.input(0).dtype(), "reduce_max", [&]<typename T>() {
    launch_max<T>(loops, static_cast<const T*>(x), static_cast<T*>(values), indices, stream);
  });
}

}  // namespace grove::ops::cpu
