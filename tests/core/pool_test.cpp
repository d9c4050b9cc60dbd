// Tests of the caching allocator's private pools: creation, routing a stream's allocations into
// a pool, release and retain, reuse inside a pool, checkpoints of a pool's layout and the
// live-allocation check. See Note [Private pools during capture] and
// Note [Checkpointing a private pool] in caching_allocator.h.
//
// Each test uses a fresh CachingAllocator over a malloc backend that counts segments, and makes
// storages with Storage::wrap(allocator.allocate(...)), so the process-wide CPU allocator is not
// touched. Streams are plain values (the allocator uses them only as keys).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/caching_allocator.h"
#include "core/format.h"
#include "core/storage.h"
#include "tests/core/counting_backend.h"

namespace grove {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * 1024;

using testing::CountingBackend;

::testing::AssertionResult has_substr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not found in: " << text;
}

class PoolTest : public ::testing::Test {
 protected:
  PoolTest() {
    auto owned = std::make_unique<CountingBackend>();
    backend = owned.get();
    allocator = std::make_unique<CachingAllocator>(std::move(owned));
  }

  StoragePtr make_storage(std::size_t nbytes, Stream stream) {
    return Storage::wrap(allocator->allocate(nbytes, stream), nbytes);
  }
  // Where the block starting at `ptr` is: its segment's pool and the block itself.
  struct Found {
    bool found = false;
    PoolId pool;
    BlockInfo block;
  };
  Found find_block(const void* ptr) const {
    for (const SegmentInfo& segment : allocator->snapshot()) {
      for (const BlockInfo& block : segment.blocks) {
        if (block.address == reinterpret_cast<std::uintptr_t>(ptr)) {
          return {true, segment.pool, block};
        }
      }
    }
    return {};
  }
  // True if `ptr` lies inside one of the pool's segments.
  bool inside_pool(PoolId pool, const void* ptr) const {
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    for (const SegmentInfo& segment : allocator->snapshot(pool)) {
      if (address >= segment.address && address < segment.address + segment.size) return true;
    }
    return false;
  }

  const Stream graph_stream{kCPU, 1};
  const Stream other_stream{kCPU, 2};
  CountingBackend* backend = nullptr;  // owned by the allocator
  std::unique_ptr<CachingAllocator> allocator;
};

// --- creation and routing ---

TEST_F(PoolTest, CreatePoolGivesDistinctPrivateIds) {
  const PoolId first = allocator->create_pool();
  const PoolId second = allocator->create_pool();
  EXPECT_TRUE(first.is_private());
  EXPECT_TRUE(second.is_private());
  EXPECT_FALSE(first == second);
  EXPECT_TRUE(allocator->pool_exists(first));
  EXPECT_TRUE(allocator->pool_exists(second));
  EXPECT_FALSE(PoolId{}.is_private());
  EXPECT_TRUE(allocator->snapshot(first).empty());  // no memory until something allocates
  allocator->release_pool(first);
  allocator->release_pool(second);
}

TEST_F(PoolTest, RoutingSendsOnlyThatStreamsAllocationsToThePool) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr in_pool = allocator->allocate(1000, graph_stream);
  DataPtr outside = allocator->allocate(1000, other_stream);

  const Found pool_block = find_block(in_pool.get());
  const Found default_block = find_block(outside.get());
  ASSERT_TRUE(pool_block.found);
  ASSERT_TRUE(default_block.found);
  EXPECT_TRUE(pool_block.pool == pool);
  EXPECT_FALSE(default_block.pool.is_private());
  const auto pool_segments = allocator->snapshot(pool);
  ASSERT_EQ(pool_segments.size(), 1u);
  EXPECT_TRUE(pool_segments[0].stream == graph_stream);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 2 * kMiB);
  EXPECT_EQ(allocator->stats().reserved_bytes, 4 * kMiB);

  allocator->end_allocate_to_pool(graph_stream, pool);
  in_pool.free();
  allocator->release_pool(pool);
}

TEST_F(PoolTest, EndAllocateToPoolStopsTheRouting) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr in_pool = allocator->allocate(1000, graph_stream);
  allocator->end_allocate_to_pool(graph_stream, pool);
  DataPtr after = allocator->allocate(1000, graph_stream);
  EXPECT_FALSE(find_block(after.get()).pool.is_private());
  EXPECT_FALSE(inside_pool(pool, after.get()));
  EXPECT_EQ(allocator->snapshot(pool).size(), 1u);
  in_pool.free();
  allocator->release_pool(pool);
}

TEST_F(PoolTest, RoutingAStreamTwiceThrows) {
  const PoolId first = allocator->create_pool();
  const PoolId second = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, first);
  EXPECT_THROW(allocator->begin_allocate_to_pool(graph_stream, second), Error);
  EXPECT_THROW(allocator->begin_allocate_to_pool(graph_stream, first), Error);
  // The first route is still in place.
  DataPtr block = allocator->allocate(1000, graph_stream);
  EXPECT_TRUE(find_block(block.get()).pool == first);
  allocator->end_allocate_to_pool(graph_stream, first);
  block.free();
  allocator->release_pool(first);
  allocator->release_pool(second);
}

TEST_F(PoolTest, EndingARouteThatDoesNotExistThrows) {
  const PoolId first = allocator->create_pool();
  const PoolId second = allocator->create_pool();
  EXPECT_THROW(allocator->end_allocate_to_pool(graph_stream, first), Error);
  allocator->begin_allocate_to_pool(graph_stream, first);
  EXPECT_THROW(allocator->end_allocate_to_pool(graph_stream, second), Error);  // wrong pool
  EXPECT_THROW(allocator->end_allocate_to_pool(other_stream, first), Error);   // wrong stream
  allocator->end_allocate_to_pool(graph_stream, first);
  EXPECT_THROW(allocator->end_allocate_to_pool(graph_stream, first), Error);  // twice
  allocator->release_pool(first);
  allocator->release_pool(second);
}

TEST_F(PoolTest, UnknownPoolIdsThrow) {
  const PoolId unknown{987654};
  EXPECT_FALSE(allocator->pool_exists(unknown));
  EXPECT_THROW(allocator->begin_allocate_to_pool(graph_stream, unknown), Error);
  EXPECT_THROW(allocator->retain_pool(unknown), Error);
  EXPECT_THROW(allocator->release_pool(unknown), Error);
  EXPECT_THROW(allocator->snapshot(unknown), Error);
  EXPECT_THROW(allocator->checkpoint_pool_state(unknown), Error);
  EXPECT_THROW(allocator->check_pool_live_allocations(unknown, {}), Error);
  // The default pool's id is not a private pool either.
  EXPECT_THROW(allocator->begin_allocate_to_pool(graph_stream, PoolId{}), Error);
  EXPECT_THROW(allocator->release_pool(PoolId{}), Error);
}

// --- lifetime ---

TEST_F(PoolTest, ReleasedPoolLivesUntilItsLastBlockIsFreed) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr small = allocator->allocate(1000, graph_stream);      // 2 MiB segment
  DataPtr large = allocator->allocate(5 * kMiB, graph_stream);  // 20 MiB segment
  allocator->end_allocate_to_pool(graph_stream, pool);
  allocator->release_pool(pool);
  EXPECT_TRUE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->segment_frees, 0);

  small.free();
  EXPECT_EQ(backend->segment_frees, 1);  // its segment went back as soon as it was empty
  EXPECT_TRUE(allocator->pool_exists(pool));
  large.free();
  EXPECT_EQ(backend->segment_frees, 2);
  EXPECT_FALSE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->num_segments(), 0u);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 0u);
  EXPECT_EQ(allocator->stats().reserved_bytes, 0u);
}

TEST_F(PoolTest, ReleasingAPoolWithOnlyCachedBlocksFreesItAtOnce) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  allocator->allocate(1000, graph_stream).free();
  allocator->end_allocate_to_pool(graph_stream, pool);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 2 * kMiB);
  allocator->release_pool(pool);
  EXPECT_FALSE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->segment_frees, 1);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 0u);
}

TEST_F(PoolTest, RetainAndReleaseCountUses) {
  const PoolId pool = allocator->create_pool();  // one use
  allocator->begin_allocate_to_pool(graph_stream, pool);
  allocator->allocate(1000, graph_stream).free();  // a cached segment that a release frees
  allocator->end_allocate_to_pool(graph_stream, pool);
  allocator->retain_pool(pool);  // two uses
  allocator->release_pool(pool);
  EXPECT_TRUE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->segment_frees, 0);
  allocator->release_pool(pool);  // no use left
  EXPECT_FALSE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->segment_frees, 1);
  EXPECT_THROW(allocator->release_pool(pool), Error);
}

TEST_F(PoolTest, ReleasedPoolStaysWhileAStreamIsStillRoutedToIt) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  allocator->release_pool(pool);  // no use left and no memory, but still routed to
  ASSERT_TRUE(allocator->pool_exists(pool));
  DataPtr block = allocator->allocate(1000, graph_stream);
  EXPECT_TRUE(find_block(block.get()).pool == pool);
  allocator->end_allocate_to_pool(graph_stream, pool);
  EXPECT_TRUE(allocator->pool_exists(pool));  // its block is live
  block.free();
  EXPECT_FALSE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->num_segments(), 0u);
}

TEST_F(PoolTest, ReleasedPoolThatStillHasBlocksCannotBeRetained) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr live = allocator->allocate(1000, graph_stream);
  allocator->end_allocate_to_pool(graph_stream, pool);
  allocator->release_pool(pool);
  ASSERT_TRUE(allocator->pool_exists(pool));
  EXPECT_THROW(allocator->retain_pool(pool), Error);
  EXPECT_THROW(allocator->release_pool(pool), Error);
}

// --- reuse ---

TEST_F(PoolTest, BlocksFreedInThePoolAreReusedInsideIt) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr first = allocator->allocate(3000, graph_stream);
  void* address = first.get();
  first.free();
  const auto hits = allocator->stats().cache_hits;
  DataPtr second = allocator->allocate(3000, graph_stream);
  EXPECT_EQ(second.get(), address);
  EXPECT_EQ(allocator->stats().cache_hits, hits + 1);
  EXPECT_EQ(allocator->snapshot(pool).size(), 1u);
  allocator->end_allocate_to_pool(graph_stream, pool);
  second.free();
  allocator->release_pool(pool);
}

TEST_F(PoolTest, BlocksFreedInThePoolAreNeverGivenToTheDefaultPool) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr keep = allocator->allocate(1000, graph_stream);
  allocator->allocate(3000, graph_stream).free();
  allocator->end_allocate_to_pool(graph_stream, pool);

  // Same stream and size, but no route any more: the pool's free blocks are off limits.
  DataPtr same_stream = allocator->allocate(3000, graph_stream);
  DataPtr other = allocator->allocate(3000, other_stream);
  EXPECT_FALSE(inside_pool(pool, same_stream.get()));
  EXPECT_FALSE(inside_pool(pool, other.get()));
  EXPECT_EQ(allocator->stats().private_pool_bytes, 2 * kMiB);
  EXPECT_EQ(allocator->snapshot(pool).size(), 1u);
  keep.free();
  allocator->release_pool(pool);
}

TEST_F(PoolTest, EmptyCacheKeepsTheSegmentsOfALivePool) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  allocator->allocate(1000, graph_stream).free();  // fully free, but the graph may replay
  allocator->end_allocate_to_pool(graph_stream, pool);
  allocator->allocate(1000, other_stream).free();  // fully free, default pool
  allocator->empty_cache();
  EXPECT_EQ(backend->segment_frees, 1);
  EXPECT_EQ(allocator->snapshot(pool).size(), 1u);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 2 * kMiB);
  allocator->release_pool(pool);
}

TEST_F(PoolTest, OutOfMemoryRetryKeepsTheSegmentsOfALivePool) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  allocator->allocate(5 * kMiB, graph_stream).free();  // a fully free 20 MiB pool segment
  allocator->end_allocate_to_pool(graph_stream, pool);
  allocator->set_memory_limit(21 * kMiB);
  EXPECT_THROW(allocator->allocate(1000, other_stream), OutOfMemoryError);
  EXPECT_EQ(backend->segment_frees, 0);
  EXPECT_EQ(allocator->snapshot(pool).size(), 1u);
  allocator->release_pool(pool);
}

// --- checkpoints ---

// The scenario of Note [Checkpointing a private pool]. A graph's outputs A, B and C are
// allocated in the pool (laid out A | C | B | free rest) and the pool is checkpointed. Then the
// "replay era" changes the pool behind the checkpoint's back: C's memory is detached and freed
// (as the graph-tree manager does with outputs a later replay overwrites), B's storage dies, and
// two other blocks, D and F, are carved out of the freed space so the layout differs. The
// restore is called with the storages still alive, A and C.
class PoolCheckpointTest : public PoolTest {
 protected:
  void SetUp() override {
    pool = allocator->create_pool();
    allocator->begin_allocate_to_pool(graph_stream, pool);
    a = make_storage(1000, graph_stream);  // 1024-byte block
    c = make_storage(2000, graph_stream);  // 2048, between A and B so it never coalesces
    b = make_storage(3000, graph_stream);  // 3072
    a_address = a->data();
    b_address = b->data();
    c_address = c->data();
    std::memset(a->data(), 0xA1, a->nbytes());
    std::memset(c->data(), 0xC3, c->nbytes());
    checkpoint = allocator->checkpoint_pool_state(pool);

    c->free_and_remove_deleter();  // C's block is freed (a 2 KiB hole), its storage lives on
    DataPtr d = allocator->allocate(1500, graph_stream);  // best fit: C's hole, split 1536 + 512
    b.reset();  // B's storage dies: its block merges with the rest of C's hole and the free rest
    DataPtr f = allocator->allocate(4000, graph_stream);  // right after D, over B's bytes
    d_address = d.get();
    f_address = f.get();
    // The replay's memory is not held by any storage; the restore forgets these blocks.
    d.release_ownership();
    f.release_ownership();
    allocator->end_allocate_to_pool(graph_stream, pool);
  }
  void TearDown() override {
    a.reset();
    c.reset();
    if (allocator->pool_exists(pool)) allocator->release_pool(pool);
  }

  CheckpointDelta restore() {
    Storage* live[] = {a.get(), c.get()};
    return allocator->set_checkpoint_pool_state(checkpoint, live);
  }
  std::vector<BlockInfo> pool_blocks() const {
    std::vector<BlockInfo> blocks;
    for (const SegmentInfo& segment : allocator->snapshot(pool)) {
      blocks.insert(blocks.end(), segment.blocks.begin(), segment.blocks.end());
    }
    return blocks;
  }
  static bool all_bytes_are(const StoragePtr& storage, unsigned char value) {
    const auto* bytes = static_cast<const unsigned char*>(storage->data());
    return std::all_of(bytes, bytes + storage->nbytes(),
                       [&](unsigned char x) { return x == value; });
  }

  PoolId pool;
  StoragePtr a, b, c;
  void* a_address = nullptr;
  void* b_address = nullptr;
  void* c_address = nullptr;
  void* d_address = nullptr;
  void* f_address = nullptr;
  PoolState checkpoint;
};

TEST_F(PoolCheckpointTest, TheScenarioChangesThePoolLayout) {
  // Guards the premise of the tests below: D and F really took C's and B's places.
  EXPECT_EQ(d_address, c_address);
  EXPECT_EQ(f_address, static_cast<char*>(c_address) + 1536);
  ASSERT_EQ(checkpoint.segments.size(), 1u);
  EXPECT_TRUE(checkpoint.pool == pool);
  const std::vector<BlockInfo>& blocks = checkpoint.segments[0].blocks;
  ASSERT_EQ(blocks.size(), 4u);  // A, C, B, free rest
  EXPECT_EQ(blocks[2].address, reinterpret_cast<std::uintptr_t>(b_address));
  EXPECT_TRUE(blocks[2].allocated);
  EXPECT_EQ(blocks[2].size, 3072u);
  EXPECT_EQ(blocks[2].requested_size, 3000u);
  EXPECT_FALSE(blocks[3].allocated);
}

TEST_F(PoolCheckpointTest, RestoreReportsFreedAndAllocatedBlocks) {
  const CheckpointDelta delta = restore();
  // Before: A, D (1536 at C's place), F (4096 over C's tail and B). After: A, C (2048).
  std::vector<void*> freed = delta.freed;
  std::sort(freed.begin(), freed.end(), std::less<void*>());
  std::vector<void*> expected_freed = {d_address, f_address};
  std::sort(expected_freed.begin(), expected_freed.end(), std::less<void*>());
  EXPECT_EQ(freed, expected_freed);
  EXPECT_EQ(delta.allocated, std::vector<void*>{c_address});  // reshaped from D's 1536 bytes
}

TEST_F(PoolCheckpointTest, RestoreFreesTheBlockOfADeadOutput) {
  restore();
  bool found_b = false;
  for (const BlockInfo& block : pool_blocks()) {
    const auto b_start = reinterpret_cast<std::uintptr_t>(b_address);
    if (block.address == b_start) {
      found_b = true;
      EXPECT_FALSE(block.allocated);
      EXPECT_GE(block.size, 3072u);  // B's block, coalesced with the free rest
    }
    if (block.allocated) {  // no live block overlaps B's bytes
      EXPECT_TRUE(block.address + block.size <= b_start || block.address >= b_start + 3072);
    }
  }
  EXPECT_TRUE(found_b);
  std::vector<void*> live = {a_address, c_address};
  std::string report;
  EXPECT_TRUE(allocator->check_pool_live_allocations(pool, live, &report)) << report;
  EXPECT_EQ(allocator->stats().allocated_bytes, 1024u + 2048u);
}

TEST_F(PoolCheckpointTest, RestoreKeepsLiveOutputsAtTheirAddressesWithTheirData) {
  restore();
  for (const BlockInfo& block : pool_blocks()) {
    if (block.address == reinterpret_cast<std::uintptr_t>(a_address)) {
      EXPECT_TRUE(block.allocated);
      EXPECT_EQ(block.size, 1024u);
    }
    if (block.address == reinterpret_cast<std::uintptr_t>(c_address)) {
      EXPECT_TRUE(block.allocated);
      EXPECT_EQ(block.size, 2048u);
    }
  }
  EXPECT_EQ(a->data(), a_address);
  EXPECT_EQ(c->data(), c_address);
  EXPECT_TRUE(all_bytes_are(a, 0xA1));
  EXPECT_TRUE(all_bytes_are(c, 0xC3));
}

TEST_F(PoolCheckpointTest, RestoredLiveStoragesOwnTheirBlocksAgain) {
  restore();
  EXPECT_TRUE(a->data_ptr().owns_memory());
  EXPECT_TRUE(c->data_ptr().owns_memory());  // detached before, owning again now

  c.reset();
  std::vector<void*> only_a = {a_address};
  std::string report;
  EXPECT_TRUE(allocator->check_pool_live_allocations(pool, only_a, &report)) << report;
  EXPECT_EQ(allocator->stats().allocated_bytes, 1024u);
  a.reset();
  EXPECT_TRUE(allocator->check_pool_live_allocations(pool, {}, &report)) << report;
  EXPECT_EQ(allocator->stats().allocated_bytes, 0u);
  // Everything coalesced back into one free block per segment.
  for (const SegmentInfo& segment : allocator->snapshot(pool)) {
    EXPECT_EQ(segment.blocks.size(), 1u);
  }
}

TEST_F(PoolCheckpointTest, RestoreRejectsALiveStorageThatIsNotACheckpointedBlock) {
  allocator->begin_allocate_to_pool(graph_stream, pool);
  StoragePtr newer = make_storage(100 * kKiB, graph_stream);  // allocated after the checkpoint
  allocator->end_allocate_to_pool(graph_stream, pool);
  Storage* live[] = {a.get(), newer.get()};
  try {
    allocator->set_checkpoint_pool_state(checkpoint, live);
    FAIL() << "expected grove::Error";
  } catch (const Error& error) {
    EXPECT_TRUE(has_substr(error.what(), format_pointer(newer->unchecked_data())));
  }
  // The default pool's blocks are not part of the checkpoint either.
  StoragePtr outside = make_storage(1000, other_stream);
  Storage* with_outside[] = {a.get(), outside.get()};
  EXPECT_THROW(allocator->set_checkpoint_pool_state(checkpoint, with_outside), Error);
  newer.reset();
}

TEST_F(PoolCheckpointTest, RestoreRejectsAStorageListedTwice) {
  Storage* live[] = {a.get(), c.get(), a.get()};
  EXPECT_THROW(allocator->set_checkpoint_pool_state(checkpoint, live), Error);
}

TEST_F(PoolCheckpointTest, RejectedRestoreLeavesThePoolAsItWas) {
  // A rejected call must not half-apply the checkpoint: otherwise the blocks of dead outputs
  // stay allocated with no owner, and the pool can never be freed.
  const auto before = pool_blocks();
  const AllocatorStats stats_before = allocator->stats();
  StoragePtr outside = make_storage(1000, other_stream);
  Storage* live[] = {a.get(), outside.get()};
  EXPECT_THROW(allocator->set_checkpoint_pool_state(checkpoint, live), Error);
  const auto after = pool_blocks();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(after[i].address, before[i].address);
    EXPECT_EQ(after[i].size, before[i].size);
    EXPECT_EQ(after[i].allocated, before[i].allocated);
  }
  EXPECT_EQ(allocator->stats().allocated_bytes, stats_before.allocated_bytes + 1024);
  // And the checkpoint can still be applied properly afterwards.
  restore();
  std::vector<void*> live_addresses = {a_address, c_address};
  EXPECT_TRUE(allocator->check_pool_live_allocations(pool, live_addresses));
}

// --- the live-allocation check ---

TEST_F(PoolTest, CheckPoolLiveAllocationsAcceptsExactlyTheAllocatedBlocks) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr first = allocator->allocate(1000, graph_stream);
  DataPtr second = allocator->allocate(2000, graph_stream);
  allocator->allocate(3000, graph_stream).free();
  allocator->end_allocate_to_pool(graph_stream, pool);
  std::vector<void*> both = {second.get(), first.get()};
  std::string report = "untouched";
  EXPECT_TRUE(allocator->check_pool_live_allocations(pool, both, &report));
  EXPECT_EQ(report, "untouched");
  first.free();
  second.free();
  allocator->release_pool(pool);
}

TEST_F(PoolTest, CheckPoolLiveAllocationsReportsStraysBothWays) {
  const PoolId pool = allocator->create_pool();
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr expected_and_allocated = allocator->allocate(1000, graph_stream);
  DataPtr stray = allocator->allocate(2000, graph_stream);  // allocated, not expected
  allocator->end_allocate_to_pool(graph_stream, pool);
  int somewhere_else = 0;  // expected, not allocated
  std::vector<void*> expected = {expected_and_allocated.get(), &somewhere_else};
  std::string report;
  EXPECT_FALSE(allocator->check_pool_live_allocations(pool, expected, &report));
  const std::string stray_text = format_pointer(stray.get()) + " (2048 bytes)";
  const std::string missing_text = format_pointer(&somewhere_else);
  const std::string second_list = "live outputs that are not allocated blocks";
  ASSERT_TRUE(has_substr(report, stray_text));
  ASSERT_TRUE(has_substr(report, missing_text));
  ASSERT_TRUE(has_substr(report, second_list));
  EXPECT_LT(report.find(stray_text), report.find(second_list));
  EXPECT_GT(report.find(missing_text), report.find(second_list));
  EXPECT_EQ(report.find(format_pointer(expected_and_allocated.get())), std::string::npos);
  // Without a report argument the answer is the same.
  EXPECT_FALSE(allocator->check_pool_live_allocations(pool, expected));
  expected_and_allocated.free();
  stray.free();
  allocator->release_pool(pool);
}

}  // namespace
}  // namespace grove
