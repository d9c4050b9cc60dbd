// DataPtr: a pointer to device memory plus how to give it back.
//
// The deleter is a plain function pointer and a context (for the caching allocator: the
// allocator itself), so a DataPtr is three words and moving it allocates nothing. A DataPtr with
// no deleter does not own its memory (graph outputs handed out by a replay are like that).
#pragma once

#include <utility>

#include "core/device.h"

namespace grove {

using DeleterFn = void (*)(void* context, void* ptr);

class DataPtr {
 public:
  DataPtr() = default;
  DataPtr(void* ptr, Device device, DeleterFn deleter = nullptr, void* context = nullptr)
      : ptr_(ptr), deleter_(deleter), context_(context), device_(device) {}
  DataPtr(const DataPtr&) = delete;
  DataPtr& operator=(const DataPtr&) = delete;
  DataPtr(DataPtr&& other) noexcept { *this = std::move(other); }
  DataPtr& operator=(DataPtr&& other) noexcept {
    if (this != &other) {
      free();
      ptr_ = other.ptr_;
      deleter_ = std::exchange(other.deleter_, nullptr);
      context_ = other.context_;
      device_ = other.device_;
    }
    return *this;
  }
  ~DataPtr() { free(); }

  void* get() const { return ptr_; }
  Device device() const { return device_; }
  bool owns_memory() const { return deleter_ != nullptr; }
  DeleterFn deleter() const { return deleter_; }
  void* context() const { return context_; }

  // Gives the memory back now (if owned). The pointer value is kept so that it can still be
  // reported (weak references remember where a dead storage lived).
  void free() {
    if (deleter_ != nullptr) std::exchange(deleter_, nullptr)(context_, ptr_);
  }
  // Forgets the deleter without freeing: somebody else now owns the memory.
  void release_ownership() { deleter_ = nullptr; }

 private:
  void* ptr_ = nullptr;
  DeleterFn deleter_ = nullptr;
  void* context_ = nullptr;
  Device device_;
};

}  // namespace grove
