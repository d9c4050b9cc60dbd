// The CUDA raw allocator backend (cudaMalloc / cudaFree, events for cross-stream reuse) and the
// per-device caching allocators made over it on first use.
//
// Out of memory: cudaMalloc's cudaErrorMemoryAllocation is cleared (cudaGetLastError) and
// reported as nullptr, so the caching allocator frees its cache, retries once, then throws
// OutOfMemoryError with the numbers. Any other CUDA error throws at once.
//
// Allocator calls may come while this thread captures a graph (the allocations of a capture go
// to its private pool, Note [Private pools during capture]); they run in relaxed capture mode so
// that thread-local capture does not refuse them. See RelaxedCaptureModeGuard.
#include <array>
#include <memory>
#include <mutex>

#include "core/caching_allocator.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_device.h"

namespace grove::cuda_backend {
namespace {

class CudaAllocatorBackend final : public AllocatorBackend {
 public:
  explicit CudaAllocatorBackend(Device device) : device_(device) {}

  Device device() const override { return device_; }

  void* allocate_segment(std::size_t nbytes) override {
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    void* ptr = nullptr;
    const cudaError_t error = cudaMalloc(&ptr, nbytes);
    if (error == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the sticky-until-read last error
      return nullptr;
    }
    GROVE_CUDA_CHECK(error);
    return ptr;
  }

  void free_segment(void* ptr, std::size_t /*nbytes*/) override {
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    GROVE_CUDA_CHECK(cudaFree(ptr));
  }

  // Note [Stream reuse of cached blocks]. An event recorded on a stream that is being captured
  // would become part of the graph instead of marking real work; nothing queued on a capturing
  // stream runs before replay, so such a stream gets no event (0, "complete").
  std::uintptr_t record_event(Stream stream) override {
    cudaStream_t cuda = cuda_stream(stream);
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    GROVE_CUDA_CHECK(cudaStreamIsCapturing(cuda, &status));
    if (status != cudaStreamCaptureStatusNone) return 0;
    cudaEvent_t event = nullptr;
    GROVE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    GROVE_CUDA_CHECK(cudaEventRecord(event, cuda));
    return reinterpret_cast<std::uintptr_t>(event);
  }

  bool event_completed(std::uintptr_t event) override {
    if (event == 0) return true;
    RelaxedCaptureModeGuard mode_guard;
    const cudaError_t error = cudaEventQuery(reinterpret_cast<cudaEvent_t>(event));
    if (error == cudaErrorNotReady) {
      (void)cudaGetLastError();
      return false;
    }
    GROVE_CUDA_CHECK(error);
    return true;
  }

  void destroy_event(std::uintptr_t event) override {
    if (event == 0) return;
    RelaxedCaptureModeGuard mode_guard;
    GROVE_CUDA_CHECK(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(event)));
  }

 private:
  Device device_;
};

}  // namespace

CachingAllocator& allocator(Device device) {
  check_device(device, "allocating memory");
  static std::array<std::once_flag, kMaxCudaDevices> once;
  static std::array<CachingAllocator*, kMaxCudaDevices> allocators{};
  std::call_once(once[device.index], [&] {
    // Never destroyed: storages held by static objects may be freed after main() returns, and
    // the CUDA runtime may already be torn down by then.
    allocators[device.index] = new CachingAllocator(std::make_unique<CudaAllocatorBackend>(device));
    register_allocator(device, allocators[device.index]);
  });
  return *allocators[device.index];
}

}  // namespace grove::cuda_backend
