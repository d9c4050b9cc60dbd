// cuda_device_lines() and cuda_library_lines() with the CUDA backend: asked of the CUDA runtime,
// cuBLAS and cuDNN.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>

#include "models/program/device_info.h"

namespace grove::program {
namespace {

std::string version_text(int version, int major_divisor, int minor_divisor, int minor_modulo) {
  return std::to_string(version / major_divisor) + "." +
         std::to_string((version / minor_divisor) % minor_modulo);
}

}  // namespace

std::vector<std::string> cuda_device_lines() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the error of a machine without a device
    return {"cuda: no device visible"};
  }
  std::vector<std::string> lines;
  for (int index = 0; index < count; ++index) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) continue;
    char memory[32];
    std::snprintf(memory, sizeof(memory), "%.1f GiB",
                  static_cast<double>(properties.totalGlobalMem) / (1 << 30));
    lines.push_back("cuda:" + std::to_string(index) + ": " + properties.name + ", sm_" +
                    std::to_string(properties.major) + std::to_string(properties.minor) + ", " +
                    memory + ", bf16 tensor cores: " + (properties.major >= 8 ? "yes" : "no"));
  }
  return lines;
}

bool cuda_has_bf16_tensor_cores(int index) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) {
    cudaGetLastError();  // clear the error
    return false;
  }
  return properties.major >= 8;
}

std::vector<std::string> cuda_library_lines() {
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  int cublas = 0;
  cublasGetProperty(MAJOR_VERSION, &cublas);
  int cublas_minor = 0;
  cublasGetProperty(MINOR_VERSION, &cublas_minor);
  const std::size_t cudnn = cudnnGetVersion();
  return {"CUDA runtime " + version_text(runtime, 1000, 10, 100) + ", driver " +
              (driver > 0 ? version_text(driver, 1000, 10, 100) : std::string("none")),
          "cuBLAS " + std::to_string(cublas) + "." + std::to_string(cublas_minor) + ", cuDNN " +
              version_text(static_cast<int>(cudnn), 10000, 100, 100)};
}

}  // namespace grove::program
