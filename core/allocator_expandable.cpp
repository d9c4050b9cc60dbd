// Expandable segments of private pools: one range of reserved addresses per pool and stream,
// backed by memory as far as the pool's blocks reach. See
// Note [Expandable segments of a private pool] in caching_allocator.h.
#include <algorithm>

#include "core/allocator_impl.h"

namespace grove {

using Impl = CachingAllocator::Impl;
using Block = CachingAllocator::Block;
using Pool = CachingAllocator::Pool;
using Expandable = CachingAllocator::Expandable;

namespace {

std::size_t round_up(std::size_t nbytes, std::size_t granularity) {
  return (nbytes + granularity - 1) / granularity * granularity;
}

}  // namespace

Expandable* Pool::expandable_on(Stream stream) const {
  for (const auto& segment : expandables) {
    if (segment->stream == stream) return segment.get();
  }
  return nullptr;
}

Expandable* Pool::expandable_starting_at(const Block* first) const {
  for (const auto& segment : expandables) {
    if (segment->first == first) return segment.get();
  }
  return nullptr;
}

void CachingAllocator::set_expandable_segments(bool enabled) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->expandable_enabled = enabled;
}

bool CachingAllocator::expandable_segments() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->expandable_enabled && impl_->space().granularity != 0;
}

const AllocatorBackend::AddressSpace& Impl::space() {
  if (!address_space) address_space = backend->address_space();
  return *address_space;
}

bool Impl::try_map(char* ptr, std::size_t nbytes) {
  if (memory_limit != 0 && stats.reserved_bytes + nbytes > memory_limit) return false;
  return backend->map_memory(ptr, nbytes);
}

Block* Impl::grow_expandable(Pool* pool, Stream stream, std::size_t size, std::size_t requested) {
  if (!expandable_enabled || !pool->id.is_private()) return nullptr;
  const std::size_t granularity = space().granularity;
  if (granularity == 0) return nullptr;

  Expandable* segment = pool->expandable_on(stream);
  Block* tail = nullptr;
  if (segment != nullptr) {
    tail = segment->first;
    while (tail->next != nullptr) tail = tail->next;
  }
  // A free block at the end grows into the new one (it is smaller than `size`, or best fit
  // would have taken it).
  const bool tail_free = tail != nullptr && tail->state == BlockState::Free;
  const std::size_t growth = round_up(size - (tail_free ? tail->size : 0), granularity);

  // A new segment joins the pool only once its first memory is mapped, so that a failure
  // (out of memory, or a backend error thrown) leaves nothing half-made behind.
  std::unique_ptr<Expandable> made;
  if (segment == nullptr) {
    const std::size_t reserve = round_up(space().reserve_size, granularity);
    if (growth > reserve) return nullptr;
    void* base = backend->reserve_addresses(reserve);
    if (base == nullptr) return nullptr;
    made = std::make_unique<Expandable>();
    made->stream = stream;
    made->base = static_cast<char*>(base);
    made->reserved = reserve;
    segment = made.get();
  } else if (segment->mapped + growth > segment->reserved) {
    return nullptr;  // an ordinary segment serves it
  }

  char* end = segment->base + segment->mapped;
  bool ok = false;
  try {
    ok = try_map(end, growth);
    if (!ok && !capture_underway()) {
      // As new_segment: give back the default pool's cache and try once more.
      release_free_segments(/*private_pools_too=*/false);
      ok = try_map(end, growth);
    }
  } catch (...) {
    if (made) backend->release_addresses(made->base, made->reserved);
    throw;
  }
  if (!ok) {
    if (made) backend->release_addresses(made->base, made->reserved);
    throw_out_of_memory(requested, growth, pool);
  }
  segment->mapped += growth;
  segment->mappings.push_back(growth);
  stats.reserved_bytes += growth;
  stats.private_pool_bytes += growth;
  stats.peak_reserved_bytes = std::max(stats.peak_reserved_bytes, stats.reserved_bytes);
  ++stats.num_segment_allocations;

  if (made) {
    pool->expandables.push_back(std::move(made));
    auto* block = new Block;  // a segment's first block, as in new_segment
    block->ptr = segment->base;
    block->size = growth;
    block->stream = stream;
    block->pool = pool;
    segment->first = block;
    segments.emplace(reinterpret_cast<std::uintptr_t>(segment->base), block);
    ++pool->num_segments;
    return block;
  }
  if (tail_free) {
    bin_erase(pool->large_free, tail);
    tail->size += growth;
    return tail;
  }
  Block* block = make_block();
  block->ptr = end;
  block->size = growth;
  block->stream = stream;
  block->pool = pool;
  block->prev = tail;
  tail->next = block;
  return block;
}

bool Impl::can_release_now(const Block* segment_first) const {
  return segment_first->pool->expandable_starting_at(segment_first) == nullptr ||
         !capture_underway();
}

void Impl::release_expandable(Expandable* segment) {
  // Unmapped in reverse, each mapping as it was made.
  std::size_t offset = segment->mapped;
  for (auto size = segment->mappings.rbegin(); size != segment->mappings.rend(); ++size) {
    offset -= *size;
    backend->unmap_memory(segment->base + offset, *size);
  }
  backend->release_addresses(segment->base, segment->reserved);
  Pool* pool = segment->first->pool;
  std::erase_if(pool->expandables, [&](const auto& owned) { return owned.get() == segment; });
}

}  // namespace grove
