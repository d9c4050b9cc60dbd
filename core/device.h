// Device: where a tensor's memory lives and where its kernels run: the CPU, or CUDA device N.
// A small value type; parse("cuda:1") reads the spelling users type.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

namespace grove {

enum class DeviceType : std::uint8_t { CPU, CUDA };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  std::int8_t index = 0;  // always 0 for the CPU

  constexpr Device() = default;
  // An index outside [0, 127] is an error: stored in 8 bits it would become another device
  // (cuda(256) would be cuda:0).
  constexpr Device(DeviceType device_type, int device_index = 0)  // NOLINT: implicit on purpose
      : type(device_type), index(checked_index(device_index)) {}

  // Parses "cpu", "cuda", "cuda:N". Throws grove::Error on anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string to_string() const;

  friend constexpr bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
  }

 private:
  [[noreturn]] static void throw_bad_index(int device_index);
  static constexpr std::int8_t checked_index(int device_index) {
    if (device_index < 0 || device_index > 127) throw_bad_index(device_index);
    return static_cast<std::int8_t>(device_index);
  }
};

inline constexpr Device kCPU{DeviceType::CPU, 0};
inline Device cuda(int index = 0) {
  return Device(DeviceType::CUDA, index);
}

std::ostream& operator<<(std::ostream& out, Device device);

// How many CUDA devices this process can use: 0 without a GPU, without a driver, or in a build
// without the CUDA backend (GROVE_CUDA=OFF). Asks the CUDA runtime once; never throws.
int cuda_device_count();
bool cuda_is_available();  // cuda_device_count() > 0

}  // namespace grove
