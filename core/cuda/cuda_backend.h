// What the device-agnostic core calls for CUDA tensors, streams and graphs: the seam between
// core/*.cpp and the CUDA backend in core/cuda/.
//
// This header has no CUDA types, so every core file may include it. It is implemented twice:
// by the CUDA backend (cuda_device.cpp, cuda_allocator.cpp, cuda_capture.cpp, cuda_copy.cpp and
// the kernels in copy_kernel.cu) when grove is built with GROVE_CUDA, and by no_cuda.cpp
// otherwise, where every entry point throws "no CUDA device is available: ...". CMake picks one;
// no core file needs an #ifdef.
//
// Every entry point checks that the device exists and throws a grove::Error that starts with
// "no CUDA device is available" when it does not (no GPU, no driver, or a CPU-only build).
// Thread safety: all of them may be called from any thread.
#pragma once

#include <cstddef>

#include "core/device.h"

namespace grove {

class CachingAllocator;
class CaptureBackend;
class DataPtr;
class Scalar;
class Tensor;

namespace cuda_backend {

// The caching allocator of a CUDA device, made (over cudaMalloc) and registered with
// register_allocator on first use. Never destroyed.
CachingAllocator& allocator(Device device);
// The stream and capture backend of CUDA devices, registered with register_capture_backend on
// first use. Throws if `device` does not exist.
CaptureBackend& capture_backend(Device device);

// Kernels on the current stream of dst's device. dst and src are on the same CUDA device and
// have the same sizes; launch_copy in core/copy_kernel.cpp has already dealt with overlap.
void launch_copy(const Tensor& dst, const Tensor& src);
void launch_fill(const Tensor& dst, const Scalar& value);

// dst.copy_(src) where one of them is on the CPU and the other on a CUDA device; src already
// has dst's sizes (possibly as a broadcast view). Blocks until a copy to the host is done, and
// until a copy from pinned host memory is done, unless `non_blocking`: then a dense copy from a
// pinned source, or into a pinned destination, is only queued on the current stream (the host
// must not touch those bytes until the stream has run it). See
// Note [Reuse of pinned host blocks] in core/cuda/pinned_memory.h.
void copy_between_devices(const Tensor& dst, const Tensor& src, bool non_blocking = false);

// Page-locked host memory from a caching allocator (core/cuda/pinned_memory.cpp): a block of at
// least nbytes on the CPU device, owned by the returned DataPtr. Needs a CUDA device.
DataPtr allocate_pinned(std::size_t nbytes);
// True if ptr lies in pinned memory from allocate_pinned that is allocated now. Never throws;
// false in a build without CUDA.
bool is_pinned(const void* ptr);

}  // namespace cuda_backend
}  // namespace grove
