// What `grove info` says about the machine: the CPU, and with the CUDA backend the devices
// (name, compute capability, memory) and the CUDA libraries' versions. Without the backend
// (device_info_none.cpp) the CUDA lists say so.
#pragma once

#include <string>
#include <vector>

namespace grove::program {

std::string cpu_description();                  // "Intel Xeon ..., 16 threads, 125.8 GiB"
std::vector<std::string> cuda_device_lines();   // one per device
std::vector<std::string> cuda_library_lines();  // CUDA runtime and driver, cuBLAS, cuDNN
// True if CUDA device `index` has bfloat16 tensor cores (compute capability 8.0 or newer:
// Ampere, Hopper and later); false without the CUDA backend or the device.
bool cuda_has_bf16_tensor_cores(int index);

}  // namespace grove::program
