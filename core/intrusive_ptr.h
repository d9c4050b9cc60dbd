// Intrusive reference counting: the object carries its own strong and weak counts, so a handle is
// one pointer, copying it is one atomic increment, and a raw pointer can be turned back into a
// handle (the allocator and the graph manager rely on this).
//
// Rules (the same as PyTorch's c10::intrusive_ptr, written afresh):
// - weak_count counts weak handles plus one for "any strong handle exists".
// - When strong_count drops to 0, release_resources() runs (Storage frees its memory there), and
//   the object is deleted once weak_count also drops to 0.
// - Counts are atomic: handles may be copied and dropped on different threads. The objects they
//   point to are not otherwise thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace grove {

class IntrusiveTarget {
 public:
  IntrusiveTarget() = default;
  IntrusiveTarget(const IntrusiveTarget&) = delete;
  IntrusiveTarget& operator=(const IntrusiveTarget&) = delete;

  std::uint32_t strong_count() const { return strong_.load(std::memory_order_acquire); }
  // Weak handles only (without the +1 held on behalf of strong handles).
  std::uint32_t weak_handle_count() const {
    return weak_.load(std::memory_order_acquire) - (strong_count() > 0 ? 1 : 0);
  }

 protected:
  virtual ~IntrusiveTarget() = default;
  // Called once, when the last strong handle goes away; the object may still be weakly held.
  virtual void release_resources() {}

 private:
  template <typename T>
  friend class IntrusivePtr;
  template <typename T>
  friend class WeakIntrusivePtr;

  void retain_strong() { strong_.fetch_add(1, std::memory_order_relaxed); }
  void release_strong() {
    if (strong_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      release_resources();
      release_weak();
    }
  }
  void retain_weak() { weak_.fetch_add(1, std::memory_order_relaxed); }
  void release_weak() {
    if (weak_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  // Strong handle from a weak one: succeeds only while some strong handle is alive.
  bool try_retain_strong() {
    std::uint32_t count = strong_.load(std::memory_order_relaxed);
    while (count != 0) {
      if (strong_.compare_exchange_weak(count, count + 1, std::memory_order_acq_rel)) return true;
    }
    return false;
  }

  std::atomic<std::uint32_t> strong_{0};
  std::atomic<std::uint32_t> weak_{1};
};

template <typename T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  IntrusivePtr(std::nullptr_t) {}  // NOLINT
  // Takes a new object (strong count 0) or adds a handle to a live one.
  explicit IntrusivePtr(T* target) : target_(target) {
    if (target_ != nullptr) target_->retain_strong();
  }
  template <typename... Args>
  static IntrusivePtr make(Args&&... args) {
    return IntrusivePtr(new T(std::forward<Args>(args)...));
  }

  IntrusivePtr(const IntrusivePtr& other) : IntrusivePtr(other.target_) {}
  // A handle to a derived class converts to a handle to its base.
  template <typename U>
  requires std::is_convertible_v<U*, T*> IntrusivePtr(
      IntrusivePtr<U> other)  // NOLINT: implicit, like a pointer conversion
      : target_(std::exchange(other.target_, nullptr)) {}
  IntrusivePtr(IntrusivePtr&& other) noexcept : target_(std::exchange(other.target_, nullptr)) {}
  IntrusivePtr& operator=(IntrusivePtr other) noexcept {
    std::swap(target_, other.target_);
    return *this;
  }
  ~IntrusivePtr() { reset(); }

  void reset() {
    if (target_ != nullptr) std::exchange(target_, nullptr)->release_strong();
  }
  T* get() const { return target_; }
  T* operator->() const { return target_; }
  T& operator*() const { return *target_; }
  explicit operator bool() const { return target_ != nullptr; }
  std::uint32_t use_count() const { return target_ ? target_->strong_count() : 0; }
  friend bool operator==(const IntrusivePtr& a, const IntrusivePtr& b) {
    return a.target_ == b.target_;
  }

 private:
  template <typename U>
  friend class WeakIntrusivePtr;
  template <typename U>
  friend class IntrusivePtr;
  struct AdoptTag {};
  IntrusivePtr(T* target, AdoptTag) : target_(target) {}  // already retained
  T* target_ = nullptr;
};

template <typename T>
class WeakIntrusivePtr {
 public:
  WeakIntrusivePtr() = default;
  explicit WeakIntrusivePtr(const IntrusivePtr<T>& strong) : target_(strong.get()) {
    if (target_ != nullptr) target_->retain_weak();
  }
  WeakIntrusivePtr(const WeakIntrusivePtr& other) : target_(other.target_) {
    if (target_ != nullptr) target_->retain_weak();
  }
  WeakIntrusivePtr(WeakIntrusivePtr&& other) noexcept
      : target_(std::exchange(other.target_, nullptr)) {}
  WeakIntrusivePtr& operator=(WeakIntrusivePtr other) noexcept {
    std::swap(target_, other.target_);
    return *this;
  }
  ~WeakIntrusivePtr() { reset(); }

  void reset() {
    if (target_ != nullptr) std::exchange(target_, nullptr)->release_weak();
  }
  bool expired() const { return target_ == nullptr || target_->strong_count() == 0; }
  std::uint32_t use_count() const { return target_ ? target_->strong_count() : 0; }
  IntrusivePtr<T> lock() const {
    if (target_ != nullptr && target_->try_retain_strong()) {
      return IntrusivePtr<T>(target_, typename IntrusivePtr<T>::AdoptTag{});
    }
    return IntrusivePtr<T>();
  }
  // The object, alive or not (never null while this handle is set). Only for reading fields
  // that stay valid after release_resources(), such as a storage's remembered data pointer.
  const T* unsafe_get() const { return target_; }

 private:
  T* target_ = nullptr;
};

}  // namespace grove
