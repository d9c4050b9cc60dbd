// Tests of expandable segments in private pools (Note [Expandable segments of a private pool] in
// caching_allocator.h): large requests of a pool share one growable range of addresses, freed
// blocks join new memory at its end, checkpoints see the growth as free, and releasing the pool
// unmaps every mapping and the reserved addresses.
//
// Each test uses a fresh CachingAllocator over a backend (CountingBackend's segments, plus host
// addresses reserved with mmap and mapped with mprotect, as the CPU backend does) that records
// every call, so the tests can check that nothing is left mapped or reserved.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/caching_allocator.h"
#include "core/device_graph.h"
#include "core/storage.h"
#include "core/stream.h"
#include "tests/core/counting_backend.h"

namespace grove {
namespace {

constexpr std::size_t kMiB = 1024 * 1024;
constexpr std::size_t kGranularity = 2 * kMiB;
constexpr std::size_t kReserve = 256 * kMiB;

// Ordinary segments as CountingBackend; reserved addresses mapped with mprotect, every call
// recorded.
class MappingBackend final : public testing::CountingBackend {
 public:
  ~MappingBackend() override {
    EXPECT_TRUE(mappings_.empty()) << mappings_.size() << " mappings were never unmapped";
    EXPECT_TRUE(reservations_.empty()) << reservations_.size() << " reservations never released";
  }

  AddressSpace address_space() override { return {kGranularity, kReserve}; }
  void* reserve_addresses(std::size_t nbytes) override {
    void* ptr =
        mmap(nullptr, nbytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (ptr == MAP_FAILED) return nullptr;
    reservations_.emplace(ptr, nbytes);
    return ptr;
  }
  bool map_memory(void* ptr, std::size_t nbytes) override {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ptr) % kGranularity, 0u);
    EXPECT_EQ(nbytes % kGranularity, 0u);
    if (fail_maps) return false;
    EXPECT_EQ(mprotect(ptr, nbytes, PROT_READ | PROT_WRITE), 0);
    mappings_.emplace(ptr, nbytes);
    ++maps;
    return true;
  }
  void unmap_memory(void* ptr, std::size_t nbytes) override {
    auto found = mappings_.find(ptr);
    ASSERT_TRUE(found != mappings_.end()) << "unmapped memory that was never mapped";
    EXPECT_EQ(found->second, nbytes) << "unmapped a different size than was mapped";
    mappings_.erase(found);
    EXPECT_EQ(mprotect(ptr, nbytes, PROT_NONE), 0);
  }
  void release_addresses(void* ptr, std::size_t nbytes) override {
    auto found = reservations_.find(ptr);
    ASSERT_TRUE(found != reservations_.end()) << "released addresses never reserved";
    EXPECT_EQ(found->second, nbytes);
    reservations_.erase(found);
    munmap(ptr, nbytes);
  }

  std::size_t num_mappings() const { return mappings_.size(); }
  std::size_t num_reservations() const { return reservations_.size(); }
  bool fail_maps = false;
  int maps = 0;

 private:
  std::map<void*, std::size_t> mappings_;
  std::map<void*, std::size_t> reservations_;
};

class ExpandablePoolTest : public ::testing::Test {
 protected:
  ExpandablePoolTest() {
    auto owned = std::make_unique<MappingBackend>();
    backend = owned.get();
    allocator = std::make_unique<CachingAllocator>(std::move(owned));
    pool = allocator->create_pool();
    allocator->begin_allocate_to_pool(graph_stream, pool);
  }
  ~ExpandablePoolTest() override {
    if (routed) allocator->end_allocate_to_pool(graph_stream, pool);
    if (!released) allocator->release_pool(pool);
  }

  std::vector<SegmentInfo> pool_segments() const { return allocator->snapshot(pool); }
  static std::uintptr_t address(const DataPtr& data) {
    return reinterpret_cast<std::uintptr_t>(data.get());
  }

  const Stream graph_stream{kCPU, 1};
  const Stream other_stream{kCPU, 2};
  MappingBackend* backend = nullptr;  // owned by the allocator
  std::unique_ptr<CachingAllocator> allocator;
  PoolId pool;
  bool routed = true;     // graph_stream allocates to `pool`
  bool released = false;  // release_pool(pool) was called
};

TEST_F(ExpandablePoolTest, FreedBlocksAndNewMemoryServeALargerRequest) {
  // The cnn's pattern: two activations, freed, then a workspace larger than either.
  DataPtr first = allocator->allocate(14 * kMiB, graph_stream);
  DataPtr second = allocator->allocate(20 * kMiB, graph_stream);
  EXPECT_EQ(address(second), address(first) + 14 * kMiB);  // one range of addresses
  first.free();
  second.free();
  DataPtr workspace = allocator->allocate(33 * kMiB + 100, graph_stream);
  EXPECT_EQ(address(workspace), address(first));
  // With ordinary segments this pool would hold 14 + 20 + 34 MiB.
  EXPECT_EQ(allocator->stats().private_pool_bytes, 34 * kMiB);
  const auto segments = pool_segments();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_TRUE(segments[0].expandable);
  EXPECT_EQ(segments[0].size, 34 * kMiB);
  EXPECT_EQ(backend->num_segments(), 0u);
  EXPECT_EQ(backend->num_reservations(), 1u);
}

TEST_F(ExpandablePoolTest, AFreeBlockAtTheEndGrowsIntoTheNewOne) {
  DataPtr a = allocator->allocate(4 * kMiB, graph_stream);
  DataPtr b = allocator->allocate(4 * kMiB, graph_stream);
  b.free();
  const int maps_before = backend->maps;
  DataPtr c = allocator->allocate(6 * kMiB, graph_stream);  // 4 free at the end + 2 new
  EXPECT_EQ(address(c), address(a) + 4 * kMiB);
  EXPECT_EQ(backend->maps, maps_before + 1);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 10 * kMiB);
  // The new memory is usable: write all of it.
  std::memset(c.get(), 0x5A, 6 * kMiB);
  const auto segments = pool_segments();
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_EQ(segments[0].blocks.size(), 2u);
  EXPECT_EQ(segments[0].blocks[1].size, 6 * kMiB);
}

TEST_F(ExpandablePoolTest, AnAllocatedEndGetsANewBlockAfterIt) {
  DataPtr a = allocator->allocate(3 * kMiB, graph_stream);  // 4 MiB mapped, 1 MiB rest unsplit
  DataPtr b = allocator->allocate(5 * kMiB, graph_stream);
  EXPECT_EQ(address(b), address(a) + 4 * kMiB);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 10 * kMiB);
  const auto segments = pool_segments();
  ASSERT_EQ(segments.size(), 1u);
  ASSERT_EQ(segments[0].blocks.size(), 2u);  // each keeps its 1 MiB rest (too small to split)
  EXPECT_EQ(segments[0].blocks[1].size, 6 * kMiB);
}

TEST_F(ExpandablePoolTest, SmallRequestsKeepTheirSegments) {
  DataPtr small = allocator->allocate(1000, graph_stream);
  const auto segments = pool_segments();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_TRUE(segments[0].is_small);
  EXPECT_FALSE(segments[0].expandable);
  EXPECT_EQ(backend->num_segments(), 1u);
  EXPECT_EQ(backend->num_reservations(), 0u);
}

TEST_F(ExpandablePoolTest, EachStreamHasItsOwnSegment) {
  allocator->begin_allocate_to_pool(other_stream, pool);
  DataPtr on_graph = allocator->allocate(4 * kMiB, graph_stream);
  DataPtr on_other = allocator->allocate(4 * kMiB, other_stream);
  on_graph.free();
  // The graph stream's free block is not reused by the other stream
  // (Note [Stream reuse of cached blocks]); the other stream's segment grows instead.
  DataPtr again = allocator->allocate(4 * kMiB, other_stream);
  EXPECT_EQ(address(again), address(on_other) + 4 * kMiB);
  EXPECT_EQ(backend->num_reservations(), 2u);
  allocator->end_allocate_to_pool(other_stream, pool);
}

TEST_F(ExpandablePoolTest, TheDefaultPoolKeepsOrdinarySegments) {
  DataPtr outside = allocator->allocate(4 * kMiB, other_stream);
  EXPECT_EQ(backend->num_segments(), 1u);
  EXPECT_EQ(backend->num_reservations(), 0u);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 0u);
}

TEST_F(ExpandablePoolTest, TurnedOffPoolsTakeOrdinarySegments) {
  EXPECT_TRUE(allocator->expandable_segments());
  allocator->set_expandable_segments(false);
  EXPECT_FALSE(allocator->expandable_segments());
  DataPtr first = allocator->allocate(14 * kMiB, graph_stream);
  first.free();
  DataPtr second = allocator->allocate(20 * kMiB, graph_stream);
  EXPECT_EQ(backend->num_reservations(), 0u);
  EXPECT_EQ(backend->num_segments(), 2u);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 34 * kMiB);
}

TEST_F(ExpandablePoolTest, ReleasingThePoolUnmapsAndReleasesEverything) {
  DataPtr a = allocator->allocate(4 * kMiB, graph_stream);
  DataPtr b = allocator->allocate(8 * kMiB, graph_stream);
  a.free();
  allocator->end_allocate_to_pool(graph_stream, pool);
  allocator->release_pool(pool);
  routed = false;
  released = true;
  EXPECT_TRUE(allocator->pool_exists(pool));  // b still holds a block
  EXPECT_EQ(backend->num_mappings(), 2u);
  b.free();
  EXPECT_FALSE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->num_mappings(), 0u);
  EXPECT_EQ(backend->num_reservations(), 0u);
  EXPECT_EQ(allocator->stats().private_pool_bytes, 0u);
  EXPECT_EQ(allocator->stats().reserved_bytes, 0u);
}

TEST_F(ExpandablePoolTest, AnEmptySegmentOfAReleasedPoolWaitsOutACapture) {
  DataPtr a = allocator->allocate(4 * kMiB, graph_stream);
  allocator->end_allocate_to_pool(graph_stream, pool);
  allocator->release_pool(pool);
  routed = false;
  released = true;
  // Another graph captures on another stream, into a second pool of this allocator.
  const Stream capture_stream = new_stream(kCPU);
  DeviceGraph graph(kCPU);
  graph.begin_capture(capture_stream);
  const PoolId second = allocator->create_pool();
  allocator->begin_allocate_to_pool(capture_stream, second);
  a.free();
  EXPECT_TRUE(allocator->pool_exists(pool));  // kept: unmapping now would wait for the device
  EXPECT_EQ(backend->num_reservations(), 1u);
  allocator->empty_cache();  // still capturing
  EXPECT_EQ(backend->num_mappings(), 1u);
  allocator->end_allocate_to_pool(capture_stream, second);
  graph.end_capture();
  allocator->release_pool(second);
  allocator->empty_cache();
  EXPECT_FALSE(allocator->pool_exists(pool));
  EXPECT_EQ(backend->num_mappings(), 0u);
  EXPECT_EQ(backend->num_reservations(), 0u);
  release_stream(capture_stream);
}

TEST_F(ExpandablePoolTest, RunningOutOfMemoryThrowsAndLeavesNothingReserved) {
  backend->fail_maps = true;
  try {
    allocator->allocate(4 * kMiB, graph_stream);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    EXPECT_NE(std::string(error.what()).find("into private"), std::string::npos) << error.what();
  }
  EXPECT_EQ(backend->num_reservations(), 0u);
  EXPECT_TRUE(pool_segments().empty());
  EXPECT_EQ(allocator->stats().num_ooms, 1u);
}

TEST_F(ExpandablePoolTest, TheMemoryLimitCountsMappedBytes) {
  allocator->set_memory_limit(10 * kMiB);
  DataPtr a = allocator->allocate(8 * kMiB, graph_stream);
  EXPECT_THROW(allocator->allocate(4 * kMiB, graph_stream), OutOfMemoryError);
  DataPtr b = allocator->allocate(2 * kMiB, graph_stream);  // fits: 10 MiB mapped
  EXPECT_EQ(allocator->stats().reserved_bytes, 10 * kMiB);
  EXPECT_EQ(backend->num_reservations(), 1u);  // the segment survived the failed growth
}

TEST_F(ExpandablePoolTest, ARequestLargerThanTheReservationTakesAnOrdinarySegment) {
  DataPtr huge = allocator->allocate(kReserve + kMiB, graph_stream);
  EXPECT_EQ(backend->num_segments(), 1u);
  EXPECT_EQ(backend->num_reservations(), 0u);
}

TEST_F(ExpandablePoolTest, ACheckpointSeesLaterGrowthAsFree) {
  StoragePtr a = Storage::wrap(allocator->allocate(4 * kMiB, graph_stream), 4 * kMiB);
  const PoolState checkpoint = allocator->checkpoint_pool_state(pool);
  ASSERT_EQ(checkpoint.segments.size(), 1u);
  EXPECT_TRUE(checkpoint.segments[0].expandable);
  EXPECT_EQ(checkpoint.segments[0].size, 4 * kMiB);

  // A later recording grows the segment; its output's memory is then only lent (a replay's).
  DataPtr b = allocator->allocate(6 * kMiB, graph_stream);
  const std::uintptr_t b_address = address(b);
  b.release_ownership();
  EXPECT_EQ(pool_segments()[0].size, 10 * kMiB);

  Storage* live[] = {a.get()};
  const CheckpointDelta delta = allocator->set_checkpoint_pool_state(checkpoint, live);
  EXPECT_EQ(delta.freed, std::vector<void*>{reinterpret_cast<void*>(b_address)});
  EXPECT_TRUE(delta.allocated.empty());
  const auto segments = pool_segments();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].size, 10 * kMiB);  // it never shrinks
  ASSERT_EQ(segments[0].blocks.size(), 2u);
  EXPECT_TRUE(segments[0].blocks[0].allocated);
  EXPECT_FALSE(segments[0].blocks[1].allocated);
  EXPECT_EQ(segments[0].blocks[1].size, 6 * kMiB);
  // The grown part is reused without mapping more.
  const int maps_before = backend->maps;
  DataPtr c = allocator->allocate(6 * kMiB, graph_stream);
  EXPECT_EQ(address(c), b_address);
  EXPECT_EQ(backend->maps, maps_before);
}

TEST_F(ExpandablePoolTest, ACheckpointWithAFreeEndJoinsTheGrowthToIt) {
  // 2.5 MiB: 4 MiB mapped, the block and 1.5 MiB free after it.
  const std::size_t nbytes = 5 * kMiB / 2;
  StoragePtr kept = Storage::wrap(allocator->allocate(nbytes, graph_stream), nbytes);
  const PoolState checkpoint = allocator->checkpoint_pool_state(pool);
  ASSERT_EQ(checkpoint.segments[0].blocks.size(), 2u);
  DataPtr b = allocator->allocate(5 * kMiB, graph_stream);  // the free 1.5 MiB + 4 MiB more
  EXPECT_EQ(pool_segments()[0].size, 8 * kMiB);
  b.release_ownership();
  Storage* live[] = {kept.get()};
  allocator->set_checkpoint_pool_state(checkpoint, live);
  const auto segments = pool_segments();
  ASSERT_EQ(segments[0].blocks.size(), 2u);  // never two free neighbours
  EXPECT_FALSE(segments[0].blocks[1].allocated);
  EXPECT_EQ(segments[0].blocks[1].size, 8 * kMiB - nbytes);
}

}  // namespace
}  // namespace grove
