// Devices as the program's flags spell them: cpu, cuda, cuda:N. A device that is not there is
// the user's mistake (an error naming the devices there are), never a crash later in a kernel.
#include <charconv>

#include "core/error.h"
#include "models/program/commands.h"
#include "models/program/device_info.h"

namespace grove::program {

Device parse_device(const std::string& text) {
  if (text == "cpu") return kCPU;
  int index = 0;
  if (text != "cuda") {
    const bool digits = text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() < 9 &&
                        text.find_first_not_of("0123456789", 5) == std::string::npos;
    GROVE_CHECK(digits, "--device: expected cpu, cuda or cuda:N, got '", text, "'");
    std::from_chars(text.data() + 5, text.data() + text.size(), index);
  }
  GROVE_CHECK(cuda_is_available(), "--device ", text,
              ": this machine has no CUDA device (or grove was built without CUDA); use "
              "--device cpu");
  GROVE_CHECK(index < cuda_device_count(), "--device ", text, ": there are ", cuda_device_count(),
              " CUDA devices (cuda:0 to cuda:", cuda_device_count() - 1, ")");
  return cuda(index);
}

std::string default_device_text() {
  return cuda_is_available() ? "cuda" : "cpu";
}

train::Precision default_precision(Device device) {
  return device.is_cuda() && cuda_has_bf16_tensor_cores(device.index) ? train::Precision::BFloat16
                                                                      : train::Precision::Float32;
}

std::string device_text(Device device) {
  return device.to_string();
}

}  // namespace grove::program
