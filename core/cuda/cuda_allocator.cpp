// The CUDA raw allocator backend (cudaMalloc / cudaFree, events for cross-stream reuse) and the
// per-device caching allocators made over it on first use.
//
// Out of memory: cudaMalloc's cudaErrorMemoryAllocation is cleared (cudaGetLastError) and
// reported as nullptr, so the caching allocator frees its cache, retries once, then throws
// OutOfMemoryError with the numbers. Any other CUDA error throws at once.
//
// Private pools grow expandable segments (Note [Expandable segments of a private pool]) with the
// driver's virtual memory calls: cuMemAddressReserve, then cuMemCreate + cuMemMap +
// cuMemSetAccess per growth. They are looked up through the runtime
// (cudaGetDriverEntryPointByVersion), so grove links no driver library and still starts on a
// machine without one; a driver or device without them leaves pools on ordinary segments.
//
// Allocator calls may come while this thread captures a graph (the allocations of a capture go
// to its private pool, Note [Private pools during capture]); they run in relaxed capture mode so
// that thread-local capture does not refuse them. See RelaxedCaptureModeGuard.
#include <cuda.h>  // the driver's types only; its functions come through DriverMemoryCalls

#include <array>
#include <memory>
#include <mutex>
#include <type_traits>

#include "core/caching_allocator.h"
#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_device.h"

namespace grove::cuda_backend {
namespace {

// The driver's virtual memory calls, or all null where the driver lacks one.
struct DriverMemoryCalls {
  decltype(&cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&cuMemAddressReserve) reserve = nullptr;
  decltype(&cuMemAddressFree) free_addresses = nullptr;
  decltype(&cuMemCreate) create = nullptr;
  decltype(&cuMemRelease) release = nullptr;
  decltype(&cuMemMap) map = nullptr;
  decltype(&cuMemUnmap) unmap = nullptr;
  decltype(&cuMemSetAccess) set_access = nullptr;

  bool complete() const {
    return granularity && reserve && free_addresses && create && release && map && unmap &&
           set_access;
  }
};

const DriverMemoryCalls& driver_memory_calls() {
  static const DriverMemoryCalls calls = [] {
    DriverMemoryCalls found;
    auto look_up = [](const char* name, auto& function) {
      void* pointer = nullptr;
      cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
      // 12000: the ABI of these calls as of CUDA 12.0, unchanged since their introduction.
      if (cudaGetDriverEntryPointByVersion(name, &pointer, 12000, cudaEnableDefault, &status) ==
              cudaSuccess &&
          status == cudaDriverEntryPointSuccess) {
        function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(pointer);
      } else {
        (void)cudaGetLastError();
      }
    };
    look_up("cuMemGetAllocationGranularity", found.granularity);
    look_up("cuMemAddressReserve", found.reserve);
    look_up("cuMemAddressFree", found.free_addresses);
    look_up("cuMemCreate", found.create);
    look_up("cuMemRelease", found.release);
    look_up("cuMemMap", found.map);
    look_up("cuMemUnmap", found.unmap);
    look_up("cuMemSetAccess", found.set_access);
    return found;
  }();
  return calls;
}

void check_driver(CUresult result, const char* call) {
  GROVE_CHECK(result == CUDA_SUCCESS, "CUDA driver error ", static_cast<int>(result), " from ",
              call, " (expandable segment of a graph pool)");
}

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

  // Note [Expandable segments of a private pool].
  AddressSpace address_space() override {
    const DriverMemoryCalls& driver = driver_memory_calls();
    if (!driver.complete()) return {};
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    std::size_t granularity = 0;
    const CUmemAllocationProp prop = allocation_properties();
    if (driver.granularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
        granularity == 0) {
      return {};
    }
    std::size_t free_bytes = 0, total_bytes = 0;
    GROVE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    granularity_ = granularity;
    return {granularity, total_bytes};
  }

  void* reserve_addresses(std::size_t nbytes) override {
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    CUdeviceptr ptr = 0;
    if (driver_memory_calls().reserve(&ptr, nbytes, granularity_, 0, 0) != CUDA_SUCCESS) {
      return nullptr;
    }
    return reinterpret_cast<void*>(ptr);
  }

  bool map_memory(void* ptr, std::size_t nbytes) override {
    const DriverMemoryCalls& driver = driver_memory_calls();
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    const CUmemAllocationProp prop = allocation_properties();
    CUmemGenericAllocationHandle handle = 0;
    const CUresult created = driver.create(&handle, nbytes, &prop, 0);
    if (created == CUDA_ERROR_OUT_OF_MEMORY) return false;
    check_driver(created, "cuMemCreate");
    const auto address = reinterpret_cast<CUdeviceptr>(ptr);
    const CUresult mapped = driver.map(address, nbytes, 0, handle, 0);
    // The mapping keeps the memory alive from here on: unmapping it frees the memory.
    check_driver(driver.release(handle), "cuMemRelease");
    if (mapped == CUDA_ERROR_OUT_OF_MEMORY) return false;
    check_driver(mapped, "cuMemMap");
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    const CUresult accessible = driver.set_access(address, nbytes, &access, 1);
    if (accessible != CUDA_SUCCESS) {
      (void)driver.unmap(address, nbytes);  // nothing has used it: no wait needed
      if (accessible == CUDA_ERROR_OUT_OF_MEMORY) return false;
      check_driver(accessible, "cuMemSetAccess");
    }
    return true;
  }

  void unmap_memory(void* ptr, std::size_t nbytes) override {
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    // Unlike cudaFree, cuMemUnmap does not wait for work that may still use the memory.
    GROVE_CUDA_CHECK(cudaDeviceSynchronize());
    check_driver(driver_memory_calls().unmap(reinterpret_cast<CUdeviceptr>(ptr), nbytes),
                 "cuMemUnmap");
  }

  void release_addresses(void* ptr, std::size_t nbytes) override {
    DeviceGuard device_guard(device_);
    RelaxedCaptureModeGuard mode_guard;
    check_driver(driver_memory_calls().free_addresses(reinterpret_cast<CUdeviceptr>(ptr), nbytes),
                 "cuMemAddressFree");
  }

 private:
  CUmemAllocationProp allocation_properties() const {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_.index;
    return prop;
  }

  Device device_;
  std::size_t granularity_ = 0;  // set by address_space(), which the allocator asks first
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
