#include "core/storage.h"

#include <atomic>

#include "core/caching_allocator.h"

namespace grove {
namespace {

// Relaxed: a serial only orders storages made on one thread against reads of latest_serial()
// on that thread (the tracer's); across threads any order will do.
std::atomic<std::uint64_t> storages_made{0};

}  // namespace

Storage::Storage(DataPtr data_ptr, std::size_t nbytes)
    : data_ptr_(std::move(data_ptr)),
      nbytes_(nbytes),
      serial_(storages_made.fetch_add(1, std::memory_order_relaxed) + 1) {}

std::uint64_t Storage::latest_serial() {
  return storages_made.load(std::memory_order_relaxed);
}

StoragePtr Storage::allocate(std::size_t nbytes, Device device, Stream stream) {
  DataPtr data = allocator_for(device).allocate(nbytes, stream);
  return StoragePtr(new Storage(std::move(data), nbytes));
}

StoragePtr Storage::allocate(std::size_t nbytes, Device device) {
  return allocate(nbytes, device, current_stream(device));
}

StoragePtr Storage::wrap(DataPtr data_ptr, std::size_t nbytes) {
  return StoragePtr(new Storage(std::move(data_ptr), nbytes));
}

void Storage::set_data_ptr_without_freeing(DataPtr data_ptr) {
  data_ptr_.release_ownership();
  data_ptr_ = std::move(data_ptr);
}

void Storage::set_access_error(std::string message) {
  access_error_ = std::make_unique<std::string>(std::move(message));
}

void Storage::throw_access_error() const {
  GROVE_CHECK(false, *access_error_);
}

}  // namespace grove
