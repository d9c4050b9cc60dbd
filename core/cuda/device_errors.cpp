// The host side of Note [Device-side error reports] (device_errors.h): one record per device in
// mapped pinned memory, handed to kernels, read and cleared after every synchronisation.
#include "core/cuda/device_errors.h"

#include <cuda_runtime_api.h>

#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "core/cuda/cuda_device.h"
#include "core/error.h"

namespace grove::cuda_backend {
namespace {

struct DeviceRecords {
  std::mutex mutex;  // taken only to allocate
  // Written once (under the mutex), never freed: kernels captured into graphs keep the address.
  std::array<std::atomic<DeviceErrorRecord*>, kMaxCudaDevices> records{};
};

DeviceRecords& all_records() {
  static auto* records = new DeviceRecords();  // never destroyed, like the records
  return *records;
}

DeviceErrorRecord* record_of(Device device) {
  GROVE_INTERNAL_ASSERT(device.is_cuda() && device.index < kMaxCudaDevices,
                        "device error records exist for CUDA devices only, not ", device);
  DeviceRecords& all = all_records();
  std::atomic<DeviceErrorRecord*>& slot = all.records[static_cast<std::size_t>(device.index)];
  DeviceErrorRecord* record = slot.load(std::memory_order_acquire);
  if (record != nullptr) return record;
  const std::lock_guard<std::mutex> lock(all.mutex);
  record = slot.load(std::memory_order_relaxed);
  if (record != nullptr) return record;
  check_device(device, "device error reports");
  const DeviceGuard guard(device);
  const RelaxedCaptureModeGuard relaxed;  // in case a capture runs on this thread
  void* memory = nullptr;
  GROVE_CUDA_CHECK(cudaHostAlloc(&memory, sizeof(DeviceErrorRecord),
                                 cudaHostAllocMapped | cudaHostAllocPortable));
  std::memset(memory, 0, sizeof(DeviceErrorRecord));
  record = static_cast<DeviceErrorRecord*>(memory);
  slot.store(record, std::memory_order_release);
  return record;
}

// "0 <= index < {bound}" with the bound filled in.
std::string expected_text(const char* pattern, std::int64_t bound) {
  std::string text = pattern != nullptr ? pattern : "a value in range";
  const std::string placeholder = "{bound}";
  const std::size_t at = text.find(placeholder);
  if (at != std::string::npos) text.replace(at, placeholder.size(), std::to_string(bound));
  return text;
}

}  // namespace

DeviceErrorSite device_error_site(Device device, const char* op, const char* what,
                                  const char* expected) {
  // Mapped pinned memory under unified addressing (every 64-bit platform CUDA supports): the
  // host address is also the device address.
  return DeviceErrorSite{record_of(device), op, what, expected};
}

void prepare_device_errors(Device device) {
  (void)record_of(device);
}

void check_device_errors(Device device, const char* at) {
  if (!device.is_cuda() || device.index >= kMaxCudaDevices) return;
  DeviceErrorRecord* record =
      all_records().records[static_cast<std::size_t>(device.index)].load(std::memory_order_acquire);
  if (record == nullptr) return;  // no checking kernel has run on this device
  std::atomic_ref<unsigned int> count_ref(record->count);
  if (count_ref.load(std::memory_order_relaxed) == 0) return;  // the common case: no report
  static std::mutex mutex;  // one checking thread at a time reads and clears
  const std::lock_guard<std::mutex> lock(mutex);
  std::atomic_ref<unsigned int> published(record->published);
  // Not yet published: a kernel still running is writing the first report; a later check reads it.
  if (published.load(std::memory_order_acquire) == 0) return;
  // Kernels wrote the details before `published`; volatile keeps the compiler from caching them.
  const volatile DeviceErrorRecord* shared = record;
  const char* op = shared->op;
  const char* what = shared->what;
  const char* expected = shared->expected;
  const std::int64_t value = shared->value;
  const std::int64_t position = shared->position;
  const std::int64_t bound = shared->bound;
  published.store(0, std::memory_order_release);  // before count: Note [Device-side error reports]
  const unsigned int count = count_ref.exchange(0, std::memory_order_acq_rel);
  std::string message =
      str(op != nullptr ? op : "a kernel", ": ", what != nullptr ? what : "value", " ", value,
          " at position ", position, " is out of range: expected ", expected_text(expected, bound),
          ". A CUDA kernel found it and did not use it (the op's ",
          "result holds NaN, or 0 for integer results, where it would have gone); grove reports ",
          "it at the first synchronisation after the kernel ran (here: ", at, "), so the op may ",
          "be several calls back.");
  if (count > 1) {
    message += str(" ", count - 1, " more report", count > 2 ? "s" : "",
                   " came in since the last check; only the first is described.");
  }
  throw DeviceCheckError(std::move(message), __FILE__, __LINE__);
}

}  // namespace grove::cuda_backend
