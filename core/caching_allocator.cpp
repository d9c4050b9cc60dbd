// The caching allocator's implementation: segments, blocks, bins, streams, stats and OOM.
// Private-pool checkpoints and snapshots live in allocator_pools.cpp; both files share the
// Impl declared in allocator_impl.h.
#include "core/caching_allocator.h"

#include <algorithm>
#include <limits>

#include "core/allocator_impl.h"
#include "core/format.h"

namespace grove {

std::ostream& operator<<(std::ostream& out, PoolId pool) {
  return pool.is_private() ? out << "pool " << pool.id : out << "the default pool";
}

namespace {

std::size_t round_size(std::size_t nbytes) {
  constexpr std::size_t kMin = CachingAllocator::kMinBlockSize;
  return (nbytes + kMin - 1) / kMin * kMin;
}

// How big a segment to take from the backend for a block of `size` bytes.
std::size_t segment_size_for(std::size_t size) {
  if (size <= CachingAllocator::kSmallRequest) return CachingAllocator::kSmallSegment;
  if (size < CachingAllocator::kMinLargeAlloc) return CachingAllocator::kLargeSegment;
  constexpr std::size_t kRound = CachingAllocator::kRoundLarge;
  return (size + kRound - 1) / kRound * kRound;
}

}  // namespace

using Impl = CachingAllocator::Impl;
using Block = CachingAllocator::Block;
using Pool = CachingAllocator::Pool;
using Expandable = CachingAllocator::Expandable;

CachingAllocator::CachingAllocator(std::unique_ptr<AllocatorBackend> backend)
    : device_(backend->device()), impl_(std::make_unique<Impl>(std::move(backend))) {}

CachingAllocator::~CachingAllocator() {
  // Storages still alive at this point would free into a dead allocator; allocators are
  // process-lifetime objects, so this only runs for allocators made by tests.
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->release_all_segments();
}

void CachingAllocator::delete_block(void* context, void* ptr) {
  // Deleters run wherever the last handle dies, on any thread: they take the lock like every
  // public call.
  Impl& impl = *static_cast<CachingAllocator*>(context)->impl_;
  std::lock_guard<std::mutex> lock(impl.mutex);
  impl.free_pointer(ptr, /*from_deleter=*/true);
}

DataPtr CachingAllocator::allocate(std::size_t nbytes, Stream stream) {
  GROVE_CHECK(stream.device == device_, "allocate: the stream is on ", stream.device,
              " but this allocator serves ", device_);
  if (nbytes == 0) return DataPtr(nullptr, device_);
  std::lock_guard<std::mutex> lock(impl_->mutex);
  void* ptr = impl_->allocate(nbytes, stream);
  return DataPtr(ptr, device_, &CachingAllocator::delete_block, this);
}

void CachingAllocator::raw_free(void* ptr) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->free_pointer(ptr, /*from_deleter=*/false);
}

void CachingAllocator::record_stream(void* ptr, Stream stream) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto found = impl_->allocated_blocks.find(ptr);
  GROVE_CHECK(found != impl_->allocated_blocks.end(), "record_stream: ", format_pointer(ptr),
              " is not the start of a block allocated by the ", device_, " allocator");
  Block* block = found->second;
  if (stream == block->stream) return;
  if (std::find(block->stream_uses.begin(), block->stream_uses.end(), stream) ==
      block->stream_uses.end()) {
    block->stream_uses.push_back(stream);
  }
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->process_events();
  impl_->release_free_segments(/*private_pools_too=*/false);
}

void CachingAllocator::set_memory_limit(std::size_t max_reserved_bytes) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->memory_limit = max_reserved_bytes;
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->stats.peak_allocated_bytes = impl_->stats.allocated_bytes;
  impl_->stats.peak_reserved_bytes = impl_->stats.reserved_bytes;
}

// --- Impl: the block machinery (called with the mutex held) ---

Impl::Impl(std::unique_ptr<AllocatorBackend> raw_backend)
    : backend(std::move(raw_backend)), device(backend->device()) {
  default_pool.id = PoolId{};
  default_pool.use_count = 1;
}

Pool* Impl::pool_for(Stream stream) {
  for (const Route& route : routes) {
    if (route.stream == stream) return route.pool;
  }
  return &default_pool;
}

void* Impl::allocate(std::size_t nbytes, Stream stream) {
  // Rounding a request this close to SIZE_MAX up to a block or segment size would wrap around
  // to a small size; no device has that much memory anyway.
  if (nbytes > std::numeric_limits<std::size_t>::max() - CachingAllocator::kRoundLarge) {
    throw_out_of_memory(nbytes, /*segment_size=*/0, pool_for(stream));
  }
  if (!pending_frees.empty()) process_events();
  const std::size_t size = round_size(nbytes);
  Pool* pool = pool_for(stream);
  const bool small = size <= CachingAllocator::kSmallRequest;
  BlockSet& bin = small ? pool->small_free : pool->large_free;

  Block* block = take_free_block(bin, stream, size);
  if (block != nullptr) {
    ++stats.cache_hits;
  } else {
    // Note [Expandable segments of a private pool]
    if (!small) block = grow_expandable(pool, stream, size, nbytes);
    if (block == nullptr) block = new_segment(segment_size_for(size), nbytes, stream, pool, small);
  }
  split_if_worthwhile(block, size, bin);

  block->state = BlockState::Allocated;
  block->requested_size = nbytes;
  track_allocated(block);
  stats.allocated_bytes += block->size;
  stats.peak_allocated_bytes = std::max(stats.peak_allocated_bytes, stats.allocated_bytes);
  ++stats.num_allocations;
  return block->ptr;
}

// Best fit: the smallest free block of this stream that is big enough.
Block* Impl::take_free_block(BlockSet& bin, Stream stream, std::size_t size) {
  Block key;
  key.stream = stream;
  key.size = size;
  key.ptr = nullptr;
  auto found = bin.lower_bound(&key);
  if (found == bin.end() || !((*found)->stream == stream)) return nullptr;
  Block* block = *found;
  bin_erase(bin, found);
  return block;
}

void Impl::split_if_worthwhile(Block* block, std::size_t size, BlockSet& bin) {
  const std::size_t remaining = block->size - size;
  const bool worthwhile = block->is_small ? remaining >= CachingAllocator::kMinBlockSize
                                          : remaining > CachingAllocator::kSmallRequest;
  if (!worthwhile) return;
  Block* rest = make_block();
  rest->ptr = static_cast<char*>(block->ptr) + size;
  rest->size = remaining;
  rest->stream = block->stream;
  rest->pool = block->pool;
  rest->is_small = block->is_small;
  rest->prev = block;
  rest->next = block->next;
  if (block->next != nullptr) block->next->prev = rest;
  block->next = rest;
  block->size = size;
  bin_insert(bin, rest);
}

Block* Impl::new_segment(std::size_t segment_size, std::size_t requested, Stream stream, Pool* pool,
                         bool small) {
  void* ptr = try_allocate_segment(segment_size);
  if (ptr == nullptr && !capture_underway()) {
    // Out of memory: give back what is cached and try once more. Not while a graph captures
    // on this device: freeing a segment (cudaFree) synchronises the device, which a capture
    // forbids (it would end the capture with an error that hides the out of memory), so a
    // capture that runs out reports it at once (Note [Out of memory in graphed mode] in
    // graphs/tree/tree_manager.h).
    release_free_segments(/*private_pools_too=*/false);
    ptr = try_allocate_segment(segment_size);
  }
  if (ptr == nullptr) throw_out_of_memory(requested, segment_size, pool);
  auto* block = new Block;
  block->ptr = ptr;
  block->size = segment_size;
  block->stream = stream;
  block->pool = pool;
  block->is_small = small;
  segments.emplace(reinterpret_cast<std::uintptr_t>(ptr), block);
  ++pool->num_segments;
  stats.reserved_bytes += segment_size;
  if (pool->id.is_private()) stats.private_pool_bytes += segment_size;
  stats.peak_reserved_bytes = std::max(stats.peak_reserved_bytes, stats.reserved_bytes);
  ++stats.num_segment_allocations;
  return block;
}

// The message names the numbers a user needs to decide what to free: the request, the device's
// allocated and reserved bytes and the limit, and, for an allocation into a private pool (a
// graph's capture or warm-up), that pool's own memory, which only releasing its graphs gives
// back (Note [Private pools during capture]).
void Impl::throw_out_of_memory(std::size_t requested, std::size_t segment_size, const Pool* pool) {
  ++stats.num_ooms;
  const std::string limit = memory_limit == 0 ? std::string("none") : format_bytes(memory_limit);
  const std::string segment = segment_size == 0
                                  ? std::string("more than any segment can hold")
                                  : str("needing a new segment of ", format_bytes(segment_size));
  std::string into_pool;
  if (pool != nullptr && pool->id.is_private()) {
    std::size_t pool_reserved = 0, pool_allocated = 0;
    for (const auto& [address, first] : segments) {
      if (first->pool != pool) continue;
      for (const Block* block = first; block != nullptr; block = block->next) {
        pool_reserved += block->size;
        if (block->state != BlockState::Free) pool_allocated += block->size;
      }
    }
    into_pool = str(" into private ", pool->id, " (graph memory: ", pool->num_segments,
                    " segments, ", format_bytes(pool_reserved), " reserved, ",
                    format_bytes(pool_allocated), " of it allocated)");
  }
  const std::string during_capture =
      capture_underway() ? " during a graph capture, which keeps cached memory (a capture may "
                           "not free it: empty_cache() before recording gives it back)"
                         : "";
  GROVE_THROW(OutOfMemoryError, "out of memory on ", device, ": tried to allocate ",
              format_bytes(requested), " (", requested, " bytes, ", segment, ")", into_pool,
              during_capture, "; ", format_bytes(stats.allocated_bytes), " allocated, ",
              format_bytes(stats.reserved_bytes), " reserved, of which ",
              format_bytes(stats.private_pool_bytes),
              " are held by private pools (graph memory); reserved limit: ", limit,
              ". Free tensors you no longer need, release graphs you no longer replay (a "
              "private pool keeps its memory while its graphs may replay), or raise the limit.");
}

bool Impl::capture_underway() const {
  // Every capture routes its stream to a private pool (DeviceGraph::begin_capture), so the
  // routed streams are the only ones that may be capturing.
  for (const Route& route : routes) {
    if (is_capturing(route.stream)) return true;
  }
  return false;
}

void* Impl::try_allocate_segment(std::size_t segment_size) {
  if (memory_limit != 0 && stats.reserved_bytes + segment_size > memory_limit) return nullptr;
  return backend->allocate_segment(segment_size);
}

void Impl::free_pointer(void* ptr, bool from_deleter) {
  Block* block = untrack_allocated(ptr);
  if (block == nullptr) {
    // A deleter runs inside destructors and must not throw; a raw_free by a caller may.
    GROVE_INTERNAL_ASSERT(from_deleter, "raw_free(", format_pointer(ptr),
                          "): not the start of a block allocated by the ", device, " allocator");
    report_unknown_free(ptr);
    return;
  }
  ++stats.num_frees;
  if (!block->stream_uses.empty()) {
    // Note [Stream reuse of cached blocks]: reusable once every other stream is done with it.
    PendingFree pending{block, {}};
    for (Stream use : block->stream_uses) pending.events.push_back(backend->record_event(use));
    block->stream_uses.clear();
    block->state = BlockState::PendingFree;
    pending_frees.push_back(std::move(pending));
    return;
  }
  free_block(block);
}

void Impl::process_events() {
  auto done = [&](PendingFree& pending) {
    for (std::uintptr_t event : pending.events) {
      if (!backend->event_completed(event)) return false;
    }
    for (std::uintptr_t event : pending.events) backend->destroy_event(event);
    free_block(pending.block);
    return true;
  };
  std::erase_if(pending_frees, done);
}

void Impl::free_block(Block* block) {
  stats.allocated_bytes -= block->size;
  block->state = BlockState::Free;
  block->requested_size = 0;
  BlockSet& bin = block->is_small ? block->pool->small_free : block->pool->large_free;
  // Coalesce with free neighbours in the same segment.
  if (block->prev != nullptr && block->prev->state == BlockState::Free) {
    Block* prev = block->prev;
    bin_erase(bin, prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    recycle_block(block);
    block = prev;
  }
  if (block->next != nullptr && block->next->state == BlockState::Free) {
    Block* next = block->next;
    bin_erase(bin, next);
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    recycle_block(next);
  }
  bin_insert(bin, block);
  Pool* pool = block->pool;
  if (pool->id.is_private() && pool->use_count == 0 && block->prev == nullptr &&
      block->next == nullptr && can_release_now(block)) {
    // A released pool gives its segments back as soon as they are empty.
    bin.erase(block);
    release_segment(block);
    maybe_destroy_pool(pool);
  }
}

void Impl::release_segment(Block* segment_block) {
  Pool* pool = segment_block->pool;
  if (Expandable* expandable = pool->expandable_starting_at(segment_block)) {
    release_expandable(expandable);
  } else {
    backend->free_segment(segment_block->ptr, segment_block->size);
  }
  segments.erase(reinterpret_cast<std::uintptr_t>(segment_block->ptr));
  --pool->num_segments;
  stats.reserved_bytes -= segment_block->size;
  if (pool->id.is_private()) stats.private_pool_bytes -= segment_block->size;
  ++stats.num_segment_frees;
  delete segment_block;
}

void Impl::release_free_segments(bool private_pools_too) {
  std::vector<Block*> empty;
  for (auto& [address, block] : segments) {
    const bool whole_and_free =
        block->state == BlockState::Free && block->prev == nullptr && block->next == nullptr;
    const bool releasable =
        !block->pool->id.is_private() || private_pools_too || block->pool->use_count == 0;
    if (whole_and_free && releasable && can_release_now(block)) empty.push_back(block);
  }
  for (Block* block : empty) {
    Pool* pool = block->pool;
    (block->is_small ? pool->small_free : pool->large_free).erase(block);
    release_segment(block);
    maybe_destroy_pool(pool);
  }
}

void Impl::release_all_segments() {
  for (auto& [address, block] : segments) {
    if (Expandable* expandable = block->pool->expandable_starting_at(block)) {
      release_expandable(expandable);
    } else {
      backend->free_segment(block->ptr, block->size);
    }
    for (Block* b = block; b != nullptr;) delete std::exchange(b, b->next);
  }
  segments.clear();
  for (PendingFree& pending : pending_frees) {
    for (std::uintptr_t event : pending.events) backend->destroy_event(event);
  }
  for (Block* spare : spare_blocks) delete spare;
  spare_blocks.clear();
}

Block* Impl::make_block() {
  if (spare_blocks.empty()) return new Block;
  Block* block = spare_blocks.back();
  spare_blocks.pop_back();
  *block = Block{};
  return block;
}

void Impl::recycle_block(Block* block) {
  if (spare_blocks.size() < kMaxSpares) {
    spare_blocks.push_back(block);
  } else {
    delete block;
  }
}

void Impl::bin_insert(BlockSet& bin, Block* block) {
  if (spare_bin_nodes.empty()) {
    bin.insert(block);
    return;
  }
  BlockSet::node_type node = std::move(spare_bin_nodes.back());
  spare_bin_nodes.pop_back();
  node.value() = block;
  bin.insert(std::move(node));
}

void Impl::bin_erase(BlockSet& bin, BlockSet::iterator position) {
  BlockSet::node_type node = bin.extract(position);
  if (spare_bin_nodes.size() < kMaxSpares) spare_bin_nodes.push_back(std::move(node));
}

void Impl::track_allocated(Block* block) {
  if (spare_allocated_nodes.empty()) {
    allocated_blocks.emplace(block->ptr, block);
    return;
  }
  auto node = std::move(spare_allocated_nodes.back());
  spare_allocated_nodes.pop_back();
  node.key() = block->ptr;
  node.mapped() = block;
  allocated_blocks.insert(std::move(node));
}

Block* Impl::untrack_allocated(void* ptr) {
  auto found = allocated_blocks.find(ptr);
  if (found == allocated_blocks.end()) return nullptr;
  Block* block = found->second;
  auto node = allocated_blocks.extract(found);
  if (spare_allocated_nodes.size() < kMaxSpares) spare_allocated_nodes.push_back(std::move(node));
  return block;
}

void Impl::report_unknown_free(void* ptr) {
  ++unknown_frees;
  if (unknown_frees == 1) {
    std::fprintf(stderr,
                 "grove: internal error (a bug, please report it): a storage freed %p, which "
                 "the %s allocator did not hand out; ignoring it\n",
                 ptr, device.to_string().c_str());
  }
}

}  // namespace grove
