#include "core/device.h"

#include <charconv>

#include "core/error.h"

namespace grove {

void Device::throw_bad_index(int device_index) {
  GROVE_THROW(Error, "expected a device index in [0, 127], but got ", device_index,
              "; cuda(N) takes the number of a visible GPU (cuda_device_count() says how many)");
}

Device Device::parse(std::string_view text) {
  if (text == "cpu") return kCPU;
  if (text == "cuda") return cuda(0);
  constexpr std::string_view prefix = "cuda:";
  if (text.starts_with(prefix)) {
    std::string_view digits = text.substr(prefix.size());
    int index = -1;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (error == std::errc() && end == digits.data() + digits.size() && index >= 0 && index < 128) {
      return cuda(index);
    }
  }
  GROVE_CHECK(false, "expected a device such as 'cpu', 'cuda' or 'cuda:1', but got '", text, "'");
  return kCPU;  // unreachable
}

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& out, Device device) {
  return out << device.to_string();
}

}  // namespace grove
