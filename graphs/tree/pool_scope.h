// RAII helper: while alive, allocations on `stream` go to the private `pool`, and `stream` is
// the current stream of its device. Used for warm-ups and for a recording's input buffers (the
// capture itself routes allocations through DeviceGraph::begin_capture).
#pragma once

#include "core/caching_allocator.h"
#include "core/stream.h"

namespace grove::graphs {

class PoolAllocationScope {
 public:
  PoolAllocationScope(Stream stream, PoolId pool)
      : allocator_(allocator_for(stream.device)), stream_(stream), pool_(pool), guard_(stream) {
    allocator_.begin_allocate_to_pool(stream, pool);
  }
  ~PoolAllocationScope() { allocator_.end_allocate_to_pool(stream_, pool_); }
  PoolAllocationScope(const PoolAllocationScope&) = delete;
  PoolAllocationScope& operator=(const PoolAllocationScope&) = delete;

 private:
  CachingAllocator& allocator_;
  Stream stream_;
  PoolId pool_;
  StreamGuard guard_;
};

}  // namespace grove::graphs
