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
  constexpr Device(DeviceType device_type, int device_index = 0)  // NOLINT: implicit on purpose
      : type(device_type), index(static_cast<std::int8_t>(device_index)) {}

  // Parses "cpu", "cuda", "cuda:N". Throws grove::Error on anything else.
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string to_string() const;

  friend constexpr bool operator==(Device a, Device b) {
    return a.type == b.type && a.index == b.index;
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
