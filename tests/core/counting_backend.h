// A malloc allocator backend for the caching allocator's tests (pool_test.cpp,
// expandable_pool_test.cpp): it counts the segments it hands out and, when it dies, checks that
// every one was freed. Events are complete at once, as on a CPU stream.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>

#include "core/caching_allocator.h"

namespace grove::testing {

class CountingBackend : public AllocatorBackend {
 public:
  ~CountingBackend() override {
    EXPECT_TRUE(segments_.empty()) << segments_.size() << " segments were never freed";
    for (auto& [ptr, size] : segments_) std::free(ptr);
  }
  Device device() const override { return kCPU; }
  void* allocate_segment(std::size_t nbytes) override {
    void* ptr = std::aligned_alloc(64, nbytes);
    if (ptr != nullptr) segments_.emplace(ptr, nbytes);
    return ptr;
  }
  void free_segment(void* ptr, std::size_t /*nbytes*/) override {
    EXPECT_EQ(segments_.erase(ptr), 1u) << "freed a segment the backend never gave out";
    std::free(ptr);
    ++segment_frees;
  }
  std::uintptr_t record_event(Stream /*stream*/) override { return 0; }
  bool event_completed(std::uintptr_t /*event*/) override { return true; }
  void destroy_event(std::uintptr_t /*event*/) override {}

  std::size_t num_segments() const { return segments_.size(); }
  int segment_frees = 0;

 private:
  std::map<void*, std::size_t> segments_;
};

}  // namespace grove::testing
