// CUDA kernels for embedding and embedding_backward; ops/cpu/embedding.cpp is the reference they
// match.
//
// embedding (a gather): one thread per output element; out[i, f] = weight[indices[i], f], the
// index found through a StridedLoop over the (any-strided) indices, the row through the
// weight's strides. Neighbouring threads take neighbouring features: coalesced writes, and
// coalesced reads of a dense weight row.
//
// embedding_backward, deterministic without float atomics: one block per output row r (threads
// over its features). Each warp scans the indices 32 at a time, a ballot marks the positions
// equal to r, and the marked grad rows are added in increasing position: every output element
// is summed by one thread, in index order, in the grad's dtype, exactly as the CPU loop does, so
// the two agree bit for bit. Every block reads every index (from L2 after the first), which is
// cheap for the vocabularies here (128 rows x 2048 indices: 64 ballots a warp); a very large
// vocabulary with many indices would want a sort by index first (not done).
//
// Note [Out-of-range indices on the GPU]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The CPU checks indices on the host before the launch and again in the kernel (Note [Index
// checks during capture] in ops/embedding.h). For CUDA tensors the host cannot read the indices
// without a copy and a synchronisation, so only the kernel sees them. A kernel that finds a bad
// index never reads through it: it reports it (Note [Device-side error reports] in
// core/cuda/device_errors.h), so the next synchronisation throws DeviceCheckError naming the op,
// the index and its position, and it poisons what the index would have produced, in case the
// result is used before that: embedding writes a row of NaN for it (0 in an integer table), and
// embedding_backward (which scans every index anyway) writes NaN over its whole result. one_hot
// (ops/cuda/shape.cu) and the losses' targets (Note [Out-of-range targets on the GPU] in
// ops/cuda/loss.cu) follow the same rule. The CUDA context stays usable. A kernel with nothing to
// write (an empty table row width, a table of no rows, an empty output) is not launched, so its
// indices go unchecked.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/cuda/cuda_device.h"
#include "core/cuda/device_errors.cuh"
#include "ops/cuda/embedding.h"
#include "ops/cuda/kernel_loop.cuh"

namespace grove::ops::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
// embedding_backward: threads per block (the features of one output row, in chunks).
constexpr int kScatterThreads = 128;

template <typename T>
__device__ inline T quiet_nan() {
  if constexpr (std::is_same_v<T, float>) {
    return __int_as_float(0x7fc00000);
  } else {
    return __longlong_as_double(0x7ff8000000000000LL);
  }
}

// What a gather writes for a bad index: see Note [Out-of-range indices on the GPU].
template <typename T>
__device__ inline T bad_index_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return quiet_nan<T>();
  } else {
    return T{};
  }
}

template <typename T>
__global__ void gather_rows(const T* weight, std::int64_t rows, std::int64_t features,
                            std::int64_t row_stride, std::int64_t feature_stride,
                            const std::int64_t* indices,
                            const __grid_constant__ StridedLoop<1> loop, std::int64_t count, T* out,
                            const cuda_backend::DeviceErrorSite errors) {
  const std::int64_t total = count * features;
  for (std::int64_t k = first_index(); k < total; k += grid_step()) {
    const std::int64_t i = k / features;
    const std::int64_t f = k - i * features;
    std::int64_t offset[1];
    offsets_of<1>(loop, i, offset);
    const std::int64_t index = indices[offset[0]];
    if (index >= 0 && index < rows) {
      out[k] = weight[index * row_stride + f * feature_stride];
    } else {
      out[k] = bad_index_value<T>();
      if (f == 0) cuda_backend::report_bad_value(errors, index, i, rows);  // once per index
    }
  }
}

// out (rows, features) = 0; out[indices[i], :] += grad[i, :] for i in order. grad (count,
// features) and indices (count) contiguous.
template <typename T>
__global__ void scatter_rows(const T* grad, const std::int64_t* indices, std::int64_t count,
                             std::int64_t rows, std::int64_t features, T* out,
                             const cuda_backend::DeviceErrorSite errors) {
  const int lane = static_cast<int>(threadIdx.x % kWarp);
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    for (std::int64_t first_feature = 0; first_feature < features; first_feature += blockDim.x) {
      const std::int64_t f = first_feature + threadIdx.x;
      const bool active = f < features;  // inactive threads still vote
      T sum = T(0);
      bool bad = false;
      for (std::int64_t base = 0; base < count; base += kWarp) {
        const std::int64_t i = base + lane;
        const std::int64_t index = i < count ? indices[i] : 0;
        const bool present = i < count;
        unsigned matches = __ballot_sync(kFullMask, present && index == r);
        const bool out_of_range = present && (index < 0 || index >= rows);
        bad |= __ballot_sync(kFullMask, out_of_range) != 0u;
        // Every block sees every index; the first row's first chunk reports each bad one once.
        if (out_of_range && r == 0 && first_feature == 0 && threadIdx.x < kWarp) {
          cuda_backend::report_bad_value(errors, index, i, rows);
        }
        while (matches != 0u) {
          const int bit = __ffs(static_cast<int>(matches)) - 1;
          matches &= matches - 1u;
          if (active) sum += grad[(base + bit) * features + f];
        }
      }
      if (active) {
        out[r * features + f] = bad ? quiet_nan<T>() : sum;
      }
    }
  }
}

template <typename T>
void launch_embedding(const OpCall& call, const Tensor& out) {
  const Tensor& weight = call.input(0);
  const Tensor& indices = call.input(1);
  const std::int64_t count = indices.numel();
  const std::int64_t features = weight.sizes()[1];
  if (count == 0 || features == 0) return;
  const IntArrayRef strides[1] = {indices.strides()};
  const StridedLoop<1> loop = make_loop<1>(indices.sizes(), strides, "embedding");
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(out.device()));
  gather_rows<T><<<blocks_for(count * features), kThreads, 0, stream>>>(
      static_cast<const T*>(weight.data_ptr()), weight.sizes()[0], features, weight.strides()[0],
      weight.strides()[1], static_cast<const std::int64_t*>(indices.data_ptr()), loop, count,
      static_cast<T*>(out.data_ptr()),
      cuda_backend::device_error_site(out.device(), "embedding", "index", "0 <= index < {bound}"));
  GROVE_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void launch_embedding_backward(const OpCall& call, const Tensor& out) {
  const std::int64_t rows = out.size(0);
  const std::int64_t features = out.size(1);
  if (rows == 0 || features == 0) return;
  const Tensor grad = call.input(0).contiguous();
  const Tensor indices = call.input(1).contiguous();
  cuda_backend::DeviceGuard guard(out.device());
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(out.device()));
  scatter_rows<T>
      <<<static_cast<unsigned>(std::min(rows, kMaxBlocks)), kScatterThreads, 0, stream>>>(
          static_cast<const T*>(grad.data_ptr()),
          static_cast<const std::int64_t*>(indices.data_ptr()), indices.numel(), rows, features,
          static_cast<T*>(out.data_ptr()),
          cuda_backend::device_error_site(out.device(), "embedding_backward", "index",
                                          "0 <= index < {bound} (num_weights)"));
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void embedding(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  switch (out.dtype()) {
    case DType::Float32:
      return launch_embedding<float>(call, out);
    case DType::Float64:
      return launch_embedding<double>(call, out);
    case DType::Int64:
      return launch_embedding<std::int64_t>(call, out);
    case DType::Int32:
      return launch_embedding<std::int32_t>(call, out);
    case DType::Bool:
      return launch_embedding<bool>(call, out);
  }
  GROVE_INTERNAL_ASSERT(false, "embedding reached the CUDA kernel with dtype ", out.dtype());
}

void embedding_backward(const OpCall& call, const OpOutputs& outputs) {
  switch (outputs[0].dtype()) {
    case DType::Float32:
      return launch_embedding_backward<float>(call, outputs[0]);
    case DType::Float64:
      return launch_embedding_backward<double>(call, outputs[0]);
    default:
      break;
  }
  GROVE_INTERNAL_ASSERT(false, "embedding_backward reached the CUDA kernel with dtype ",
                        outputs[0].dtype());
}

}  // namespace grove::ops::cuda
