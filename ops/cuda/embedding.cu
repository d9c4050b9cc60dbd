// CUDA kernels for embedding and embedding_backward; ops/cpu/embedding.cpp is the reference they
// match.
//
// embedding (a gather): one thread per output element; out[i, f] = weight[indices[i], f], the
// index found through a StridedLoop over the (any-strided) indices, the row through the
// weight's strides. Neighbouring threads take neighbouring features: coalesced writes, and
// coalesced reads of a dense weight row.
//
// embedding_backward, deterministic without float atomics, in one of two ways; both add each
// output element's grad rows in increasing position, in the grad's dtype, starting from 0:
// exactly the CPU loop's order, so the results agree bit for bit.
// - Scan (at most 512 indices): one launch. One block per output row r, threads over its
//   features; each warp scans the indices 32 at a time and a ballot marks the positions equal to
//   r. Every block reads every index: O(rows x N) reads for N indices, and each warp's scan is a
//   chain of N / 32 dependent L2 reads, so it is latency-bound: 125 us of GPU time for the GPT's
//   128 rows x 2048 indices on an H200, where the sort takes 47 us (bench/cuda_embedding_bench).
// - Sort (more indices): number_and_check writes positions[i] = i and checks every index; then
//   cub::DeviceRadixSort::SortPairs sorts (index, position) pairs by index, stably, so equal
//   indices keep increasing positions (only the bits valid indices use are sorted: 16 for
//   50,000 rows); then sum_segments, one block per output row, finds r's run by binary search and
//   adds those rows. O(N log N + rows x features + N x features), in about six launches.
//
// Note [Out-of-range indices on the GPU]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The CPU checks indices on the host before the launch and again in the kernel
// (Note [Index checks during capture] in ops/embedding.h). For CUDA tensors the host cannot read
// the indices without a copy and a synchronisation, so only the kernel sees them. A kernel that
// finds a bad index never reads through it: it reports it (Note [Device-side error reports] in
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
#include <limits>
#include <type_traits>

#include <cub/device/device_radix_sort.cuh>

#include "core/cuda/cuda_device.h"
#include "core/cuda/device_errors.cuh"
#include "core/tensor.h"
#include "ops/cuda/embedding.h"
#include "ops/cuda/kernel_loop.cuh"

namespace grove::ops::cuda {
namespace {

// embedding_backward: threads per block (the features of one output row, in chunks).
constexpr int kScatterThreads = 128;
constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
// embedding_backward scans up to this many indices, and sorts more.
std::int64_t g_scan_limit = 512;

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

// Sort path, step 1: positions[i] = i, and every index outside [0, rows) reported;
// *any_bad is set if there is one.
__global__ void number_and_check(const std::int64_t* indices, std::int64_t count, std::int64_t rows,
                                 std::int64_t* positions, int* any_bad,
                                 const cuda_backend::DeviceErrorSite errors) {
  for (std::int64_t i = first_index(); i < count; i += grid_step()) {
    positions[i] = i;
    const std::int64_t index = indices[i];
    if (index < 0 || index >= rows) {
      *any_bad = 1;
      cuda_backend::report_bad_value(errors, index, i, rows);
    }
  }
}

// The first k in [0, count) with sorted[k] >= value (count if none).
__device__ inline std::int64_t lower_bound(const std::int64_t* sorted, std::int64_t count,
                                           std::int64_t value) {
  std::int64_t low = 0, high = count;
  while (low < high) {
    const std::int64_t middle = low + (high - low) / 2;
    if (sorted[middle] < value) {
      low = middle + 1;
    } else {
      high = middle;
    }
  }
  return low;
}

// Sort path, step 3: out[r, f] = the sum of grad[positions[k], f] over r's run of sorted indices,
// in order; NaN everywhere if any index was bad. grad (count, features) contiguous.
template <typename T>
__global__ void sum_segments(const T* grad, const std::int64_t* sorted_indices,
                             const std::int64_t* sorted_positions, std::int64_t count,
                             std::int64_t rows, std::int64_t features, const int* any_bad, T* out) {
  const bool bad = *any_bad != 0;
  for (std::int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const std::int64_t begin = lower_bound(sorted_indices, count, r);
    const std::int64_t end = lower_bound(sorted_indices, count, r + 1);
    for (std::int64_t f = threadIdx.x; f < features; f += blockDim.x) {
      T sum = T(0);
      for (std::int64_t k = begin; k < end; ++k) sum += grad[sorted_positions[k] * features + f];
      out[r * features + f] = bad ? quiet_nan<T>() : sum;
    }
  }
}

// The number of low bits that hold every value in [0, rows).
int bits_for(std::int64_t rows) {
  int bits = 1;
  while (bits < 63 && (std::int64_t{1} << bits) < rows) ++bits;
  return bits;
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
  const std::int64_t count = indices.numel();
  const Device device = out.device();
  cuda_backend::DeviceGuard guard(device);
  cudaStream_t stream = cuda_backend::cuda_stream(current_stream(device));
  const cuda_backend::DeviceErrorSite errors = cuda_backend::device_error_site(
      device, "embedding_backward", "index", "0 <= index < {bound} (num_weights)");
  const auto* keys = static_cast<const std::int64_t*>(indices.data_ptr());
  if (count <= g_scan_limit) {
    scatter_rows<T>
        <<<static_cast<unsigned>(std::min(rows, kMaxBlocks)), kScatterThreads, 0, stream>>>(
            static_cast<const T*>(grad.data_ptr()), keys, count, rows, features,
            static_cast<T*>(out.data_ptr()), errors);
    GROVE_CUDA_CHECK(cudaGetLastError());
    return;
  }
  // The sort path (count > 0 here). Scratch from the caching allocator (the capture's pool while
  // capturing); freed after the launches, reused only by work ordered after them on this stream.
  GROVE_CHECK(count <= std::numeric_limits<int>::max(), "embedding_backward on CUDA: expected ",
              "fewer than 2^31 indices (cub's sort counts in int), but got ", count);
  const TensorOptions int64_options = TensorOptions(DType::Int64).device(device);
  const Tensor positions = empty({count}, int64_options);
  const Tensor sorted_indices = empty({count}, int64_options);
  const Tensor sorted_positions = empty({count}, int64_options);
  const Tensor any_bad = empty({1}, TensorOptions(DType::Int32).device(device));
  GROVE_CUDA_CHECK(cudaMemsetAsync(any_bad.data_ptr(), 0, sizeof(int), stream));
  number_and_check<<<blocks_for(count), kThreads, 0, stream>>>(
      keys, count, rows, static_cast<std::int64_t*>(positions.data_ptr()),
      static_cast<int*>(any_bad.data_ptr()), errors);
  GROVE_CUDA_CHECK(cudaGetLastError());
  const int items = static_cast<int>(count);
  const int end_bit = bits_for(rows);
  std::size_t scratch_bytes = 0;  // asked first: a host-only query
  GROVE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, scratch_bytes, keys, static_cast<std::int64_t*>(sorted_indices.data_ptr()),
      static_cast<const std::int64_t*>(positions.data_ptr()),
      static_cast<std::int64_t*>(sorted_positions.data_ptr()), items, 0, end_bit, stream));
  const Tensor scratch = empty({static_cast<std::int64_t>(std::max<std::size_t>(scratch_bytes, 1))},
                               TensorOptions(DType::Bool).device(device));
  GROVE_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      scratch.data_ptr(), scratch_bytes, keys,
      static_cast<std::int64_t*>(sorted_indices.data_ptr()),
      static_cast<const std::int64_t*>(positions.data_ptr()),
      static_cast<std::int64_t*>(sorted_positions.data_ptr()), items, 0, end_bit, stream));
  sum_segments<T>
      <<<static_cast<unsigned>(std::min(rows, kMaxBlocks)), kScatterThreads, 0, stream>>>(
          static_cast<const T*>(grad.data_ptr()),
          static_cast<const std::int64_t*>(sorted_indices.data_ptr()),
          static_cast<const std::int64_t*>(sorted_positions.data_ptr()), count, rows, features,
          static_cast<const int*>(any_bad.data_ptr()), static_cast<T*>(out.data_ptr()));
  GROVE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void embedding(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  dispatch_dtype(out.dtype(), "embedding", [&]<typename T>() { launch_embedding<T>(call, out); });
}

std::int64_t set_embedding_scan_limit(std::int64_t limit) {
  const std::int64_t previous = g_scan_limit;
  g_scan_limit = limit;
  return previous;
}

void embedding_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind),
                    [&]<typename T>() { launch_embedding_backward<T>(call, outputs[0]); });
}

}  // namespace grove::ops::cuda
