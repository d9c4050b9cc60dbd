// Tests of ownership: IntrusivePtr / WeakIntrusivePtr counts and lifetimes, StorageWeakRef,
// a storage's access error (every data access through any tensor on it throws that message,
// metadata keeps working), free_and_remove_deleter (memory goes back to the allocator at once
// and is never freed twice), and Storage::wrap with and without a deleter.
//
// The CPU allocator is shared by the whole test binary, so allocator statistics are compared as
// differences taken inside one test (tests run one at a time).
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "core/caching_allocator.h"
#include "core/storage.h"
#include "core/tensor.h"

namespace grove {
namespace {

// --- IntrusivePtr and WeakIntrusivePtr ---

// Records when its resources are released and when it is destroyed.
struct Events {
  int released = 0;
  int destroyed = 0;
};

class Tracked final : public IntrusiveTarget {
 public:
  explicit Tracked(Events* events, int value = 0) : events_(events), value_(value) {}
  ~Tracked() override { ++events_->destroyed; }
  int value() const { return value_; }

 private:
  void release_resources() override { ++events_->released; }
  Events* events_;
  int value_;
};

TEST(IntrusivePtrTest, MakeGivesOneStrongHandle) {
  Events events;
  auto p = IntrusivePtr<Tracked>::make(&events, 7);
  EXPECT_TRUE(p);
  EXPECT_EQ(p.use_count(), 1u);
  EXPECT_EQ(p->value(), 7);
  EXPECT_EQ((*p).value(), 7);
  EXPECT_EQ(p->weak_handle_count(), 0u);
}

TEST(IntrusivePtrTest, CopiesCountAndMovesDoNot) {
  Events events;
  auto p = IntrusivePtr<Tracked>::make(&events);
  IntrusivePtr<Tracked> copy = p;
  EXPECT_EQ(p.use_count(), 2u);
  EXPECT_TRUE(copy == p);
  IntrusivePtr<Tracked> moved = std::move(copy);
  EXPECT_EQ(p.use_count(), 2u);
  EXPECT_FALSE(copy);  // NOLINT(bugprone-use-after-move): a moved-from handle is null
  EXPECT_EQ(copy.use_count(), 0u);
  moved.reset();
  EXPECT_EQ(p.use_count(), 1u);
  EXPECT_EQ(events.destroyed, 0);
}

TEST(IntrusivePtrTest, LastStrongHandleReleasesAndDestroys) {
  Events events;
  {
    auto p = IntrusivePtr<Tracked>::make(&events);
    IntrusivePtr<Tracked> q = p;
    p.reset();
    EXPECT_EQ(events.released, 0);
    EXPECT_EQ(q.use_count(), 1u);
  }
  EXPECT_EQ(events.released, 1);
  EXPECT_EQ(events.destroyed, 1);
}

TEST(IntrusivePtrTest, AssignmentReleasesTheOldTarget) {
  Events first, second;
  auto p = IntrusivePtr<Tracked>::make(&first);
  auto q = IntrusivePtr<Tracked>::make(&second);
  p = q;
  EXPECT_EQ(first.destroyed, 1);
  EXPECT_EQ(q.use_count(), 2u);
  p = p;  // self-assignment keeps the count
  EXPECT_EQ(q.use_count(), 2u);
  p = nullptr;
  EXPECT_EQ(q.use_count(), 1u);
  EXPECT_EQ(second.destroyed, 0);
}

TEST(IntrusivePtrTest, RawPointerAddsAHandleToALiveObject) {
  Events events;
  auto p = IntrusivePtr<Tracked>::make(&events);
  IntrusivePtr<Tracked> again(p.get());
  EXPECT_EQ(p.use_count(), 2u);
  EXPECT_TRUE(again == p);
}

TEST(WeakIntrusivePtrTest, CountsWeakHandlesWithoutKeepingStrongOnes) {
  Events events;
  auto p = IntrusivePtr<Tracked>::make(&events);
  WeakIntrusivePtr<Tracked> weak(p);
  EXPECT_EQ(p.use_count(), 1u);
  EXPECT_EQ(weak.use_count(), 1u);
  EXPECT_EQ(p->weak_handle_count(), 1u);
  WeakIntrusivePtr<Tracked> weak_copy = weak;
  EXPECT_EQ(p->weak_handle_count(), 2u);
  WeakIntrusivePtr<Tracked> weak_moved = std::move(weak_copy);
  EXPECT_EQ(p->weak_handle_count(), 2u);
  weak_moved.reset();
  EXPECT_EQ(p->weak_handle_count(), 1u);
  EXPECT_FALSE(weak.expired());
}

TEST(WeakIntrusivePtrTest, LockWhileAliveGivesAStrongHandle) {
  Events events;
  auto p = IntrusivePtr<Tracked>::make(&events, 3);
  WeakIntrusivePtr<Tracked> weak(p);
  IntrusivePtr<Tracked> locked = weak.lock();
  ASSERT_TRUE(locked);
  EXPECT_TRUE(locked == p);
  EXPECT_EQ(p.use_count(), 2u);
  EXPECT_EQ(locked->value(), 3);
  locked.reset();
  EXPECT_EQ(p.use_count(), 1u);
}

TEST(WeakIntrusivePtrTest, ObjectOutlivesItsResourcesWhileWeaklyHeld) {
  Events events;
  auto p = IntrusivePtr<Tracked>::make(&events);
  WeakIntrusivePtr<Tracked> weak(p);
  p.reset();
  EXPECT_EQ(events.released, 1);   // resources go with the last strong handle ...
  EXPECT_EQ(events.destroyed, 0);  // ... the object with the last weak one
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(weak.use_count(), 0u);
  EXPECT_FALSE(weak.lock());
  EXPECT_EQ(weak.unsafe_get()->weak_handle_count(), 1u);
  weak.reset();
  EXPECT_EQ(events.released, 1);
  EXPECT_EQ(events.destroyed, 1);
}

TEST(WeakIntrusivePtrTest, LockAfterDeathDoesNotResurrect) {
  Events events;
  auto p = IntrusivePtr<Tracked>::make(&events);
  WeakIntrusivePtr<Tracked> weak(p);
  p.reset();
  for (int attempt = 0; attempt < 3; ++attempt) EXPECT_FALSE(weak.lock());
  EXPECT_EQ(events.released, 1);  // not released again by a failed lock
}

TEST(WeakIntrusivePtrTest, DefaultAndNullHandles) {
  WeakIntrusivePtr<Tracked> weak;
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(weak.use_count(), 0u);
  EXPECT_FALSE(weak.lock());
  IntrusivePtr<Tracked> null_handle;
  EXPECT_FALSE(null_handle);
  EXPECT_EQ(null_handle.use_count(), 0u);
  EXPECT_TRUE(WeakIntrusivePtr<Tracked>(null_handle).expired());
}

// --- StorageWeakRef ---

TEST(StorageWeakRefTest, TracksALiveStorage) {
  Tensor x = zeros({16});
  StorageWeakRef ref(x.storage());
  EXPECT_FALSE(ref.expired());
  EXPECT_EQ(ref.use_count(), x.storage().use_count());
  EXPECT_EQ(ref.data_ptr(), x.storage()->unchecked_data());
  EXPECT_TRUE(ref.refers_to(x.storage().get()));
  StoragePtr locked = ref.lock();
  EXPECT_TRUE(locked == x.storage());
  EXPECT_EQ(ref.use_count(), 2u);  // x's storage handle and `locked`
}

TEST(StorageWeakRefTest, CountsEveryTensorOnTheStorage) {
  Tensor x = zeros({4, 4});
  StorageWeakRef ref(x.storage());
  const std::uint32_t alone = ref.use_count();
  Tensor view = x.t();
  Tensor other_view = x.select(0, 1);
  EXPECT_EQ(ref.use_count(), alone + 2);
  view = Tensor();
  EXPECT_EQ(ref.use_count(), alone + 1);
}

TEST(StorageWeakRefTest, RemembersWhereADeadStorageLived) {
  StorageWeakRef ref;
  void* where = nullptr;
  const Storage* object = nullptr;
  {
    Tensor x = zeros({16});
    Tensor view = x.slice(0, 4, 8);
    where = x.storage()->unchecked_data();
    object = x.storage().get();
    ref = StorageWeakRef(view.storage());
  }
  EXPECT_TRUE(ref.expired());
  EXPECT_EQ(ref.use_count(), 0u);
  EXPECT_FALSE(ref.lock());
  EXPECT_EQ(ref.data_ptr(), where);
  EXPECT_TRUE(ref.refers_to(object));
}

TEST(StorageWeakRefTest, DefaultIsExpired) {
  StorageWeakRef ref;
  EXPECT_TRUE(ref.expired());
  EXPECT_EQ(ref.use_count(), 0u);
  EXPECT_EQ(ref.data_ptr(), nullptr);
  EXPECT_FALSE(ref.lock());
}

// --- access error ---

constexpr const char* kPoison = "this output was overwritten by a later replay; clone() it";

// Runs fn and returns the grove::Error message it throws ("" if it does not throw one).
template <typename Fn>
std::string error_message_of(Fn fn) {
  try {
    fn();
  } catch (const Error& error) {
    return error.message();
  }
  return "";
}

TEST(StorageAccessError, DataPtrThrowsTheExactMessage) {
  Tensor x = arange(4);
  x.storage()->set_access_error(kPoison);
  EXPECT_TRUE(x.storage()->has_access_error());
  ASSERT_NE(x.storage()->access_error(), nullptr);
  EXPECT_EQ(*x.storage()->access_error(), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)x.data_ptr(); }), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)x.storage()->data(); }), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)x.data<float>(); }), kPoison);
}

TEST(StorageAccessError, HostReadsThrowTheMessage) {
  Tensor x = arange(4);
  x.storage()->set_access_error(kPoison);
  EXPECT_EQ(error_message_of([&] { (void)x.select(0, 1).item<float>(); }), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)x.to_vector<float>(); }), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)x.to_vector<std::int64_t>(); }), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)x.t().to_vector<float>(); }), kPoison);
}

TEST(StorageAccessError, PrintingThrowsTheMessage) {
  Tensor x = arange(4);
  x.storage()->set_access_error(kPoison);
  std::ostringstream out;
  EXPECT_EQ(error_message_of([&] { out << x; }), kPoison);
}

TEST(StorageAccessError, CopiesAndFillsThrowTheMessage) {
  Tensor poisoned = arange(4);
  poisoned.storage()->set_access_error(kPoison);
  Tensor healthy = zeros({4});
  EXPECT_EQ(error_message_of([&] { poisoned.copy_(healthy); }), kPoison);
  EXPECT_EQ(error_message_of([&] { healthy.copy_(poisoned); }), kPoison);
  EXPECT_EQ(error_message_of([&] { poisoned.slice(0, 1, 4).copy_(poisoned.slice(0, 0, 3)); }),
            kPoison);
  EXPECT_EQ(error_message_of([&] { poisoned.fill_(1); }), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)poisoned.clone(); }), kPoison);
  EXPECT_EQ(error_message_of([&] { (void)poisoned.to(DType::Int64); }), kPoison);
  EXPECT_EQ(healthy.to_vector<float>(), std::vector<float>(4, 0.0f));  // untouched
}

TEST(StorageAccessError, ErrorIsAGroveErrorWithALocation) {
  Tensor x = arange(4);
  x.storage()->set_access_error(kPoison);
  try {
    (void)x.data_ptr();
    FAIL() << "data_ptr() did not throw";
  } catch (const Error& error) {
    const std::string what = error.what();
    EXPECT_EQ(what.rfind(kPoison, 0), 0u) << what;
    EXPECT_EQ(what.back(), ')') << what;
  }
}

TEST(StorageAccessError, MetadataAndViewsStillWork) {
  Tensor x = arange(6).view({2, 3});
  const std::uint64_t version = x.version();
  x.storage()->set_access_error(kPoison);
  EXPECT_EQ(x.sizes().vec(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(x.strides().vec(), (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(x.numel(), 6);
  EXPECT_EQ(x.dtype(), DType::Float32);
  EXPECT_EQ(x.device(), kCPU);
  EXPECT_TRUE(x.is_contiguous());
  EXPECT_EQ(x.version(), version);
  Tensor view = x.t().select(0, 1);  // views touch only metadata
  EXPECT_EQ(view.sizes().vec(), (std::vector<std::int64_t>{2}));
  EXPECT_TRUE(view.is_alias_of(x));
  EXPECT_EQ(error_message_of([&] { (void)view.item<float>(); }),
            "item(): expected a tensor with exactly one element, but got shape [2] (2 "
            "elements)");
  EXPECT_NE(x.storage()->unchecked_data(), nullptr);
  EXPECT_EQ(error_message_of([&] { (void)view.to_vector<float>(); }), kPoison);
}

TEST(StorageAccessError, OtherStoragesAreUnaffected) {
  Tensor poisoned = arange(3);
  Tensor other = arange(3);
  poisoned.storage()->set_access_error(kPoison);
  EXPECT_EQ(other.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_FALSE(other.storage()->has_access_error());
  other.copy_(from_vector<float>({5, 6, 7}));
  EXPECT_EQ(other.to_vector<float>(), (std::vector<float>{5, 6, 7}));
}

// --- free_and_remove_deleter ---

TEST(StorageFreeAndRemoveDeleter, ReturnsTheMemoryToTheAllocatorAtOnce) {
  CachingAllocator& allocator = allocator_for(kCPU);
  Tensor x = empty({1024});  // 4096 bytes, a multiple of the 512-byte block rounding
  const AllocatorStats before = allocator.stats();
  x.storage()->free_and_remove_deleter();
  const AllocatorStats after = allocator.stats();
  EXPECT_EQ(before.allocated_bytes - after.allocated_bytes, 4096u);
  EXPECT_EQ(after.num_frees, before.num_frees + 1);
  EXPECT_FALSE(x.storage()->data_ptr().owns_memory());
  EXPECT_EQ(x.sizes().vec(), (std::vector<std::int64_t>{1024}));  // the handle stays valid
}

TEST(StorageFreeAndRemoveDeleter, NothingIsFreedTwiceWhenHandlesDieLater) {
  CachingAllocator& allocator = allocator_for(kCPU);
  Tensor x = empty({1024});
  Tensor view = x.slice(0, 0, 512);
  x.storage()->free_and_remove_deleter();
  x.storage()->set_access_error("freed");
  // The freed block may be handed out again at once; a second free of it would take it from
  // its new owner.
  EXPECT_FALSE(x.storage()->data_ptr().owns_memory());
  Tensor successor = full({1024}, 3.0);
  const AllocatorStats before = allocator.stats();
  x = Tensor();
  view = Tensor();  // the last handle: the storage dies here
  const AllocatorStats after = allocator.stats();
  EXPECT_EQ(after.allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(after.num_frees, before.num_frees);
  EXPECT_EQ(successor.to_vector<float>(), std::vector<float>(1024, 3.0f));
  Tensor another = full({1024}, 4.0);  // must not get successor's block
  EXPECT_NE(another.data_ptr(), successor.data_ptr());
  EXPECT_EQ(successor.to_vector<float>(), std::vector<float>(1024, 3.0f));
}

TEST(StorageFreeAndRemoveDeleter, CallsAWrappedDeleterExactlyOnce) {
  static int calls = 0;
  calls = 0;
  float buffer[4] = {};
  DeleterFn count_call = [](void*, void*) { ++calls; };
  StoragePtr storage = Storage::wrap(DataPtr(buffer, kCPU, count_call), sizeof(buffer));
  storage->free_and_remove_deleter();
  EXPECT_EQ(calls, 1);
  storage->free_and_remove_deleter();
  storage.reset();
  EXPECT_EQ(calls, 1);
}

// --- Storage::allocate and Storage::wrap ---

TEST(StorageTest, AllocateTakesMemoryFromTheDevicesAllocator) {
  CachingAllocator& allocator = allocator_for(kCPU);
  const AllocatorStats before = allocator.stats();
  StoragePtr storage = Storage::allocate(1000, kCPU);
  EXPECT_EQ(storage->nbytes(), 1000u);
  EXPECT_EQ(storage->device(), kCPU);
  EXPECT_EQ(storage->version(), 0u);
  EXPECT_FALSE(storage->has_access_error());
  EXPECT_TRUE(storage->data_ptr().owns_memory());
  EXPECT_EQ(allocator.stats().allocated_bytes - before.allocated_bytes, 1024u);  // rounded up
  storage.reset();
  EXPECT_EQ(allocator.stats().allocated_bytes, before.allocated_bytes);
}

TEST(StorageTest, BumpVersionCounts) {
  StoragePtr storage = Storage::allocate(16, kCPU);
  storage->bump_version();
  storage->bump_version();
  EXPECT_EQ(storage->version(), 2u);
}

struct WrapRecord {
  int calls = 0;
  void* context = nullptr;
  void* ptr = nullptr;
};

void record_delete(void* context, void* ptr) {
  auto* record = static_cast<WrapRecord*>(context);
  ++record->calls;
  record->context = context;
  record->ptr = ptr;
}

TEST(StorageWrap, WithADeleterOwnsTheMemory) {
  WrapRecord record;
  std::vector<float> buffer = {1, 2, 3, 4};
  {
    StoragePtr storage = Storage::wrap(DataPtr(buffer.data(), kCPU, &record_delete, &record), 16);
    EXPECT_EQ(storage->nbytes(), 16u);
    EXPECT_EQ(storage->device(), kCPU);
    EXPECT_EQ(storage->data(), buffer.data());
    EXPECT_TRUE(storage->data_ptr().owns_memory());
    Tensor t(IntrusivePtr<TensorImpl>::make(storage, DType::Float32, IntArrayRef{2, 2},
                                            IntArrayRef{2, 1}, 0));
    storage.reset();
    EXPECT_EQ(record.calls, 0);  // the tensor still holds the storage
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  }
  EXPECT_EQ(record.calls, 1);
  EXPECT_EQ(record.context, &record);
  EXPECT_EQ(record.ptr, buffer.data());
}

TEST(StorageWrap, WithoutADeleterLeavesTheMemoryAlone) {
  std::vector<float> buffer = {1, 2, 3, 4, 5, 6};
  {
    StoragePtr storage = Storage::wrap(DataPtr(buffer.data(), kCPU), 24);
    EXPECT_FALSE(storage->data_ptr().owns_memory());
    Tensor t(IntrusivePtr<TensorImpl>::make(storage, DType::Float32, IntArrayRef{3, 2},
                                            IntArrayRef{1, 3}, 0));
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
    t.select(1, 0).fill_(0);  // writes go straight into the wrapped buffer
  }
  EXPECT_EQ(buffer, (std::vector<float>{0, 0, 0, 4, 5, 6}));
}

}  // namespace
}  // namespace grove
