// cuda_device_lines() and cuda_library_lines() in a build without the CUDA backend.
#include "models/program/device_info.h"

namespace grove::program {

std::vector<std::string> cuda_device_lines() {
  return {"cuda: not built (configure with -DGROVE_CUDA=ON and the CUDA toolkit and cuDNN)"};
}

std::vector<std::string> cuda_library_lines() {
  return {};
}

bool cuda_has_bf16_tensor_cores(int /*index*/) {
  return false;
}

}  // namespace grove::program
