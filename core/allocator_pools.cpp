// Private pools of the caching allocator: creation and release, routing allocations into a pool
// during capture, snapshots, and checkpoints of a pool's layout.
// See Note [Private pools during capture] and Note [Checkpointing a private pool].
#include <algorithm>
#include <set>

#include "core/allocator_impl.h"
#include "core/format.h"
#include "core/storage.h"

namespace grove {

using Impl = CachingAllocator::Impl;
using Block = CachingAllocator::Block;
using Pool = CachingAllocator::Pool;

Pool* Impl::find_pool(PoolId id, const char* caller) {
  return const_cast<Pool*>(std::as_const(*this).find_pool(id, caller));
}

const Pool* Impl::find_pool(PoolId id, const char* caller) const {
  GROVE_CHECK(id.is_private(), caller, ": expected a private pool id (from create_pool), but got ",
              "the default pool id 0");
  auto found = private_pools.find(id.id);
  GROVE_CHECK(found != private_pools.end(), caller, ": ", id, " does not exist on ", device,
              " (never created, or already released and freed)");
  return found->second.get();
}

void Impl::maybe_destroy_pool(Pool* pool) {
  if (!pool->id.is_private() || pool->use_count > 0 || pool->num_segments > 0) return;
  for (const Route& route : routes) {
    if (route.pool == pool) return;  // still routed to: destroyed at end_allocate_to_pool
  }
  private_pools.erase(pool->id.id);
}

PoolId CachingAllocator::create_pool() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto pool = std::make_unique<Pool>();
  pool->id = PoolId{impl_->next_pool_id++};
  pool->use_count = 1;
  PoolId id = pool->id;
  impl_->private_pools.emplace(id.id, std::move(pool));
  return id;
}

void CachingAllocator::retain_pool(PoolId id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Pool* pool = impl_->find_pool(id, "retain_pool");
  GROVE_CHECK(pool->use_count > 0, "retain_pool: ", id, " was already released");
  ++pool->use_count;
}

void CachingAllocator::release_pool(PoolId id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Pool* pool = impl_->find_pool(id, "release_pool");
  GROVE_CHECK(pool->use_count > 0, "release_pool: ", id, " was released more often than it was ",
              "created and retained");
  if (--pool->use_count > 0) return;
  // Give back the empty segments now; the others go when their last block is freed.
  std::vector<Block*> empty;
  for (auto& [address, block] : impl_->segments) {
    if (block->pool == pool && block->state == BlockState::Free && block->next == nullptr &&
        impl_->can_release_now(block)) {
      empty.push_back(block);
    }
  }
  for (Block* block : empty) {
    (block->is_small ? pool->small_free : pool->large_free).erase(block);
    impl_->release_segment(block);
  }
  impl_->maybe_destroy_pool(pool);
}

bool CachingAllocator::pool_exists(PoolId id) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->private_pools.contains(id.id);
}

std::size_t CachingAllocator::num_pools() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->private_pools.size();
}

void CachingAllocator::begin_allocate_to_pool(Stream stream, PoolId id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Pool* pool = impl_->find_pool(id, "begin_allocate_to_pool");
  for (const Impl::Route& route : impl_->routes) {
    GROVE_CHECK(!(route.stream == stream), "begin_allocate_to_pool: ", stream,
                " already allocates to ", route.pool->id, "; call end_allocate_to_pool first");
  }
  impl_->routes.push_back({stream, pool});
}

void CachingAllocator::end_allocate_to_pool(Stream stream, PoolId id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& routes = impl_->routes;
  auto found = std::find_if(routes.begin(), routes.end(), [&](const Impl::Route& route) {
    return route.stream == stream && route.pool->id == id;
  });
  GROVE_CHECK(found != routes.end(), "end_allocate_to_pool: ", stream, " does not allocate to ",
              id);
  Pool* pool = found->pool;
  routes.erase(found);
  impl_->maybe_destroy_pool(pool);
}

// --- snapshots and checkpoints ---

std::vector<SegmentInfo> Impl::snapshot_segments(const Pool* only) const {
  std::vector<SegmentInfo> result;
  for (const auto& [address, first] : segments) {
    if (only != nullptr && first->pool != only) continue;
    SegmentInfo segment;
    segment.address = address;
    segment.stream = first->stream;
    segment.pool = first->pool->id;
    segment.is_small = first->is_small;
    segment.expandable = first->pool->expandable_starting_at(first) != nullptr;
    for (const Block* block = first; block != nullptr; block = block->next) {
      segment.size += block->size;
      segment.blocks.push_back({reinterpret_cast<std::uintptr_t>(block->ptr), block->size,
                                block->requested_size, block->state != BlockState::Free});
    }
    result.push_back(std::move(segment));
  }
  return result;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->snapshot_segments(nullptr);
}

std::vector<SegmentInfo> CachingAllocator::snapshot(PoolId id) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->snapshot_segments(impl_->find_pool(id, "snapshot"));
}

PoolState CachingAllocator::checkpoint_pool_state(PoolId id) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return PoolState{id, impl_->snapshot_segments(impl_->find_pool(id, "checkpoint_pool_state"))};
}

namespace {

// Allocated blocks of a pool, address -> size.
std::map<std::uintptr_t, std::size_t> allocated_layout(const std::vector<SegmentInfo>& segments) {
  std::map<std::uintptr_t, std::size_t> layout;
  for (const SegmentInfo& segment : segments) {
    for (const BlockInfo& block : segment.blocks) {
      if (block.allocated) layout.emplace(block.address, block.size);
    }
  }
  return layout;
}

}  // namespace

CheckpointDelta CachingAllocator::set_checkpoint_pool_state(
    const PoolState& state, std::span<Storage* const> live_storages) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  Impl& impl = *impl_;
  Pool* pool = impl.find_pool(state.pool, "set_checkpoint_pool_state");
  const auto before = allocated_layout(impl.snapshot_segments(pool));

  // Check everything before changing anything, so that a rejected call leaves the pool as it
  // was. Every segment of the checkpoint must still belong to the pool, with the same size.
  std::map<std::uintptr_t, const SegmentInfo*> wanted;
  std::set<void*> checkpointed_allocations;
  for (const SegmentInfo& segment : state.segments) {
    auto found = impl.segments.find(segment.address);
    GROVE_CHECK(found != impl.segments.end() && found->second->pool == pool,
                "set_checkpoint_pool_state: the checkpoint has a segment at ",
                format_pointer(reinterpret_cast<void*>(segment.address)), " that ", state.pool,
                " no longer has");
    std::size_t segment_size = 0;
    for (const Block* block = found->second; block != nullptr; block = block->next) {
      segment_size += block->size;
    }
    // An expandable segment may have grown since; it never shrinks while its pool lives
    // (Note [Expandable segments of a private pool]).
    const bool grown = segment.expandable && segment_size > segment.size;
    GROVE_CHECK(segment_size == segment.size || grown, "set_checkpoint_pool_state: segment at ",
                format_pointer(reinterpret_cast<void*>(segment.address)), " has ", segment_size,
                " bytes but the checkpoint says ", segment.size);
    wanted.emplace(segment.address, &segment);
    for (const BlockInfo& block : segment.blocks) {
      if (block.allocated) checkpointed_allocations.insert(reinterpret_cast<void*>(block.address));
    }
  }
  // Each live storage must be an allocated block of the checkpoint, and be passed once.
  std::set<void*> kept;
  for (Storage* storage : live_storages) {
    void* ptr = storage->unchecked_data();
    GROVE_CHECK(checkpointed_allocations.contains(ptr),
                "set_checkpoint_pool_state: a live storage at ", format_pointer(ptr),
                " is not an allocated block of the checkpointed state of ", state.pool);
    GROVE_CHECK(kept.insert(ptr).second, "set_checkpoint_pool_state: two live storages share ",
                "the block at ", format_pointer(ptr), "; pass each storage once");
  }

  // Forget the pool's current blocks: free bins, allocations and pending frees alike.
  impl.process_events();
  std::erase_if(impl.pending_frees, [&](Impl::PendingFree& pending) {
    if (pending.block->pool != pool) return false;
    for (std::uintptr_t event : pending.events) impl.backend->destroy_event(event);
    return true;
  });
  pool->small_free.clear();
  pool->large_free.clear();
  for (auto& [address, first] : impl.segments) {
    if (first->pool != pool) continue;
    std::size_t segment_size = 0;
    const Stream stream = first->stream;
    const bool is_small = first->is_small;
    for (Block* block = first->next; block != nullptr;) {
      Block* next = block->next;
      segment_size += block->size;
      if (block->state != BlockState::Free) {
        impl.allocated_blocks.erase(block->ptr);
        impl.stats.allocated_bytes -= block->size;
      }
      delete block;
      block = next;
    }
    if (first->state != BlockState::Free) {
      impl.allocated_blocks.erase(first->ptr);
      impl.stats.allocated_bytes -= first->size;
    }
    segment_size += first->size;

    // Rebuild it from the checkpoint (or as one free block if the checkpoint predates it).
    auto found = wanted.find(address);
    GROVE_INTERNAL_ASSERT(found == wanted.end() || found->second->size <= segment_size);
    std::vector<BlockInfo> layout;
    if (found == wanted.end()) {
      layout.push_back({address, segment_size, 0, false});
    } else {
      layout = found->second->blocks;
      // What an expandable segment grew by since the checkpoint is free, joined to a free last
      // block (two free blocks are never neighbours).
      const std::size_t growth = segment_size - found->second->size;
      if (growth > 0 && !layout.back().allocated) {
        layout.back().size += growth;
      } else if (growth > 0) {
        layout.push_back({address + found->second->size, growth, 0, false});
      }
    }
    Block* prev = nullptr;
    for (const BlockInfo& info : layout) {
      Block* block = prev == nullptr ? first : new Block;
      block->ptr = reinterpret_cast<void*>(info.address);
      block->size = info.size;
      block->requested_size = info.allocated ? info.requested_size : 0;
      block->stream = stream;
      block->pool = pool;
      block->is_small = is_small;
      block->stream_uses.clear();
      block->prev = prev;
      block->next = nullptr;
      if (prev != nullptr) prev->next = block;
      if (info.allocated) {
        block->state = BlockState::Allocated;
        impl.allocated_blocks.emplace(block->ptr, block);
        impl.stats.allocated_bytes += block->size;
      } else {
        block->state = BlockState::Free;
        (is_small ? pool->small_free : pool->large_free).insert(block);
      }
      prev = block;
    }
  }

  // Live storages own their blocks again; checkpointed blocks nobody holds any more are freed.
  for (Storage* storage : live_storages) {
    void* ptr = storage->unchecked_data();
    auto found = impl.allocated_blocks.find(ptr);
    GROVE_INTERNAL_ASSERT(found != impl.allocated_blocks.end() && found->second->pool == pool);
    storage->set_data_ptr_without_freeing(
        DataPtr(ptr, device_, &CachingAllocator::delete_block, this));
  }
  std::vector<Block*> orphans;
  for (auto& [address, first] : impl.segments) {
    if (first->pool != pool) continue;
    for (Block* block = first; block != nullptr; block = block->next) {
      if (block->state == BlockState::Allocated && !kept.contains(block->ptr)) {
        orphans.push_back(block);
      }
    }
  }
  for (Block* block : orphans) {
    impl.allocated_blocks.erase(block->ptr);
    impl.free_block(block);
  }

  const auto after = allocated_layout(impl.snapshot_segments(pool));
  CheckpointDelta delta;
  for (const auto& [address, size] : before) {
    auto found = after.find(address);
    if (found == after.end() || found->second != size) {
      delta.freed.push_back(reinterpret_cast<void*>(address));
    }
  }
  for (const auto& [address, size] : after) {
    auto found = before.find(address);
    if (found == before.end() || found->second != size) {
      delta.allocated.push_back(reinterpret_cast<void*>(address));
    }
  }
  return delta;
}

bool CachingAllocator::check_pool_live_allocations(PoolId id, std::span<void* const> expected,
                                                   std::string* report) const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  const Pool* pool = impl_->find_pool(id, "check_pool_live_allocations");
  std::map<void*, std::size_t> allocated;
  for (const auto& [address, first] : impl_->segments) {
    if (first->pool != pool) continue;
    for (const Block* block = first; block != nullptr; block = block->next) {
      if (block->state != BlockState::Free) allocated.emplace(block->ptr, block->size);
    }
  }
  std::set<void*> wanted(expected.begin(), expected.end());
  std::string unexpected;
  std::string missing;
  for (const auto& [ptr, size] : allocated) {
    if (!wanted.contains(ptr)) unexpected += str(" ", format_pointer(ptr), " (", size, " bytes)");
  }
  for (void* ptr : wanted) {
    if (!allocated.contains(ptr)) missing += str(" ", format_pointer(ptr));
  }
  const bool ok = unexpected.empty() && missing.empty();
  if (!ok && report != nullptr) {
    *report = str(
        id,
        ": allocated blocks that are not live outputs:", unexpected.empty() ? " none" : unexpected,
        "; live outputs that are not allocated blocks:", missing.empty() ? " none" : missing);
  }
  return ok;
}

}  // namespace grove
