// Tests of the caching allocator's block machinery: rounding, small and large bins, splitting
// and coalescing, best fit, per-stream reuse, record_stream, stats, empty_cache and out of
// memory. Private pools and checkpoints are in pool_test.cpp.
//
// Every test but the last suite builds a fresh CachingAllocator over TestBackend, which takes
// segments from malloc, counts them, can run out of memory on demand, and has events that the
// test completes by hand; so nothing here depends on the process-wide CPU allocator. Streams
// are plain values here (the allocator only uses them as keys), so no CPU stream is consumed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/caching_allocator.h"
#include "core/format.h"
#include "core/storage.h"

namespace grove {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * 1024;

// A raw backend the test can look into and steer.
class TestBackend final : public AllocatorBackend {
 public:
  ~TestBackend() override {
    // The allocator gives every segment back when it dies.
    EXPECT_TRUE(segments_.empty()) << segments_.size() << " segments were never freed";
    for (auto& [ptr, size] : segments_) std::free(ptr);
  }

  Device device() const override { return kCPU; }
  void* allocate_segment(std::size_t nbytes) override {
    ++segment_allocations;
    if (fail_all || outstanding_bytes() + nbytes > capacity) return nullptr;
    void* ptr = std::aligned_alloc(64, nbytes);
    if (ptr != nullptr) segments_.emplace(ptr, nbytes);
    return ptr;
  }
  void free_segment(void* ptr, std::size_t nbytes) override {
    auto found = segments_.find(ptr);
    EXPECT_TRUE(found != segments_.end()) << "freed a segment the backend never gave out";
    if (found == segments_.end()) return;
    EXPECT_EQ(found->second, nbytes) << "segment freed with the wrong size";
    segments_.erase(found);
    std::free(ptr);
    ++segment_frees;
  }
  std::uintptr_t record_event(Stream stream) override {
    const std::uintptr_t event = next_event_++;
    events[event] = EventState{stream, false, false};
    return event;
  }
  bool event_completed(std::uintptr_t event) override {
    EXPECT_TRUE(events.contains(event) && !events[event].destroyed);
    return events[event].completed;
  }
  void destroy_event(std::uintptr_t event) override { events[event].destroyed = true; }

  void complete_all_events() {
    for (auto& [id, state] : events) state.completed = true;
  }
  std::size_t outstanding_bytes() const {
    std::size_t total = 0;
    for (const auto& [ptr, size] : segments_) total += size;
    return total;
  }
  std::size_t num_segments() const { return segments_.size(); }

  struct EventState {
    Stream stream;
    bool completed = false;
    bool destroyed = false;
  };
  int segment_allocations = 0;  // calls, including failed ones
  int segment_frees = 0;
  bool fail_all = false;
  std::size_t capacity = std::numeric_limits<std::size_t>::max();  // "device memory"
  std::map<std::uintptr_t, EventState> events;

 private:
  std::map<void*, std::size_t> segments_;
  std::uintptr_t next_event_ = 1;
};

::testing::AssertionResult has_substr(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not found in: " << text;
}

class AllocatorTest : public ::testing::Test {
 protected:
  AllocatorTest() {
    auto owned = std::make_unique<TestBackend>();
    backend = owned.get();
    allocator = std::make_unique<CachingAllocator>(std::move(owned));
  }

  // The segment that contains `ptr`, or nullptr.
  const SegmentInfo* segment_of(const std::vector<SegmentInfo>& segments, const void* ptr) {
    const auto address = reinterpret_cast<std::uintptr_t>(ptr);
    for (const SegmentInfo& segment : segments) {
      if (address >= segment.address && address < segment.address + segment.size) {
        return &segment;
      }
    }
    return nullptr;
  }
  // The block that starts at `ptr` (a copy; size 0 if there is none).
  BlockInfo block_at(const void* ptr) {
    const auto snapshot = allocator->snapshot();
    const SegmentInfo* segment = segment_of(snapshot, ptr);
    if (segment != nullptr) {
      for (const BlockInfo& block : segment->blocks) {
        if (block.address == reinterpret_cast<std::uintptr_t>(ptr)) return block;
      }
    }
    return BlockInfo{};
  }

  const Stream stream_a{kCPU, 1};
  const Stream stream_b{kCPU, 2};
  TestBackend* backend = nullptr;  // owned by the allocator
  std::unique_ptr<CachingAllocator> allocator;
};

// --- sizes and bins ---

TEST_F(AllocatorTest, RoundsRequestsUpToMultiplesOf512Bytes) {
  DataPtr one = allocator->allocate(1, stream_a);
  DataPtr exact = allocator->allocate(512, stream_a);
  DataPtr over = allocator->allocate(513, stream_a);
  EXPECT_EQ(block_at(one.get()).size, 512u);
  EXPECT_EQ(block_at(one.get()).requested_size, 1u);
  EXPECT_EQ(block_at(exact.get()).size, 512u);
  EXPECT_EQ(block_at(over.get()).size, 1024u);
  EXPECT_EQ(block_at(over.get()).requested_size, 513u);
  EXPECT_EQ(allocator->stats().allocated_bytes, 512u + 512u + 1024u);
}

TEST_F(AllocatorTest, SmallRequestsComeFromTwoMiBSegments) {
  DataPtr largest_small = allocator->allocate(CachingAllocator::kSmallRequest, stream_a);
  const auto snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].size, 2 * kMiB);
  EXPECT_TRUE(snapshot[0].is_small);
  EXPECT_EQ(snapshot[0].address, reinterpret_cast<std::uintptr_t>(largest_small.get()));
  EXPECT_TRUE(snapshot[0].stream == stream_a);
  EXPECT_FALSE(snapshot[0].pool.is_private());
}

TEST_F(AllocatorTest, LargeRequestsBelow10MiBComeFrom20MiBSegments) {
  DataPtr just_large = allocator->allocate(CachingAllocator::kSmallRequest + 1, stream_a);
  auto snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].size, 20 * kMiB);
  EXPECT_FALSE(snapshot[0].is_small);
  // The largest request below kMinLargeAlloc fits the 19 MiB left in that segment: no new one.
  DataPtr almost_10 = allocator->allocate(10 * kMiB - 512, stream_a);
  snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(backend->segment_allocations, 1);
}

TEST_F(AllocatorTest, RequestsFrom10MiBGetTheirOwnSegmentRoundedTo2MiB) {
  DataPtr ten = allocator->allocate(10 * kMiB, stream_a);
  DataPtr eleven = allocator->allocate(11 * kMiB, stream_a);
  const auto snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot.size(), 2u);
  const SegmentInfo* ten_segment = segment_of(snapshot, ten.get());
  const SegmentInfo* eleven_segment = segment_of(snapshot, eleven.get());
  ASSERT_NE(ten_segment, nullptr);
  ASSERT_NE(eleven_segment, nullptr);
  EXPECT_EQ(ten_segment->size, 10 * kMiB);
  EXPECT_EQ(eleven_segment->size, 12 * kMiB);
  // The 1 MiB left over is not worth a block of its own: the block is the whole segment.
  ASSERT_EQ(eleven_segment->blocks.size(), 1u);
  EXPECT_EQ(eleven_segment->blocks[0].size, 12 * kMiB);
}

// --- split, coalesce, best fit, cache hits ---

TEST_F(AllocatorTest, TwoSmallAllocationsSplitOneSegmentIntoAdjacentBlocks) {
  DataPtr first = allocator->allocate(1000, stream_a);
  DataPtr second = allocator->allocate(1000, stream_a);
  EXPECT_EQ(static_cast<char*>(second.get()), static_cast<char*>(first.get()) + 1024);
  EXPECT_EQ(backend->segment_allocations, 1);
  const auto snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  ASSERT_EQ(snapshot[0].blocks.size(), 3u);  // first, second, the free rest
  EXPECT_TRUE(snapshot[0].blocks[0].allocated);
  EXPECT_TRUE(snapshot[0].blocks[1].allocated);
  EXPECT_FALSE(snapshot[0].blocks[2].allocated);
  EXPECT_EQ(snapshot[0].blocks[2].size, 2 * kMiB - 2048);
}

TEST_F(AllocatorTest, FreeingAllBlocksCoalescesThemIntoOneFreeBlock) {
  DataPtr first = allocator->allocate(1000, stream_a);
  DataPtr middle = allocator->allocate(3000, stream_a);
  DataPtr last = allocator->allocate(5000, stream_a);
  first.free();
  last.free();                                            // merges with the free rest after it
  ASSERT_EQ(allocator->snapshot()[0].blocks.size(), 3u);  // free, middle, free
  middle.free();                                          // merges with both neighbours
  const auto snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  ASSERT_EQ(snapshot[0].blocks.size(), 1u);
  EXPECT_FALSE(snapshot[0].blocks[0].allocated);
  EXPECT_EQ(snapshot[0].blocks[0].address, snapshot[0].address);
  EXPECT_EQ(snapshot[0].blocks[0].size, 2 * kMiB);
  EXPECT_EQ(allocator->stats().allocated_bytes, 0u);
}

TEST_F(AllocatorTest, BestFitPicksTheSmallestFreeBlockThatFits) {
  // Free blocks of 4 KiB, 1 KiB and 2 KiB (and the big rest), kept apart by live separators.
  DataPtr four = allocator->allocate(4 * kKiB, stream_a);
  DataPtr separator1 = allocator->allocate(512, stream_a);
  DataPtr one = allocator->allocate(1 * kKiB, stream_a);
  DataPtr separator2 = allocator->allocate(512, stream_a);
  DataPtr two = allocator->allocate(2 * kKiB, stream_a);
  DataPtr separator3 = allocator->allocate(512, stream_a);
  void* four_address = four.get();
  void* one_address = one.get();
  void* two_address = two.get();
  four.free();
  one.free();
  two.free();
  const auto hits_before = allocator->stats().cache_hits;

  DataPtr fits_two = allocator->allocate(1536, stream_a);  // too big for 1 KiB, 2 KiB is best
  EXPECT_EQ(fits_two.get(), two_address);
  DataPtr fits_one = allocator->allocate(700, stream_a);  // 1 KiB block, not the 4 KiB one
  EXPECT_EQ(fits_one.get(), one_address);
  DataPtr fits_four = allocator->allocate(3 * kKiB, stream_a);
  EXPECT_EQ(fits_four.get(), four_address);
  EXPECT_EQ(allocator->stats().cache_hits, hits_before + 3);
  EXPECT_EQ(backend->segment_allocations, 1);
}

TEST_F(AllocatorTest, ReusingAFreedBlockCountsACacheHitAndTakesNoSegment) {
  DataPtr first = allocator->allocate(4 * kMiB, stream_a);
  void* address = first.get();
  first.free();
  EXPECT_EQ(allocator->stats().cache_hits, 0u);
  DataPtr again = allocator->allocate(4 * kMiB, stream_a);
  EXPECT_EQ(again.get(), address);
  EXPECT_EQ(allocator->stats().cache_hits, 1u);
  EXPECT_EQ(allocator->stats().num_segment_allocations, 1u);
  EXPECT_EQ(backend->segment_allocations, 1);
}

// --- streams ---

TEST_F(AllocatorTest, BlockFreedOnOneStreamIsNotReusedByAnother) {
  // Free bins are ordered by stream id; B (id 2) frees and A (id 1) allocates, so a search that
  // ignored the stream would land on B's block.
  DataPtr on_b = allocator->allocate(1000, stream_b);
  void* address_b = on_b.get();
  on_b.free();
  DataPtr on_a = allocator->allocate(1000, stream_a);
  EXPECT_EQ(backend->segment_allocations, 2);  // A took a segment of its own
  const auto snapshot = allocator->snapshot();
  const SegmentInfo* segment_a = segment_of(snapshot, on_a.get());
  const SegmentInfo* segment_b = segment_of(snapshot, address_b);
  ASSERT_NE(segment_a, nullptr);
  ASSERT_NE(segment_b, nullptr);
  EXPECT_NE(segment_a, segment_b);
  EXPECT_TRUE(segment_a->stream == stream_a);
  EXPECT_TRUE(segment_b->stream == stream_b);
  // B still gets its own block back.
  DataPtr again_b = allocator->allocate(1000, stream_b);
  EXPECT_EQ(again_b.get(), address_b);
}

TEST_F(AllocatorTest, RecordStreamDefersReuseUntilTheEventCompletes) {
  DataPtr used_on_b = allocator->allocate(1000, stream_a);
  void* address = used_on_b.get();
  allocator->record_stream(address, stream_b);
  used_on_b.free();
  ASSERT_EQ(backend->events.size(), 1u);
  const auto& event = backend->events.begin()->second;
  EXPECT_TRUE(event.stream == stream_b);
  // Still counted as allocated while B may use it.
  EXPECT_EQ(allocator->stats().allocated_bytes, 1024u);

  DataPtr while_pending = allocator->allocate(1000, stream_a);
  EXPECT_NE(while_pending.get(), address);

  backend->complete_all_events();
  DataPtr after = allocator->allocate(1000, stream_a);
  EXPECT_EQ(after.get(), address);  // the best fit once it is free
  EXPECT_TRUE(backend->events.begin()->second.destroyed);
  EXPECT_EQ(backend->segment_allocations, 1);
}

TEST_F(AllocatorTest, RecordStreamOnTheAllocatingStreamRecordsNoEvent) {
  DataPtr block = allocator->allocate(1000, stream_a);
  void* address = block.get();
  allocator->record_stream(address, stream_a);
  block.free();
  EXPECT_TRUE(backend->events.empty());
  EXPECT_EQ(allocator->stats().allocated_bytes, 0u);
  DataPtr again = allocator->allocate(1000, stream_a);
  EXPECT_EQ(again.get(), address);
}

TEST_F(AllocatorTest, RecordStreamOfAnUnknownPointerThrows) {
  DataPtr block = allocator->allocate(1000, stream_a);
  EXPECT_THROW(allocator->record_stream(static_cast<char*>(block.get()) + 512, stream_b), Error);
  int not_allocated = 0;
  EXPECT_THROW(allocator->record_stream(&not_allocated, stream_b), Error);
}

// --- stats ---

TEST_F(AllocatorTest, StatsCountAllocatedAndReservedBytesAndCalls) {
  DataPtr small = allocator->allocate(1000, stream_a);
  DataPtr large = allocator->allocate(5 * kMiB, stream_a);
  AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.allocated_bytes, 1024u + 5 * kMiB);
  EXPECT_EQ(stats.reserved_bytes, 2 * kMiB + 20 * kMiB);
  EXPECT_EQ(stats.num_allocations, 2u);
  EXPECT_EQ(stats.num_frees, 0u);
  EXPECT_EQ(stats.num_segment_allocations, 2u);
  EXPECT_EQ(stats.private_pool_bytes, 0u);

  small.free();
  stats = allocator->stats();
  EXPECT_EQ(stats.allocated_bytes, 5 * kMiB);
  EXPECT_EQ(stats.reserved_bytes, 22 * kMiB);  // cached, not returned
  EXPECT_EQ(stats.num_frees, 1u);
  EXPECT_EQ(stats.num_segment_frees, 0u);
}

TEST_F(AllocatorTest, PeaksSurviveFreesUntilResetPeakStats) {
  DataPtr large = allocator->allocate(5 * kMiB, stream_a);
  DataPtr small = allocator->allocate(1000, stream_a);
  large.free();
  allocator->empty_cache();  // gives back the 20 MiB segment, now empty
  AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.peak_allocated_bytes, 5 * kMiB + 1024);
  EXPECT_EQ(stats.peak_reserved_bytes, 22 * kMiB);
  EXPECT_EQ(stats.allocated_bytes, 1024u);
  EXPECT_EQ(stats.reserved_bytes, 2 * kMiB);

  allocator->reset_peak_stats();
  stats = allocator->stats();
  EXPECT_EQ(stats.peak_allocated_bytes, 1024u);
  EXPECT_EQ(stats.peak_reserved_bytes, 2 * kMiB);
}

TEST_F(AllocatorTest, EmptyCacheReturnsOnlyFullyFreeSegments) {
  DataPtr live = allocator->allocate(1000, stream_a);        // its 2 MiB segment stays
  DataPtr cached = allocator->allocate(5 * kMiB, stream_a);  // 20 MiB segment
  DataPtr neighbour = allocator->allocate(1000, stream_a);   // shares the 2 MiB segment
  cached.free();
  neighbour.free();
  allocator->empty_cache();
  EXPECT_EQ(backend->segment_frees, 1);
  EXPECT_EQ(backend->num_segments(), 1u);
  const auto snapshot = allocator->snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].size, 2 * kMiB);
  EXPECT_EQ(snapshot[0].address, reinterpret_cast<std::uintptr_t>(live.get()));
  EXPECT_EQ(allocator->stats().reserved_bytes, 2 * kMiB);
  EXPECT_EQ(allocator->stats().num_segment_frees, 1u);
}

TEST_F(AllocatorTest, AllocatingZeroBytesGivesANullNonOwningPointer) {
  DataPtr nothing = allocator->allocate(0, stream_a);
  EXPECT_EQ(nothing.get(), nullptr);
  EXPECT_FALSE(nothing.owns_memory());
  EXPECT_TRUE(nothing.device() == kCPU);
  EXPECT_EQ(backend->segment_allocations, 0);
  EXPECT_EQ(allocator->stats().num_allocations, 0u);
  EXPECT_EQ(allocator->stats().allocated_bytes, 0u);
}

// --- out of memory ---

TEST_F(AllocatorTest, MemoryLimitFreesCachedSegmentsAndRetries) {
  allocator->set_memory_limit(20 * kMiB);
  allocator->allocate(5 * kMiB, stream_a).free();  // a cached, fully free 20 MiB segment
  // A small block needs a new 2 MiB segment: over the limit until the cache is given back.
  DataPtr small = allocator->allocate(1000, stream_a);
  EXPECT_NE(small.get(), nullptr);
  const AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.num_segment_frees, 1u);
  EXPECT_EQ(backend->segment_frees, 1);
  EXPECT_EQ(stats.reserved_bytes, 2 * kMiB);
  EXPECT_EQ(stats.num_ooms, 0u);
}

TEST_F(AllocatorTest, MemoryLimitThrowsOutOfMemoryWithADiagnosis) {
  // 2 MiB of private pool memory, 5 MiB live in a 20 MiB segment, a 23 MiB limit: a 16 MiB
  // request needs a segment of its own (18 MiB) and freeing the (empty) cache cannot make room.
  const PoolId pool = allocator->create_pool();
  const Stream graph_stream{kCPU, 3};
  allocator->begin_allocate_to_pool(graph_stream, pool);
  DataPtr graph_memory = allocator->allocate(1000, graph_stream);
  allocator->end_allocate_to_pool(graph_stream, pool);
  DataPtr live = allocator->allocate(5 * kMiB, stream_a);
  const std::size_t limit = 23 * kMiB;
  allocator->set_memory_limit(limit);
  const std::size_t requested = 16 * kMiB + 7;
  try {
    allocator->allocate(requested, stream_a);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(has_substr(message, std::to_string(requested) + " bytes"));
    EXPECT_TRUE(has_substr(message, format_bytes(5 * kMiB + 1024) + " allocated"));
    EXPECT_TRUE(has_substr(message, format_bytes(22 * kMiB) + " reserved"));
    EXPECT_TRUE(has_substr(message, " " + format_bytes(2 * kMiB)));  // not "22.00 MiB"
    EXPECT_TRUE(has_substr(message, "private pools"));
    EXPECT_TRUE(has_substr(message, format_bytes(limit)));
  }
  const AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.num_ooms, 1u);
  EXPECT_EQ(stats.reserved_bytes, 22 * kMiB);  // nothing was lost on the way
  EXPECT_EQ(stats.num_segment_frees, 0u);
  graph_memory.free();
  allocator->release_pool(pool);
}

TEST_F(AllocatorTest, BackendOutOfMemoryFreesCachedSegmentsAndRetries) {
  backend->capacity = 21 * kMiB;
  allocator->allocate(5 * kMiB, stream_a).free();
  DataPtr small = allocator->allocate(1000, stream_a);
  EXPECT_NE(small.get(), nullptr);
  EXPECT_EQ(backend->segment_frees, 1);
  EXPECT_EQ(backend->segment_allocations, 3);  // 20 MiB, failed 2 MiB, 2 MiB
  EXPECT_EQ(allocator->stats().reserved_bytes, 2 * kMiB);
  EXPECT_EQ(allocator->stats().num_ooms, 0u);
}

TEST_F(AllocatorTest, BackendOutOfMemoryThrowsWhenFreeingIsNotEnough) {
  DataPtr live = allocator->allocate(5 * kMiB, stream_a);
  backend->fail_all = true;
  const std::size_t requested = 1000;
  try {
    allocator->allocate(requested, stream_a);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& error) {
    const std::string message = error.what();
    EXPECT_TRUE(has_substr(message, std::to_string(requested) + " bytes"));
    EXPECT_TRUE(has_substr(message, format_bytes(5 * kMiB) + " allocated"));
    EXPECT_TRUE(has_substr(message, format_bytes(20 * kMiB) + " reserved"));
    EXPECT_TRUE(has_substr(message, "private pools"));
  }
  EXPECT_EQ(backend->segment_allocations, 3);  // the first, then a try and a retry
  EXPECT_EQ(allocator->stats().num_ooms, 1u);
  // Out of memory is not fatal: once the backend has memory again, allocation works.
  backend->fail_all = false;
  DataPtr small = allocator->allocate(requested, stream_a);
  EXPECT_NE(small.get(), nullptr);
}

TEST_F(AllocatorTest, RequestsTooLargeToRoundThrowOutOfMemory) {
  // Rounding SIZE_MAX up to a block or segment size overflows; the allocator must report out of
  // memory rather than hand out a small block.
  for (std::size_t huge :
       {std::numeric_limits<std::size_t>::max(), std::numeric_limits<std::size_t>::max() - kMiB}) {
    EXPECT_THROW(allocator->allocate(huge, stream_a), OutOfMemoryError) << huge;
  }
  EXPECT_EQ(allocator->stats().num_ooms, 2u);
  EXPECT_EQ(allocator->stats().num_allocations, 0u);
  EXPECT_EQ(allocator->stats().reserved_bytes, 0u);
}

// --- raw_free ---

TEST_F(AllocatorTest, RawFreeFreesAnAllocatedBlock) {
  DataPtr block = allocator->allocate(1000, stream_a);
  void* address = block.get();
  block.release_ownership();
  allocator->raw_free(address);
  EXPECT_EQ(allocator->stats().allocated_bytes, 0u);
  EXPECT_EQ(allocator->stats().num_frees, 1u);
}

TEST_F(AllocatorTest, RawFreeOfAnUnknownPointerThrows) {
  DataPtr block = allocator->allocate(1000, stream_a);
  int not_allocated = 0;
  EXPECT_THROW(allocator->raw_free(&not_allocated), Error);
  EXPECT_THROW(allocator->raw_free(static_cast<char*>(block.get()) + 512), Error);  // interior
  EXPECT_EQ(allocator->stats().allocated_bytes, 1024u);
  EXPECT_EQ(allocator->stats().num_frees, 0u);
}

// --- threads ---

TEST_F(AllocatorTest, ConcurrentAllocationsAndFreesKeepTheBooksStraight) {
  // Public calls and the deleters run by DataPtr may come from any thread. Without the lock
  // the bins are corrupted (a crash, or stats that do not add up).
  constexpr int kThreads = 4;
  constexpr int kIterations = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        DataPtr first =
            allocator->allocate(512 * static_cast<std::size_t>(1 + (i + t) % 7), stream_a);
        DataPtr second = allocator->allocate(1000, stream_a);
        first.free();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const AllocatorStats stats = allocator->stats();
  EXPECT_EQ(stats.num_allocations, 2u * kThreads * kIterations);
  EXPECT_EQ(stats.num_frees, stats.num_allocations);
  EXPECT_EQ(stats.allocated_bytes, 0u);
  for (const SegmentInfo& segment : allocator->snapshot()) {
    EXPECT_EQ(segment.blocks.size(), 1u);  // everything coalesced back
  }
}

// --- the process-wide CPU allocator ---

TEST(AllocatorGlobalTest, StorageAllocateUsesTheCpuCachingAllocator) {
  CachingAllocator& cpu = allocator_for(kCPU);
  const AllocatorStats before = cpu.stats();
  StoragePtr storage = Storage::allocate(1000, kCPU);
  ASSERT_NE(storage->data(), nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(storage->data()) % 64, 0u);
  EXPECT_EQ(storage->nbytes(), 1000u);
  EXPECT_TRUE(storage->data_ptr().owns_memory());
  AllocatorStats during = cpu.stats();
  EXPECT_EQ(during.allocated_bytes, before.allocated_bytes + 1024);
  EXPECT_EQ(during.num_allocations, before.num_allocations + 1);
  bool found = false;
  for (const SegmentInfo& segment : cpu.snapshot()) {
    for (const BlockInfo& block : segment.blocks) {
      if (block.address == reinterpret_cast<std::uintptr_t>(storage->data())) {
        found = block.allocated && block.requested_size == 1000;
      }
    }
  }
  EXPECT_TRUE(found) << "the storage's block is not an allocated block of the CPU allocator";
  storage.reset();
  EXPECT_EQ(cpu.stats().allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(cpu.stats().num_frees, before.num_frees + 1);
}

TEST(AllocatorGlobalTest, AllocatorForAnUnregisteredDeviceThrows) {
  EXPECT_THROW(allocator_for(cuda(7)), Error);
}

}  // namespace
}  // namespace grove
