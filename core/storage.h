// Storage: a block of device memory shared by tensors (views share one storage).
//
// Ownership: a Storage is intrusively refcounted (StoragePtr = IntrusivePtr<Storage>). When the
// last strong handle dies its memory goes back to the allocator; the Storage object itself lives
// on while weak references (StorageWeakRef) exist, so they can still report where it lived.
//
// The version counter lives here, so every view of a storage sees every in-place change: see
// Note [Views, aliasing and version counters] in tensor_impl.h.
//
// Access error: set_access_error(msg) makes every later data access through any tensor on this
// storage throw grove::Error(msg). The graph-tree manager poisons outputs this way once a later
// replay may overwrite their memory. Not thread-safe: a storage is used by one thread at a time.
//
// Note [Memory lent by a graph pool]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The outputs of a graphed function (its warm-up's and every replay's) live in the graph-tree
// manager's private pool, and only until the generation that made them ends: the next step's
// replays write the same memory, and the manager then poisons the handles still alive
// (Note [Fresh output handles on every replay] in graphs/tree/tree_manager.h). The manager marks
// such a storage lent (mark_lent()). Whoever keeps a tensor longer than a step must copy it
// instead of adopting it: autograd's AccumulateGrad stores a lent gradient as a clone, and
// grad() returns clones of lent gradients, while adding a lent gradient into an existing
// grad() reads it at once and needs no copy. This is how a compiled backward hands its
// gradients to autograd without copying each of them on every step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/data_ptr.h"
#include "core/error.h"
#include "core/host_reads.h"
#include "core/intrusive_ptr.h"
#include "core/stream.h"

namespace grove {

class Storage;
using StoragePtr = IntrusivePtr<Storage>;

class Storage final : public IntrusiveTarget {
 public:
  // Allocates nbytes on `device` through that device's caching allocator, on `stream`.
  static StoragePtr allocate(std::size_t nbytes, Device device, Stream stream);
  static StoragePtr allocate(std::size_t nbytes, Device device);  // on the current stream
  // Wraps memory that is already there (owning it if data_ptr has a deleter).
  static StoragePtr wrap(DataPtr data_ptr, std::size_t nbytes);

  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return data_ptr_.device(); }

  // The data pointer for reading or writing. Throws if an access error is set. A raw pointer
  // taken during a trace is a host access (Note [Host reads during a trace]).
  void* data() const {
    if (access_error_) [[unlikely]]
      throw_access_error();
    if (detail::raw_access_watched) [[unlikely]]
      detail::report_raw_access(device());
    return data_ptr_.get();
  }
  // The pointer without the access check, for bookkeeping (allocator, weak refs, printing ids).
  void* unchecked_data() const { return data_ptr_.get(); }
  const DataPtr& data_ptr() const { return data_ptr_; }
  // Replaces the data pointer without freeing the old one (the allocator re-attaches ownership
  // of live storages this way when it restores a pool checkpoint).
  void set_data_ptr_without_freeing(DataPtr data_ptr);

  void set_access_error(std::string message);
  bool has_access_error() const { return access_error_ != nullptr; }
  const std::string* access_error() const { return access_error_.get(); }

  // Frees the memory now and removes the deleter, so nothing is freed again when the last
  // handle dies. Handles stay valid objects; touching their data is the caller's problem, so
  // pair this with set_access_error.
  void free_and_remove_deleter() { data_ptr_.free(); }

  // Version counter shared by all views: bumped by every in-place change.
  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

  // Storages are numbered in the order they are made, process-wide (1, 2, ...): a storage whose
  // serial is above latest_storage_serial() read at some moment was made after it. The tracer
  // of compile() tells a tensor the traced function made (a constant) from one it found
  // (a parameter) this way.
  std::uint64_t serial() const { return serial_; }
  static std::uint64_t latest_serial();

  // See Note [Memory lent by a graph pool]: true once a graph-tree manager handed this storage
  // out as an output; a tensor kept past the step must be a copy.
  bool is_lent() const { return lent_; }
  void mark_lent() { lent_ = true; }

 private:
  Storage(DataPtr data_ptr, std::size_t nbytes);
  void release_resources() override { data_ptr_.free(); }
  [[noreturn]] void throw_access_error() const;

  DataPtr data_ptr_;
  std::size_t nbytes_;
  std::uint64_t version_ = 0;
  std::uint64_t serial_;
  bool lent_ = false;
  std::unique_ptr<std::string> access_error_;
};

// A weak reference to a storage: does not keep its memory alive.
class StorageWeakRef {
 public:
  StorageWeakRef() = default;
  explicit StorageWeakRef(const StoragePtr& storage)
      : ref_(storage), data_ptr_(storage ? storage->unchecked_data() : nullptr) {}

  bool expired() const { return ref_.expired(); }
  std::uint32_t use_count() const { return ref_.use_count(); }
  // Where the storage's data was when this reference was made, valid even after its death.
  void* data_ptr() const { return data_ptr_; }
  StoragePtr lock() const { return ref_.lock(); }
  // True if this refers to that very storage object (alive or not).
  bool refers_to(const Storage* storage) const { return ref_.unsafe_get() == storage; }

 private:
  WeakIntrusivePtr<Storage> ref_;
  void* data_ptr_ = nullptr;
};

}  // namespace grove
