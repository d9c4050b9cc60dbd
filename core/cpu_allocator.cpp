// The CPU raw backend (aligned host memory) and the per-device allocator registry.
// CUDA devices' allocators are made and registered by the CUDA backend on first use
// (core/cuda/cuda_allocator.cpp).
#include <array>
#include <atomic>
#include <cstdlib>

#include <sys/mman.h>
#include <unistd.h>

#include "core/caching_allocator.h"
#include "core/cuda/cuda_backend.h"

namespace grove {
namespace {

// Host memory aligned for the widest vector loads. CPU streams run kernels synchronously, so
// an event recorded on one is complete at once.
class CpuBackend final : public AllocatorBackend {
 public:
  static constexpr std::size_t kAlignment = 64;

  Device device() const override { return kCPU; }
  void* allocate_segment(std::size_t nbytes) override {
    // Segment sizes are multiples of 2 MiB, so also of the alignment, as aligned_alloc needs.
    return std::aligned_alloc(kAlignment, nbytes);
  }
  void free_segment(void* ptr, std::size_t /*nbytes*/) override { std::free(ptr); }
  std::uintptr_t record_event(Stream /*stream*/) override { return 0; }
  bool event_completed(std::uintptr_t /*event*/) override { return true; }
  void destroy_event(std::uintptr_t /*event*/) override {}

  // Note [Expandable segments of a private pool]: addresses reserved without access or swap
  // (PROT_NONE, MAP_NORESERVE) as large as the machine's memory; mapping grants access, and the
  // kernel backs pages as they are first touched.
  AddressSpace address_space() override {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return {};
    return {kGranularity, static_cast<std::size_t>(pages) * static_cast<std::size_t>(page_size)};
  }
  void* reserve_addresses(std::size_t nbytes) override {
    void* ptr =
        mmap(nullptr, nbytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return ptr == MAP_FAILED ? nullptr : ptr;
  }
  bool map_memory(void* ptr, std::size_t nbytes) override {
    return mprotect(ptr, nbytes, PROT_READ | PROT_WRITE) == 0;
  }
  void unmap_memory(void* ptr, std::size_t nbytes) override {
    // Gives the pages back and takes access away again (a stray use then faults).
    madvise(ptr, nbytes, MADV_DONTNEED);
    mprotect(ptr, nbytes, PROT_NONE);
  }
  void release_addresses(void* ptr, std::size_t nbytes) override { munmap(ptr, nbytes); }

 private:
  static constexpr std::size_t kGranularity = 2 << 20;  // as the small segments
};

constexpr int kMaxDevicesPerType = 16;
std::array<std::array<std::atomic<CachingAllocator*>, kMaxDevicesPerType>, kNumDeviceTypes>
    registry{};

CachingAllocator& cpu_allocator() {
  // Never destroyed: storages held by static objects may be freed after main() returns.
  static CachingAllocator* allocator = new CachingAllocator(std::make_unique<CpuBackend>());
  return *allocator;
}

}  // namespace

void register_allocator(Device device, CachingAllocator* allocator) {
  GROVE_CHECK(device.index >= 0 && device.index < kMaxDevicesPerType,
              "register_allocator: device index ", static_cast<int>(device.index),
              " is out of range [0, ", kMaxDevicesPerType, ")");
  registry[static_cast<int>(device.type)][device.index].store(allocator, std::memory_order_release);
}

CachingAllocator& allocator_for(Device device) {
  if (device.is_cpu()) return cpu_allocator();
  CachingAllocator* allocator = nullptr;
  if (device.index >= 0 && device.index < kMaxDevicesPerType) {
    allocator =
        registry[static_cast<int>(device.type)][device.index].load(std::memory_order_acquire);
  }
  // The CUDA backend makes a device's allocator on first use, or says why it cannot.
  if (allocator == nullptr && device.is_cuda()) return cuda_backend::allocator(device);
  GROVE_CHECK(allocator != nullptr, "no allocator for device ", device,
              ": this build of grove has no backend for it, or the device does not exist");
  return *allocator;
}

}  // namespace grove
