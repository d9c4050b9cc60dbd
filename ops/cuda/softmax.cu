// CUDA kernel for softmax and log_softmax; ops/cpu/softmax.cpp is the reference it matches.
//
// One warp per row for rows of up to kMaxWarpLength elements (eight rows per block), one block
// per row for longer ones (RowGroup in block_reduce.cuh; a grid-stride loop over rows): a row
// is the elements along `dim` at one position of the other dims, which a StridedLoop over every
// other dim locates; within the row the group's threads step by its width at the row's stride,
// so a non-last `dim` (strided rows) takes the same path as the last one. Three sweeps, each
// closed by warp shuffles (and, for block rows, one shared-memory step): the maximum (NaN wins,
// as on the CPU), the sum of exp(x - max) in double, then the outputs exp(x - max) / sum, or
// x - lse with lse = max + log(sum) for log_softmax (in double, as the CPU's plain path).
// Attention's rows are short (64 in the GPT): a block per row spent its time synchronising, 12.5
// us for 8192 rows on an H200.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda/cuda_device.h"
#include "ops/attributes.h"
#include "ops/cuda/block_reduce.cuh"
#include "ops/cuda/kernel_loop.cuh"
#include "ops/cuda/softmax.h"

namespace grove::ops::cuda {
namespace {

// rows: operand 0 the output, 1 the input, over every dim but `dim`; each row has `length`
// elements at out_stride / in_stride.
// Rows up to this many elements take one warp each.
constexpr std::int64_t kMaxWarpLength = 1024;

template <typename T, bool kWarpRows>
__global__ void softmax_rows(const T* x, T* out, const __grid_constant__ StridedLoop<2> rows,
                             std::int64_t row_count, std::int64_t length, std::int64_t in_stride,
                             std::int64_t out_stride, bool log) {
  __shared__ double shared[kThreads / kWarp];
  const RowGroup<kWarpRows> group;
  for (std::int64_t r = group.first; r < row_count; r += group.step) {
    std::int64_t offsets[2];
    offsets_of<2>(rows, r, offsets);
    const T* in = x + offsets[1];
    T* o = out + offsets[0];
    double max = static_cast<double>(in[0]);  // rows are not empty (checked on the host)
    for (std::int64_t j = group.lane; j < length; j += group.width) {
      max = nan_max(max, static_cast<double>(in[j * in_stride]));
    }
    max = group.reduce(max, shared, NanMax{});
    double sum = 0.0;
    for (std::int64_t j = group.lane; j < length; j += group.width) {
      sum += ::exp(static_cast<double>(in[j * in_stride]) - max);
    }
    sum = group.sum(sum, shared);
    const double lse = max + ::log(sum);
    for (std::int64_t j = group.lane; j < length; j += group.width) {
      const double v = static_cast<double>(in[j * in_stride]);
      o[j * out_stride] = static_cast<T>(log ? v - lse : ::exp(v - max) / sum);
    }
  }
}

template <typename T>
void launch_softmax(const OpCall& call, const Tensor& out) {
  const Tensor& x = call.input(0);
  DimVector sizes, out_strides, in_strides;
  std::int64_t length = 1, in_stride = 1, out_stride = 1;
  if (x.dim() > 0) {
    const std::int64_t dim =
        wrap_dim(SoftmaxAttributes::from(call.attributes).dim, x.dim(), "softmax");
    for (std::int64_t d = 0; d < x.dim(); ++d) {
      if (d == dim) continue;
      sizes.push_back(x.size(d));
      out_strides.push_back(out.stride(d));
      in_strides.push_back(x.stride(d));
    }
    length = x.size(dim);
    in_stride = x.stride(dim);
    out_stride = out.stride(dim);
  }
  const std::int64_t row_count = product(sizes);
  if (length == 0 || row_count == 0) return;
  const IntArrayRef strides[2] = {out_strides, in_strides};
  const StridedLoop<2> rows = make_loop<2>(sizes, strides, op_name(call.kind).data());
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(out.device()));
  const bool warp_rows = length <= kMaxWarpLength;
  const std::int64_t blocks =
      warp_rows ? (row_count + kThreads / kWarp - 1) / (kThreads / kWarp) : row_count;
  auto kernel = warp_rows ? softmax_rows<T, true> : softmax_rows<T, false>;
  kernel<<<static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxBlocks)), kThreads, 0,
           stream>>>(static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()), rows,
                     row_count, length, in_stride, out_stride, call.kind == OpKind::LogSoftmax);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void softmax(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_softmax<T>(call, outputs[0]); });
}

}  // namespace grove::ops::cuda
