// CUDA kernel for softmax and log_softmax; ops/cpu/softmax.cpp is the reference it matches.
//
// One block per row (a grid-stride loop over rows): a row is the elements along `dim` at one
// position of the other dims, which a StridedLoop over every other dim locates; within the row
// threads step by blockDim at the row's stride, so a non-last `dim` (strided rows) takes the
// same path as the last one. Three sweeps, each closed by warp shuffles and one shared-memory
// step: the maximum (NaN wins, as on the CPU), the sum of exp(x - max) in double, then the
// outputs exp(x - max) / sum, or x - lse with lse = max + log(sum) for log_softmax (in double,
// as the CPU's plain path). The block is 32 to 256 threads, covering short rows with one warp.
//
// Not done yet: several rows per block for very short rows (the losses, in loss.cu, do that).
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
template <typename T>
__global__ void softmax_rows(const T* x, T* out, const __grid_constant__ StridedLoop<2> rows,
                             std::int64_t row_count, std::int64_t length, std::int64_t in_stride,
                             std::int64_t out_stride, bool log) {
  __shared__ double shared[kThreads / kWarp];
  for (std::int64_t r = blockIdx.x; r < row_count; r += gridDim.x) {
    std::int64_t offsets[2];
    offsets_of<2>(rows, r, offsets);
    const T* in = x + offsets[1];
    T* o = out + offsets[0];
    double max = static_cast<double>(in[0]);  // rows are not empty (checked on the host)
    for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      max = nan_max(max, static_cast<double>(in[j * in_stride]));
    }
    max = block_reduce(max, shared, NanMax{});
    double sum = 0.0;
    for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      sum += ::exp(static_cast<double>(in[j * in_stride]) - max);
    }
    sum = block_reduce(sum, shared, Sum{});
    const double lse = max + ::log(sum);
    for (std::int64_t j = threadIdx.x; j < length; j += blockDim.x) {
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
  const std::int64_t warps = std::min<std::int64_t>((length + kWarp - 1) / kWarp, kThreads / kWarp);
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(out.device()));
  softmax_rows<T><<<static_cast<unsigned>(std::min<std::int64_t>(row_count, kMaxBlocks)),
                    static_cast<unsigned>(warps * kWarp), 0, stream>>>(
      static_cast<const T*>(x.data_ptr()), static_cast<T*>(out.data_ptr()), rows, row_count, length,
      in_stride, out_stride, call.kind == OpKind::LogSoftmax);
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void softmax(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_softmax<T>(call, outputs[0]); });
}

}  // namespace grove::ops::cuda
