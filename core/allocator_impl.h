// Internal to the caching allocator (caching_allocator.cpp and allocator_pools.cpp): blocks,
// bins, pools and the state they live in. Not part of grove's API.
//
// Invariants (all under Impl::mutex):
// - The blocks of a segment form a doubly linked list in address order that covers the segment
//   exactly; `segments` maps each segment's address to its first block.
// - A block is in exactly one of: its pool's free bin (state Free), allocated_blocks
//   (Allocated), pending_frees (PendingFree). Two adjacent blocks are never both Free.
// - stats.allocated_bytes is the sum of sizes of Allocated and PendingFree blocks;
//   stats.reserved_bytes the sum of segment sizes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>
#include <vector>

#include "core/caching_allocator.h"

namespace grove {

enum class BlockState : std::uint8_t { Free, Allocated, PendingFree };

struct CachingAllocator::Block {
  void* ptr = nullptr;
  std::size_t size = 0;            // rounded size of this block
  std::size_t requested_size = 0;  // what the caller asked for (allocated blocks only)
  Stream stream;                   // the stream it was allocated on
  Pool* pool = nullptr;
  bool is_small = false;  // from the small bins (2 MiB segments)
  BlockState state = BlockState::Free;
  Block* prev = nullptr;  // neighbours in the same segment
  Block* next = nullptr;
  std::vector<Stream> stream_uses;  // other streams that used it (record_stream)
};

// Free blocks ordered by (stream, size, address): lower_bound finds the best fit on a stream.
struct BlockOrder {
  bool operator()(const CachingAllocator::Block* a, const CachingAllocator::Block* b) const {
    if (a->stream.id != b->stream.id) return a->stream.id < b->stream.id;
    if (a->size != b->size) return a->size < b->size;
    return std::less<void*>()(a->ptr, b->ptr);
  }
};
using BlockSet = std::set<CachingAllocator::Block*, BlockOrder>;

// An expandable segment (Note [Expandable segments of a private pool]): `reserved` addresses
// from `base`, of which the first `mapped` bytes are backed, by mappings of the sizes in
// `mappings` in address order (each is unmapped as it was mapped). `first` is the segment's
// first block, as in Impl::segments.
struct CachingAllocator::Expandable {
  Stream stream;
  char* base = nullptr;
  std::size_t reserved = 0;
  std::size_t mapped = 0;
  std::vector<std::size_t> mappings;
  Block* first = nullptr;
};

struct CachingAllocator::Pool {
  PoolId id;
  BlockSet small_free;
  BlockSet large_free;
  int use_count = 0;
  std::size_t num_segments = 0;
  std::vector<std::unique_ptr<Expandable>> expandables;  // at most one per stream

  Expandable* expandable_on(Stream stream) const;
  Expandable* expandable_starting_at(const Block* first) const;
};

struct CachingAllocator::Impl {
  struct Route {
    Stream stream;
    Pool* pool;
  };
  struct PendingFree {
    Block* block;
    std::vector<std::uintptr_t> events;
  };

  explicit Impl(std::unique_ptr<AllocatorBackend> raw_backend);

  // caching_allocator.cpp
  Pool* pool_for(Stream stream);
  void* allocate(std::size_t nbytes, Stream stream);
  Block* take_free_block(BlockSet& bin, Stream stream, std::size_t size);
  void split_if_worthwhile(Block* block, std::size_t size, BlockSet& bin);
  Block* new_segment(std::size_t segment_size, std::size_t requested, Stream stream, Pool* pool,
                     bool small);
  // allocator_expandable.cpp: a free block of at least `size` bytes at the end of the pool's
  // expandable segment on `stream`, grown (or made) for it; nullptr where expandable segments
  // are off or unsupported, or the reserved addresses are used up.
  Block* grow_expandable(Pool* pool, Stream stream, std::size_t size, std::size_t requested);
  const AllocatorBackend::AddressSpace& space();  // the backend's, asked once
  bool try_map(char* ptr, std::size_t nbytes);
  void release_expandable(Expandable* segment);
  // False for an expandable segment while a graph captures: unmapping must first wait for the
  // device, which a capture forbids. Such a segment stays with its released pool until a later
  // empty_cache() (or an out-of-memory retry) finds no capture underway.
  bool can_release_now(const Block* segment_first) const;
  void* try_allocate_segment(std::size_t segment_size);
  bool capture_underway() const;  // a routed stream is capturing a graph
  // `pool`: the pool the allocation was for (named in the message when private).
  [[noreturn]] void throw_out_of_memory(std::size_t requested, std::size_t segment_size,
                                        const Pool* pool);
  void free_pointer(void* ptr, bool from_deleter);
  void free_block(Block* block);
  void process_events();
  void release_segment(Block* segment_block);
  void release_free_segments(bool private_pools_too);
  void release_all_segments();
  void report_unknown_free(void* ptr);

  // Recycling of Block objects and container nodes on the hot path, so that a cached
  // allocate + free does no heap allocation (see the allocator benchmark).
  Block* make_block();
  void recycle_block(Block* block);
  void bin_insert(BlockSet& bin, Block* block);
  void bin_erase(BlockSet& bin, BlockSet::iterator position);
  void bin_erase(BlockSet& bin, Block* block) { bin_erase(bin, bin.find(block)); }
  void track_allocated(Block* block);
  Block* untrack_allocated(void* ptr);  // null if ptr is not an allocated block

  // allocator_pools.cpp
  Pool* find_pool(PoolId id, const char* caller);
  const Pool* find_pool(PoolId id, const char* caller) const;
  void maybe_destroy_pool(Pool* pool);
  std::vector<SegmentInfo> snapshot_segments(const Pool* only) const;

  mutable std::mutex mutex;
  std::unique_ptr<AllocatorBackend> backend;
  Device device;
  Pool default_pool;
  std::unordered_map<std::uint64_t, std::unique_ptr<Pool>> private_pools;
  std::uint64_t next_pool_id = 1;
  std::vector<Route> routes;
  std::map<std::uintptr_t, Block*> segments;
  std::unordered_map<void*, Block*> allocated_blocks;
  std::vector<PendingFree> pending_frees;
  static constexpr std::size_t kMaxSpares = 256;
  std::vector<Block*> spare_blocks;
  std::vector<BlockSet::node_type> spare_bin_nodes;
  std::vector<std::unordered_map<void*, Block*>::node_type> spare_allocated_nodes;
  AllocatorStats stats;
  std::size_t memory_limit = 0;
  bool expandable_enabled = true;
  std::optional<AllocatorBackend::AddressSpace> address_space;  // see space()
  std::uint64_t unknown_frees = 0;
};

}  // namespace grove
