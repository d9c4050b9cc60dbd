// CPU kernels for softmax and log_softmax; the losses are in ops/cpu/loss.cpp.
//
// Everything works row by row: a row is the elements along `dim` at one position of the other
// dims, which a StridedLoop walks. Dense float32 rows
// (the common case: `dim` is the innermost dim of a contiguous tensor) take three vectorised
// sweeps over a row that sits in L1: the maximum; exp(x - max) written to the output while its
// sum accumulates; a scale by 1 / sum. log_softmax (and the losses) sum exp(x - max) without
// storing it, then use lse = max + log(sum). Subtracting the maximum keeps exp from overflowing.
// float64 and strided rows use scalar loops in double, the plainest form of the same steps.
//
// Rows are independent, so large inputs split their rows over OpenMP threads; each row is
// computed by one thread in a fixed order, so results do not depend on the thread count.
// The row math itself is in ops/cpu/softmax_rows.h, shared with the losses.
#include "ops/cpu/softmax.h"

#include <algorithm>
#include <cmath>

#include "core/strided_loop.h"
#include "ops/attributes.h"
#include "ops/cpu/softmax_rows.h"

namespace grove::ops::cpu {
namespace {

using namespace rows;

// Inputs with fewer elements than this run on one thread (thread start-up would dominate).
constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;

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

}  // namespace

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

}  // namespace grove::ops::cpu
