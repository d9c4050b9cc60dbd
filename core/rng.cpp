// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) and
// the generator's bookkeeping. See Note [Random numbers in captured graphs] in rng.h.
#include "core/rng.h"

#include <array>
#include <memory>
#include <vector>

#include "core/error.h"

namespace grove {
namespace {

constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;
constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

inline void mul_hi_lo(std::uint32_t a, std::uint32_t b, std::uint32_t& high, std::uint32_t& low) {
  std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  high = static_cast<std::uint32_t>(product >> 32);
  low = static_cast<std::uint32_t>(product);
}

}  // namespace

std::array<std::uint32_t, 4> philox4x32_10(std::uint64_t counter_low, std::uint64_t counter_high,
                                           std::uint64_t key) {
  std::array<std::uint32_t, 4> x = {
      static_cast<std::uint32_t>(counter_low), static_cast<std::uint32_t>(counter_low >> 32),
      static_cast<std::uint32_t>(counter_high), static_cast<std::uint32_t>(counter_high >> 32)};
  std::uint32_t k0 = static_cast<std::uint32_t>(key);
  std::uint32_t k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    std::uint32_t high0, low0, high1, low1;
    mul_hi_lo(kMultiplier0, x[0], high0, low0);
    mul_hi_lo(kMultiplier1, x[2], high1, low1);
    x = {high1 ^ x[1] ^ k0, low1, high0 ^ x[3] ^ k1, low0};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return x;
}

void Generator::manual_seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

std::uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return seed_;
}

std::uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return offset_;
}

void Generator::set_offset(std::uint64_t offset) {
  std::lock_guard<std::mutex> lock(mutex_);
  offset_ = offset;
}

namespace {

// This thread's captures in progress, one per generator (see the Note).
struct CaptureState {
  const Generator* generator;
  PhiloxCell* cell;
  std::uint64_t counters;  // reserved so far, relative to the cell
};
thread_local std::vector<CaptureState> captures_on_this_thread;

CaptureState* capture_of(const Generator* generator) {
  for (CaptureState& capture : captures_on_this_thread) {
    if (capture.generator == generator) return &capture;
  }
  return nullptr;
}

}  // namespace

PhiloxArgs Generator::reserve(std::uint64_t counters) {
  if (!captures_on_this_thread.empty()) [[unlikely]] {
    if (CaptureState* capture = capture_of(this)) {
      PhiloxArgs args{0, capture->counters, capture->cell};
      capture->counters += counters;
      return args;
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  PhiloxArgs args{seed_, offset_, nullptr};
  offset_ += counters;
  return args;
}

void Generator::begin_capture(PhiloxCell* cell) {
  GROVE_CHECK(capture_of(this) == nullptr,
              "a generator serves one capture per thread at a time, but this thread is already "
              "capturing another graph with it; end that capture first");
  captures_on_this_thread.push_back({this, cell, 0});
}

std::uint64_t Generator::end_capture() {
  CaptureState* capture = capture_of(this);
  if (capture == nullptr) return 0;
  const std::uint64_t counters = capture->counters;
  captures_on_this_thread.erase(captures_on_this_thread.begin() +
                                (capture - captures_on_this_thread.data()));
  return counters;
}

PhiloxCell Generator::reserve_replay(std::uint64_t counters) {
  std::lock_guard<std::mutex> lock(mutex_);
  const PhiloxCell values{seed_, offset_};
  offset_ += counters;
  return values;
}

namespace {
constexpr int kMaxDevicesPerType = 16;
std::array<std::array<std::unique_ptr<Generator>, kMaxDevicesPerType>, kNumDeviceTypes>&
generators() {
  static auto* table =
      new std::array<std::array<std::unique_ptr<Generator>, kMaxDevicesPerType>, kNumDeviceTypes>();
  return *table;
}
std::mutex generators_mutex;
std::uint64_t initial_seed = kDefaultSeed;  // for generators created after manual_seed
}  // namespace

Generator& default_generator(Device device) {
  GROVE_CHECK(device.index >= 0 && device.index < kMaxDevicesPerType, "device index ",
              static_cast<int>(device.index), " is out of range");
  std::lock_guard<std::mutex> lock(generators_mutex);
  auto& slot = generators()[static_cast<int>(device.type)][device.index];
  if (!slot) slot = std::make_unique<Generator>(initial_seed);
  return *slot;
}

void manual_seed(std::uint64_t seed) {
  std::lock_guard<std::mutex> lock(generators_mutex);
  initial_seed = seed;
  for (auto& per_type : generators()) {
    for (auto& slot : per_type) {
      if (slot) slot->manual_seed(seed);
    }
  }
}

}  // namespace grove
