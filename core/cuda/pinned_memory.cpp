// The caching allocator of pinned host memory: cudaHostAlloc'd blocks kept for reuse, each
// reused only after the copies recorded on it have finished. See
// Note [Reuse of pinned host blocks] in pinned_memory.h.
#include "core/cuda/pinned_memory.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/cuda/cuda_device.h"
#include "core/data_ptr.h"
#include "core/error.h"

namespace grove::cuda_backend {
namespace {

constexpr std::size_t kMinBlock = 512;

std::size_t size_class(std::size_t nbytes) {
  std::size_t size = kMinBlock;
  while (size < nbytes) size *= 2;
  return size;
}

struct PinnedBlock {
  void* ptr = nullptr;
  std::size_t size = 0;
  bool allocated = false;
  // Events recorded after copies that read or write the block (and the device of each).
  std::vector<std::pair<Device, cudaEvent_t>> uses;
};

class PinnedAllocator {
 public:
  DataPtr allocate(std::size_t nbytes) {
    check_device(cuda(0), "pin_memory (page-locked host memory)");
    const std::size_t size = size_class(nbytes);
    // Events are queried and host memory allocated even if this thread captures a graph: none
    // of it touches a captured stream.
    RelaxedCaptureModeGuard relaxed;
    std::lock_guard<std::mutex> lock(mutex_);
    for (PinnedBlock* block : blocks_by_size_[size]) {
      if (!block->allocated && uses_finished(*block)) return hand_out(block);
    }
    void* ptr = nullptr;
    GROVE_CUDA_CHECK(cudaHostAlloc(&ptr, size, cudaHostAllocPortable));
    auto* block = new PinnedBlock{ptr, size, false, {}};
    blocks_.emplace(reinterpret_cast<std::uintptr_t>(ptr), block);
    blocks_by_size_[size].push_back(block);
    return hand_out(block);
  }

  bool is_pinned(const void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    const PinnedBlock* block = block_holding(ptr);
    return block != nullptr && block->allocated;
  }

  void record_use(const void* ptr, Stream stream) {
    cudaStream_t cuda = cuda_stream(stream);
    std::lock_guard<std::mutex> lock(mutex_);
    PinnedBlock* block = block_holding(ptr);
    if (block == nullptr) return;
    prune_finished(*block);  // a buffer copied every step keeps a bounded list
    DeviceGuard guard(stream.device);
    RelaxedCaptureModeGuard relaxed;
    cudaEvent_t event = nullptr;
    GROVE_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    GROVE_CUDA_CHECK(cudaEventRecord(event, cuda));
    block->uses.emplace_back(stream.device, event);
  }

  static void free(void* context, void* ptr) {
    auto* self = static_cast<PinnedAllocator*>(context);
    std::lock_guard<std::mutex> lock(self->mutex_);
    PinnedBlock* block = self->block_holding(ptr);
    GROVE_INTERNAL_ASSERT(block != nullptr && block->allocated && block->ptr == ptr,
                          "freeing pinned memory that this allocator did not hand out");
    block->allocated = false;  // stays in blocks_by_size_[size]; see uses_finished
  }

 private:
  DataPtr hand_out(PinnedBlock* block) {
    block->allocated = true;
    return DataPtr(block->ptr, kCPU, &PinnedAllocator::free, this);
  }

  // Drops the events of the block's copies that have finished.
  static void prune_finished(PinnedBlock& block) {
    auto& uses = block.uses;
    for (std::size_t i = 0; i < uses.size();) {
      const cudaError_t status = cudaEventQuery(uses[i].second);
      if (status == cudaErrorNotReady) {
        (void)cudaGetLastError();  // not an error: the copy is still running
        ++i;
        continue;
      }
      GROVE_CUDA_CHECK(status);
      DeviceGuard guard(uses[i].first);
      GROVE_CUDA_CHECK(cudaEventDestroy(uses[i].second));
      uses[i] = uses.back();
      uses.pop_back();
    }
  }

  // True once every recorded copy on the block has finished.
  static bool uses_finished(PinnedBlock& block) {
    prune_finished(block);
    return block.uses.empty();
  }

  // The block whose bytes contain ptr, or nullptr.
  PinnedBlock* block_holding(const void* ptr) {
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return nullptr;
    --it;
    PinnedBlock* block = it->second;
    return address < it->first + block->size ? block : nullptr;
  }

  std::mutex mutex_;
  std::map<std::uintptr_t, PinnedBlock*> blocks_;  // every block, by address
  // Every block, by size class; the free ones are those not `allocated`.
  std::unordered_map<std::size_t, std::vector<PinnedBlock*>> blocks_by_size_;
};

PinnedAllocator& pinned_allocator() {
  static auto* allocator = new PinnedAllocator();  // never destroyed, like the blocks
  return *allocator;
}

}  // namespace

DataPtr allocate_pinned(std::size_t nbytes) {
  return pinned_allocator().allocate(nbytes);
}

bool is_pinned(const void* ptr) {
  if (ptr == nullptr) return false;
  return pinned_allocator().is_pinned(ptr);
}

void record_pinned_use(const void* ptr, Stream stream) {
  pinned_allocator().record_use(ptr, stream);
}

}  // namespace grove::cuda_backend
