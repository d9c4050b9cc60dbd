// The caching allocator: one device-agnostic implementation over a raw backend (aligned host
// memory now; cudaMalloc with the CUDA backend).
//
// What it is: memory is taken from the backend in *segments*; a segment is split into *blocks*
// handed to storages. Freed blocks are cached, coalesced with free neighbours, and reused
// best-fit, so a training step after the first costs no backend calls. Requests up to
// kSmallRequest (1 MiB) come from 2 MiB segments in the small bins; larger ones from the large
// bins. Blocks are reused only by the stream they were allocated on
// (Note [Stream reuse of cached blocks]). Private pools serve graph capture
// (Note [Private pools during capture]); their large blocks come from one growable segment per
// stream where the backend can map memory (Note [Expandable segments of a private pool]).
//
// What it is not: it never moves memory, and it does not defragment beyond coalescing (and, in
// private pools, growing a segment in place).
//
// Thread safety: every public method takes the allocator's mutex; any thread may allocate and
// free.
//
// Note [Stream reuse of cached blocks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A block remembers the stream it was allocated on, and its free-list entry is keyed by that
// stream: work queued on a stream runs in order, so the next allocation on the same stream may
// reuse the block while earlier kernels that used it are still queued. If a block was also used
// on other streams (record_stream), freeing it records an event on each of them and the block
// becomes reusable only once every event has completed. CPU streams run synchronously, so their
// events are complete at once; the machinery is the same for CUDA.
//
// Note [Private pools during capture]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A captured graph bakes in addresses: when it is replayed, its kernels write to the same
// memory they used during capture. That memory must therefore not be handed to anybody else
// while the graph may still be replayed. begin_allocate_to_pool(stream, pool) routes every
// allocation made on `stream` into the private pool `pool`, whose segments are never used for
// ordinary allocations; blocks freed during the capture return to the pool and may be reused
// within it (as the graph's own intermediates reuse memory). Several graphs may share one pool
// if they are replayed in the order they were captured; the graph-tree manager relies on this
// and keeps the allocator's view of the pool right with checkpoints (see below). A pool lives
// until release_pool() dropped its last use and its last block was freed.
//
// Note [Expandable segments of a private pool]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A caching allocator cannot join two segments: if a step frees a 14 MiB and a 20 MiB segment
// and then asks for 33 MiB, it must take a third segment, and a graph pool keeps all three for
// as long as its graphs may replay (the cnn's pool held 84 MiB against an eager peak of 69).
// Where the backend can map memory into addresses reserved beforehand (cuMemAddressReserve and
// cuMemMap on CUDA, mmap and mprotect on the CPU), a private pool's large requests on a stream
// come instead from one *expandable segment*: a range of addresses as large as the device's
// memory, reserved on the first large request, of which only a prefix is backed by memory.
// When no free block fits, the segment grows at its end by just what is missing (rounded up
// to the backend's granularity), and a free block at its end becomes part of the new one. So
// the pool's memory is the highest address its blocks ever reached, not a sum of segments.
// Growing needs no synchronisation and is allowed while a graph captures (mapping memory is
// not stream work). The segment never shrinks while its pool lives: recorded graphs hold its
// addresses. Checkpoints (below) treat the part grown after them as free. Giving it back must
// first wait for the device (unmapping, unlike cudaFree, does not), which a capture forbids: a
// released pool's segment that empties while a graph captures stays until a later
// empty_cache().
// Small requests keep their 2 MiB segments, the default pool its ordinary ones (its cache is
// given back by empty_cache, segment by segment). set_expandable_segments(false) turns the
// scheme off for pools' future growth, to compare the two.
//
// Note [Checkpointing a private pool]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Replaying a graph does not go through the allocator, so after a replay the allocator's idea of
// which pool blocks are in use is stale. checkpoint_pool_state() records the pool's block layout
// (which blocks exist and which are allocated) right after a recording; set_checkpoint_pool_state
// puts that layout back before the next allocation into the pool, frees the blocks that were
// allocated in the checkpoint but whose storages have died since, and makes the still-live
// storages own their blocks again. New recordings then see exactly the live tensors. The
// checkpoint holds no data, only structure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <ostream>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/data_ptr.h"
#include "core/error.h"
#include "core/stream.h"

namespace grove {

class Storage;

// Identifies a private memory pool; id 0 means "no private pool".
struct PoolId {
  std::uint64_t id = 0;
  bool is_private() const { return id != 0; }
  friend bool operator==(PoolId a, PoolId b) { return a.id == b.id; }
};
std::ostream& operator<<(std::ostream& out, PoolId pool);

// Where raw memory and stream events come from. One per device.
class AllocatorBackend {
 public:
  virtual ~AllocatorBackend() = default;
  virtual Device device() const = 0;
  // Returns nullptr when the device has no memory left (the allocator then frees its cache and
  // retries once before it reports out of memory).
  virtual void* allocate_segment(std::size_t nbytes) = 0;
  virtual void free_segment(void* ptr, std::size_t nbytes) = 0;
  // Events for cross-stream reuse. An event handle is opaque to the allocator.
  virtual std::uintptr_t record_event(Stream stream) = 0;
  virtual bool event_completed(std::uintptr_t event) = 0;
  virtual void destroy_event(std::uintptr_t event) = 0;

  // Reserved addresses backed by memory on demand
  // (Note [Expandable segments of a private pool]). A backend that cannot do it keeps the
  // defaults: granularity 0, and the allocator never calls the other four.
  struct AddressSpace {
    std::size_t granularity = 0;   // map and unmap sizes and offsets are multiples of this
    std::size_t reserve_size = 0;  // addresses to reserve for one segment
  };
  virtual AddressSpace address_space() { return {}; }
  // nullptr if the addresses cannot be reserved.
  virtual void* reserve_addresses(std::size_t /*nbytes*/) { return nullptr; }
  // Backs [ptr, ptr + nbytes) with memory; false when the device has no memory left.
  virtual bool map_memory(void* /*ptr*/, std::size_t /*nbytes*/) { return false; }
  // Undoes one map_memory call exactly (same ptr and nbytes), once no work uses the memory.
  virtual void unmap_memory(void* /*ptr*/, std::size_t /*nbytes*/) {}
  virtual void release_addresses(void* /*ptr*/, std::size_t /*nbytes*/) {}
};

struct AllocatorStats {
  std::size_t allocated_bytes = 0;  // held by live blocks (rounded sizes)
  std::size_t reserved_bytes = 0;   // held in segments, live or cached
  std::size_t peak_allocated_bytes = 0;
  std::size_t peak_reserved_bytes = 0;
  std::size_t private_pool_bytes = 0;  // reserved bytes that belong to private pools
  std::uint64_t num_allocations = 0;   // calls to allocate() that returned memory
  std::uint64_t num_frees = 0;
  std::uint64_t cache_hits = 0;  // allocations served from a cached block
  // Calls that took memory from the backend: new segments, and each growth of an expandable
  // segment (Note [Expandable segments of a private pool]); and segments given back whole.
  std::uint64_t num_segment_allocations = 0;
  std::uint64_t num_segment_frees = 0;
  std::uint64_t num_ooms = 0;
};

struct BlockInfo {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;  // 0 for free blocks
  bool allocated = false;
};

struct SegmentInfo {
  std::uintptr_t address = 0;
  std::size_t size = 0;
  Stream stream;
  PoolId pool;
  bool is_small = false;
  bool expandable = false;        // Note [Expandable segments of a private pool]; size: mapped
  std::vector<BlockInfo> blocks;  // in address order, covering the segment exactly
};

// A pool's block layout, as returned by checkpoint_pool_state. Structure only, no data.
struct PoolState {
  PoolId pool;
  std::vector<SegmentInfo> segments;
};

// What set_checkpoint_pool_state changed, by block address.
struct CheckpointDelta {
  std::vector<void*> freed;      // allocated before the call, free (or reshaped) after it
  std::vector<void*> allocated;  // allocated after the call, not allocated (as such) before
};

class CachingAllocator {
 public:
  static constexpr std::size_t kMinBlockSize = 512;        // sizes round up to this
  static constexpr std::size_t kSmallRequest = 1 << 20;    // up to here: small bins
  static constexpr std::size_t kSmallSegment = 2 << 20;    // segment size of the small bins
  static constexpr std::size_t kLargeSegment = 20 << 20;   // segment for requests < kMinLargeAlloc
  static constexpr std::size_t kMinLargeAlloc = 10 << 20;  // larger requests get their own
  static constexpr std::size_t kRoundLarge = 2 << 20;      // ... rounded to this

  explicit CachingAllocator(std::unique_ptr<AllocatorBackend> backend);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  Device device() const { return device_; }

  // Returns memory for nbytes (0 is allowed and gives a null pointer) usable on `stream`. Goes to
  // a private pool while one is routed to `stream`. Throws OutOfMemoryError.
  DataPtr allocate(std::size_t nbytes, Stream stream);
  // Marks that the block holding ptr is also used on `stream`
  // (Note [Stream reuse of cached blocks]).
  void record_stream(void* ptr, Stream stream);
  // Frees the block that starts at ptr, which must be allocated (used by the graph-tree manager
  // for memory whose storages it already detached with Storage::free_and_remove_deleter).
  void raw_free(void* ptr);

  // Returns every cached, fully free segment outside private pools to the backend.
  void empty_cache();
  // Caps reserved bytes (0: no cap), so that out-of-memory can be provoked and tested.
  void set_memory_limit(std::size_t max_reserved_bytes);
  // On by default where the backend supports it (Note [Expandable segments of a private pool]).
  // Off, private pools take ordinary segments from then on; existing expandable segments stay
  // and are still used for blocks they already hold.
  void set_expandable_segments(bool enabled);
  bool expandable_segments() const;  // enabled and supported by the backend
  AllocatorStats stats() const;
  void reset_peak_stats();
  // Every segment with its blocks; all of them, or only those of `pool` if given.
  std::vector<SegmentInfo> snapshot() const;
  std::vector<SegmentInfo> snapshot(PoolId pool) const;

  // Private pools. See Note [Private pools during capture].
  PoolId create_pool();            // a new pool with one use
  void retain_pool(PoolId pool);   // one more use (another graph sharing it)
  void release_pool(PoolId pool);  // one use less; freed once unused and empty
  void begin_allocate_to_pool(Stream stream, PoolId pool);
  void end_allocate_to_pool(Stream stream, PoolId pool);
  bool pool_exists(PoolId pool) const;
  std::size_t num_pools() const;  // private pools that exist (created, not yet freed)

  // See Note [Checkpointing a private pool].
  PoolState checkpoint_pool_state(PoolId pool) const;
  CheckpointDelta set_checkpoint_pool_state(const PoolState& state,
                                            std::span<Storage* const> live_storages);
  // True if the pool's allocated blocks start exactly at the `expected` addresses. On false,
  // `report` (if given) lists the strays both ways.
  bool check_pool_live_allocations(PoolId pool, std::span<void* const> expected,
                                   std::string* report = nullptr) const;

  // Internal types, defined in allocator_impl.h (public only so that the two source files of
  // the allocator can name them).
  struct Block;
  struct Expandable;
  struct Pool;
  struct Impl;

 private:
  static void delete_block(void* context, void* ptr);

  Device device_;
  std::unique_ptr<Impl> impl_;
};

// The caching allocator of `device`. The CPU one always exists; other devices' allocators are
// registered by their backends. Throws a clear error for a device without one.
CachingAllocator& allocator_for(Device device);
void register_allocator(Device device, CachingAllocator* allocator);

}  // namespace grove
