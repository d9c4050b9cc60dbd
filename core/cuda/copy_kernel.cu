// CUDA kernels for strided copy (with dtype conversion and broadcasting) and fill.
// The CPU versions in core/copy_kernel.cpp are the reference; tests/core/cuda_test.cpp checks
// these against them.
//
// One thread per destination element, in a grid-stride loop: the linear index is split into
// coordinates over the (merged) sizes, from the last dimension, and each operand's offset is
// the dot product with its strides. A single merged dimension (the dense case) skips the
// division. A copy over several dims whose element count and offsets fit 31 bits (nearly all)
// does that arithmetic in 32 bits, dividing by a multiply and a shift (core/int_divider.h):
// with 64-bit divisions, the copies that pack a GPT's attention heads (4-d views) spent most of
// their time on index arithmetic, 4.6 us each for 1 MB on an H200.
//
// Dense operands (one merged dimension, unit strides; every .to(dtype) and the widening copies
// of Note [Reduced-precision compute]) take a third kernel that moves 16 bytes of the wider
// element type per load and store when both pointers are aligned to them: at one element per
// thread a bfloat16 -> float32 copy ran at a quarter of the memory's bandwidth.
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/convert.h"
#include "core/cuda/copy_kernel.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/pack.cuh"
#include "core/cuda/strided_offsets.cuh"
#include "core/int_divider.h"

namespace grove::cuda_backend {
namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxBlocks = 1 << 16;

template <typename To, typename From>
__global__ void copy_elements(To* dst, const From* src, const __grid_constant__ StridedLoop<2> loop,
                              std::int64_t numel) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    std::int64_t offsets[2];
    offsets_of<2>(loop, i, offsets);
    dst[offsets[0]] = convert_element<To>(src[offsets[1]]);
  }
}

// A copy's StridedLoop<2> in 32 bits: a divider per dimension, strides as uint32 (see
// narrow_loop for when it applies).
struct NarrowLoop {
  int ndim = 0;
  IntDivider sizes[kMaxKernelDims];
  std::uint32_t strides[2][kMaxKernelDims] = {};
};

// The loop in 32 bits, when its element count and every operand's furthest offset fit 31 bits
// (strides are never negative) and it has more than one dimension (one needs no division).
bool narrow_loop(const StridedLoop<2>& loop, std::int64_t numel, NarrowLoop& narrow) {
  constexpr std::int64_t kLimit = std::numeric_limits<std::int32_t>::max();
  if (loop.ndim < 2 || numel > kLimit) return false;
  for (int k = 0; k < 2; ++k) {
    std::int64_t furthest = 0;
    for (int d = 0; d < loop.ndim; ++d) {
      if (loop.strides[k][d] < 0 || loop.strides[k][d] > kLimit) return false;
      furthest += (loop.sizes[d] - 1) * loop.strides[k][d];
      if (furthest > kLimit) return false;
    }
  }
  narrow.ndim = loop.ndim;
  for (int d = 0; d < loop.ndim; ++d) {
    narrow.sizes[d] = IntDivider(static_cast<std::uint32_t>(loop.sizes[d]));
    for (int k = 0; k < 2; ++k)
      narrow.strides[k][d] = static_cast<std::uint32_t>(loop.strides[k][d]);
  }
  return true;
}

template <typename To, typename From>
__global__ void copy_elements_narrow(To* dst, const From* src,
                                     const __grid_constant__ NarrowLoop loop, std::uint32_t numel) {
  const std::uint32_t step = gridDim.x * blockDim.x;  // at most 2^24: i + step cannot wrap
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < numel; i += step) {
    std::uint32_t linear = i;
    std::uint32_t to = 0;
    std::uint32_t from = 0;
    for (int d = loop.ndim - 1; d > 0; --d) {
      const std::uint32_t rest = loop.sizes[d].divide(linear);
      const std::uint32_t index = linear - rest * loop.sizes[d].divisor();
      linear = rest;
      to += index * loop.strides[0][d];
      from += index * loop.strides[1][d];
    }
    to += linear * loop.strides[0][0];
    from += linear * loop.strides[1][0];
    dst[to] = convert_element<To>(src[from]);
  }
}

// Elements per pack of a dense copy: 16 bytes of the wider of the two types.
template <typename To, typename From>
inline constexpr int kCopyVec = static_cast<int>(16 / (sizeof(To) > sizeof(From) ? sizeof(To)
                                                                                 : sizeof(From)));

template <typename T, int kVec>
bool pack_aligned(const void* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % (sizeof(T) * kVec) == 0;
}

// dst[i] = src[i] over n dense elements, in packs of kVec (the tail, n % kVec, one by one).
template <typename To, typename From>
__global__ void copy_dense(To* dst, const From* src, std::int64_t n) {
  constexpr int kVec = kCopyVec<To, From>;
  const std::int64_t packs = n / kVec;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::int64_t p = first; p < packs; p += step) {
    const Pack<From, kVec> in = reinterpret_cast<const Pack<From, kVec>*>(src)[p];
    Pack<To, kVec> out;
    for (int j = 0; j < kVec; ++j) out.values[j] = convert_element<To>(in.values[j]);
    reinterpret_cast<Pack<To, kVec>*>(dst)[p] = out;
  }
  for (std::int64_t i = packs * kVec + first; i < n; i += step) {
    dst[i] = convert_element<To>(src[i]);
  }
}

// dst[i] = value over n dense elements, 16 bytes per store.
template <typename T>
__global__ void fill_dense(T* dst, T value, std::int64_t n) {
  constexpr int kVec = static_cast<int>(16 / sizeof(T));
  const std::int64_t packs = n / kVec;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  Pack<T, kVec> pack;
  for (int j = 0; j < kVec; ++j) pack.values[j] = value;
  for (std::int64_t p = first; p < packs; p += step)
    reinterpret_cast<Pack<T, kVec>*>(dst)[p] = pack;
  for (std::int64_t i = packs * kVec + first; i < n; i += step) dst[i] = value;
}

bool is_dense(int ndim, const std::int64_t* strides) {
  return ndim == 1 && strides[0] == 1;
}

template <typename T>
__global__ void fill_elements(T* dst, T value, const __grid_constant__ StridedLoop<1> loop,
                              std::int64_t numel) {
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    std::int64_t offsets[1];
    offsets_of<1>(loop, i, offsets);
    dst[offsets[0]] = value;
  }
}

std::int64_t loop_numel(const int ndim, const std::int64_t* sizes) {
  std::int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) numel *= sizes[d];
  return numel;
}

unsigned blocks_for(std::int64_t numel) {
  const std::int64_t blocks = (numel + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

}  // namespace

void copy_kernel(void* dst, DType dst_dtype, const void* src, DType src_dtype,
                 const StridedLoop<2>& loop, cudaStream_t stream) {
  const std::int64_t numel = loop_numel(loop.ndim, loop.sizes);
  if (numel == 0) return;
  NarrowLoop narrow;
  const bool is_narrow = narrow_loop(loop, numel, narrow);
  dispatch_dtype<DTypes::Stored>(dst_dtype, "copy_", [&]<typename To>() {
    dispatch_dtype<DTypes::Stored>(src_dtype, "copy_", [&]<typename From>() {
      constexpr int kVec = kCopyVec<To, From>;
      if (is_dense(loop.ndim, loop.strides[0]) && is_dense(loop.ndim, loop.strides[1]) &&
          pack_aligned<To, kVec>(dst) && pack_aligned<From, kVec>(src)) {
        copy_dense<To, From><<<blocks_for((numel + kVec - 1) / kVec), kThreads, 0, stream>>>(
            static_cast<To*>(dst), static_cast<const From*>(src), numel);
      } else if (is_narrow) {
        copy_elements_narrow<To, From><<<blocks_for(numel), kThreads, 0, stream>>>(
            static_cast<To*>(dst), static_cast<const From*>(src), narrow,
            static_cast<std::uint32_t>(numel));
      } else {
        copy_elements<To, From><<<blocks_for(numel), kThreads, 0, stream>>>(
            static_cast<To*>(dst), static_cast<const From*>(src), loop, numel);
      }
      GROVE_CUDA_CHECK(cudaGetLastError());
    });
  });
}

void fill_kernel(void* dst, DType dtype, std::uint64_t value_bits, const StridedLoop<1>& loop,
                 cudaStream_t stream) {
  const std::int64_t numel = loop_numel(loop.ndim, loop.sizes);
  if (numel == 0) return;
  dispatch_dtype<DTypes::Stored>(dtype, "fill_", [&]<typename T>() {
    T value;
    std::memcpy(&value, &value_bits, sizeof(T));
    constexpr int kVec = static_cast<int>(16 / sizeof(T));
    if (is_dense(loop.ndim, loop.strides[0]) && pack_aligned<T, kVec>(dst)) {
      fill_dense<T><<<blocks_for((numel + kVec - 1) / kVec), kThreads, 0, stream>>>(
          static_cast<T*>(dst), value, numel);
      GROVE_CUDA_CHECK(cudaGetLastError());
      return;
    }
    fill_elements<T>
        <<<blocks_for(numel), kThreads, 0, stream>>>(static_cast<T*>(dst), value, loop, numel);
    GROVE_CUDA_CHECK(cudaGetLastError());
  });
}

}  // namespace grove::cuda_backend
