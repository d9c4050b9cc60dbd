// CPU kernels for softmax, log_softmax, cross_entropy and nll_loss.
//
// Everything works row by row: a row is the elements along `dim` at one position of the other
// dims, which a StridedLoop walks (for the losses, a row of the (N, C) scores). Dense float32 rows
// (the common case: `dim` is the innermost dim of a contiguous tensor) take three vectorised
// sweeps over a row that sits in L1: the maximum; exp(x - max) written to the output while its
// sum accumulates; a scale by 1 / sum. log_softmax and the losses sum exp(x - max) without
// storing it, then use lse = max + log(sum). Subtracting the maximum keeps exp from overflowing.
// float64 and strided rows use scalar loops in double, the plainest form of the same steps.
//
// Rows are independent, so large inputs split their rows over OpenMP threads; each row is
// computed by one thread in a fixed order, so results do not depend on the thread count.
// cross_entropy's mean is summed in fixed blocks of rows for the same reason.
#include "ops/cpu/softmax.h"

#include <Eigen/Core>
#include <algorithm>
#include <bit>
#include <cmath>

#include "core/strided_loop.h"
#include "ops/attributes.h"

namespace grove::ops::cpu {
namespace {

// Inputs with fewer elements than this run on one thread (thread start-up would dominate).
constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;
// cross_entropy sums its rows' losses in this many blocks, then adds the blocks in order.
constexpr int kLossBlocks = 64;

// --- dense float32 rows: a vectorisable exp ---
// Built for plain x86-64 (SSE2, GROVE_MARCH empty; the default is now x86-64-v3), Eigen's float
// exp took about 2 ns per element here, three quarters of a softmax; GCC vectorises the plain
// loop below (four floats per SSE2 instruction, eight with AVX2) at about half that. Softmax only
// needs exp of x - max <= 0, which keeps the function short.

// a if condition else b, bit by bit: GCC does not if-convert a float ?: inside a longer
// expression (under its default -ftrapping-math), which would stop the loop vectorising.
inline float select(bool condition, float a, float b) {
  const std::int32_t mask = -static_cast<std::int32_t>(condition);
  return std::bit_cast<float>((std::bit_cast<std::int32_t>(a) & mask) |
                              (std::bit_cast<std::int32_t>(b) & ~mask));
}

// exp(x) for x <= 0 (Cephes' expf: x = k ln 2 + r with |r| <= ln 2 / 2, exp(r) by a degree-7
// polynomial, 2^k put into the exponent bits). Within 8.2e-8 relative on [-87.3, 0] (checked
// against double exp on every 7th float); 0 below, where exp is under float's smallest normal
// (exp(-inf) = 0). NaN stays NaN.
inline float exp_nonpositive(float x) {
  constexpr float kLowest = -87.33654f;  // below this exp(x) is under float's smallest normal
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float clamped = select(x < kLowest, kLowest, x);
  const float shifted = clamped * 1.44269504088896341f + kRound;  // x / ln 2 + kRound
  const std::int32_t k = std::bit_cast<std::int32_t>(shifted) - std::bit_cast<std::int32_t>(kRound);
  const float k_float = shifted - kRound;
  const float r = (clamped - k_float * 0.693359375f) + k_float * 2.12194440e-4f;  // x - k ln 2
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float result = (p * r * r + r + 1.0f) * std::bit_cast<float>((k + 127) << 23);
  return select(x != x, x, select(x < kLowest, 0.0f, result));
}

// The sum, in double, of exp(x[j] - max) over n elements, which are also stored in `out` unless
// it is null. Float partial sums run over blocks of kBlock terms (eight lanes), so the sum's
// error does not grow with the row length.
double shifted_exp_sum(const float* x, std::int64_t n, float max, float* out) {
  constexpr std::int64_t kBlock = 256;
  float buffer[kBlock];
  double total = 0.0;
  for (std::int64_t start = 0; start < n; start += kBlock) {
    const std::int64_t length = std::min(kBlock, n - start);
    float* terms = out != nullptr ? out + start : buffer;
    for (std::int64_t j = 0; j < length; ++j) terms[j] = exp_nonpositive(x[start + j] - max);
    float lanes[8] = {};
    std::int64_t j = 0;
    for (; j + 8 <= length; j += 8) {
      for (int k = 0; k < 8; ++k) lanes[k] += terms[j + k];
    }
    for (; j < length; ++j) lanes[0] += terms[j];
    for (const float lane : lanes) total += lane;
  }
  return total;
}

float dense_max(const float* x, std::int64_t n) {
  return Eigen::Map<const Eigen::ArrayXf>(x, n).maxCoeff();  // vectorised
}

// --- every other row (float64, strided): scalar loops in double ---

// Largest of n > 0 values at stride `stride`; NaN if any is NaN.
template <typename T>
double row_max(const T* x, std::int64_t n, std::int64_t stride) {
  double best = static_cast<double>(x[0]);
  for (std::int64_t j = 1; j < n; ++j) {
    const double v = static_cast<double>(x[j * stride]);
    if (v > best || v != v) best = std::isnan(best) ? best : v;
  }
  return best;
}

// log(sum(exp(x))) over n > 0 values, computed as max + log(sum(exp(x - max))).
template <typename T>
double log_sum_exp(const T* x, std::int64_t n, std::int64_t stride) {
  if constexpr (std::is_same_v<T, float>) {
    if (stride == 1) {
      const float max = dense_max(x, n);
      return static_cast<double>(max) + std::log(shifted_exp_sum(x, n, max, nullptr));
    }
  }
  const double max = row_max(x, n, stride);
  double sum = 0.0;
  for (std::int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(x[j * stride]) - max);
  return max + std::log(sum);
}

// One row of softmax (or log_softmax): n > 0 elements, read at in_stride, written at out_stride.
// log_softmax subtracts in double: x - lse loses no digits when the result is near zero.
template <typename T>
void softmax_row(const T* x, T* out, std::int64_t n, std::int64_t in_stride,
                 std::int64_t out_stride, bool log) {
  if constexpr (std::is_same_v<T, float>) {
    if (in_stride == 1 && out_stride == 1 && !log) {
      const float max = dense_max(x, n);
      const auto inverse = static_cast<float>(1.0 / shifted_exp_sum(x, n, max, out));
      for (std::int64_t j = 0; j < n; ++j) out[j] *= inverse;
      return;
    }
  }
  if (log) {
    const double lse = log_sum_exp(x, n, in_stride);
    for (std::int64_t j = 0; j < n; ++j) {
      out[j * out_stride] = static_cast<T>(static_cast<double>(x[j * in_stride]) - lse);
    }
    return;
  }
  const double max = row_max(x, n, in_stride);
  double sum = 0.0;
  for (std::int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(x[j * in_stride]) - max);
  for (std::int64_t j = 0; j < n; ++j) {
    out[j * out_stride] =
        static_cast<T>(std::exp(static_cast<double>(x[j * in_stride]) - max) / sum);
  }
}

// The rows of a softmax: a loop over every dim but `dim`, and the row's length and strides.
struct Rows {
  StridedLoop<2> loop;  // operand 0 the output, 1 the input
  std::int64_t length;
  std::int64_t out_stride;
  std::int64_t in_stride;
};

Rows make_rows(const OpCall& call, const Tensor& out) {
  const Tensor& x = call.input(0);
  if (x.dim() == 0) {  // one row of one element
    const IntArrayRef none[2] = {{}, {}};
    return {make_loop<2>({}, none, "softmax"), 1, 1, 1};
  }
  const std::int64_t dim =
      wrap_dim(SoftmaxAttributes::from(call.attributes).dim, x.dim(), "softmax");
  DimVector sizes, out_strides, in_strides;
  for (std::int64_t d = 0; d < x.dim(); ++d) {
    if (d == dim) continue;
    sizes.push_back(x.size(d));
    out_strides.push_back(out.stride(d));
    in_strides.push_back(x.stride(d));
  }
  const IntArrayRef strides[2] = {out_strides, in_strides};
  return {make_loop<2>(sizes, strides, op_name(call.kind).data()), x.size(dim), out.stride(dim),
          x.stride(dim)};
}

// The (N, C) scores and (N) targets of a loss, as raw pointers and strides.
template <typename T>
struct LossArgs {
  const T* scores;
  std::int64_t rows, classes, row_stride, class_stride;
  const std::int64_t* targets;
  std::int64_t target_stride, ignore_index;
  DType dtype;
};

template <typename T>
LossArgs<T> loss_args(const OpCall& call) {
  const Tensor& scores = call.input(0);
  const Tensor& targets = call.input(1);
  return {static_cast<const T*>(scores.data_ptr()),
          scores.size(0),
          scores.size(1),
          scores.stride(0),
          scores.stride(1),
          static_cast<const std::int64_t*>(targets.data_ptr()),
          targets.stride(0),
          LossAttributes::from(call.attributes).ignore_index,
          scores.dtype()};
}

template <typename T>
void launch_softmax(const Rows& rows, const T* x, T* out, bool log, Stream stream) {
  launch_cpu(stream, [=] {
    if (rows.length == 0) return;
    const int last = rows.loop.ndim - 1;
    const std::int64_t out_step = rows.loop.strides[0][last];
    const std::int64_t in_step = rows.loop.strides[1][last];
    for_each_run<2>(rows.loop, [&](const std::int64_t* offset, std::int64_t n) {
#pragma omp parallel for schedule(static) if (n * rows.length >= kParallelElements)
      for (std::int64_t j = 0; j < n; ++j) {
        softmax_row(x + offset[1] + j * in_step, out + offset[0] + j * out_step, rows.length,
                    rows.in_stride, rows.out_stride, log);
      }
    });
  });
}

template <typename T>
void launch_cross_entropy(const LossArgs<T>& args, T* loss, T* lse, Stream stream) {
  launch_cpu(stream, [=] {
    check_targets("cross_entropy", args.dtype, args.targets, args.rows, args.classes,
                  args.target_stride, args.ignore_index);
    double partial[kLossBlocks] = {};
    std::int64_t counted[kLossBlocks] = {};
    const std::int64_t block = (args.rows + kLossBlocks - 1) / kLossBlocks;
#pragma omp parallel for schedule(static) if (args.rows * args.classes >= kParallelElements)
    for (int b = 0; b < kLossBlocks; ++b) {
      const std::int64_t end = std::min(args.rows, (b + 1) * block);
      for (std::int64_t i = b * block; i < end; ++i) {
        const T* row = args.scores + i * args.row_stride;
        const double row_lse = log_sum_exp(row, args.classes, args.class_stride);
        lse[i] = static_cast<T>(row_lse);
        const std::int64_t target = args.targets[i * args.target_stride];
        if (target == args.ignore_index) continue;
        partial[b] += row_lse - static_cast<double>(row[target * args.class_stride]);
        ++counted[b];
      }
    }
    double total = 0.0;
    std::int64_t count = 0;
    for (int b = 0; b < kLossBlocks; ++b) {
      total += partial[b];
      count += counted[b];
    }
    *loss = static_cast<T>(total / static_cast<double>(count));  // 0 / 0 = NaN: none counted
  });
}

template <typename T>
void launch_nll_loss(const LossArgs<T>& args, T* loss, Stream stream) {
  launch_cpu(stream, [=] {
    check_targets("nll_loss", args.dtype, args.targets, args.rows, args.classes, args.target_stride,
                  args.ignore_index);
    double total = 0.0;
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < args.rows; ++i) {
      const std::int64_t target = args.targets[i * args.target_stride];
      if (target == args.ignore_index) continue;
      total -= static_cast<double>(args.scores[i * args.row_stride + target * args.class_stride]);
      ++count;
    }
    *loss = static_cast<T>(total / static_cast<double>(count));  // 0 / 0 = NaN: none counted
  });
}

}  // namespace

void check_targets(const char* op, DType dtype, const std::int64_t* targets, std::int64_t rows,
                   std::int64_t classes, std::int64_t target_stride, std::int64_t ignore_index) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t target = targets[i * target_stride];
    GROVE_CHECK(target == ignore_index || (target >= 0 && target < classes), op, ": target ",
                target, " at position ", i, " is out of range for ", classes,
                " classes (expected a value in [0, ", classes, ") or ignore_index ", ignore_index,
                ") (inputs: ", dtype, "[", rows, ", ", classes, "], int64[", rows, "])");
  }
}

void softmax(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const Rows rows = make_rows(call, out);
  const bool log = call.kind == OpKind::LogSoftmax;
  const Stream stream = current_stream(out.device());
  dispatch_floating(out.dtype(), "softmax", [&]<typename T>() {
    launch_softmax(rows, static_cast<const T*>(call.input(0).data_ptr()),
                   static_cast<T*>(out.data_ptr()), log, stream);
  });
}

void cross_entropy(const OpCall& call, const OpOutputs& outputs) {
  const Stream stream = current_stream(outputs[0].device());
  dispatch_floating(outputs[0].dtype(), "cross_entropy", [&]<typename T>() {
    launch_cross_entropy(loss_args<T>(call), static_cast<T*>(outputs[0].data_ptr()),
                         static_cast<T*>(outputs[1].data_ptr()), stream);
  });
}

void nll_loss(const OpCall& call, const OpOutputs& outputs) {
  const Stream stream = current_stream(outputs[0].device());
  dispatch_floating(outputs[0].dtype(), "nll_loss", [&]<typename T>() {
    launch_nll_loss(loss_args<T>(call), static_cast<T*>(outputs[0].data_ptr()), stream);
  });
}

}  // namespace grove::ops::cpu
