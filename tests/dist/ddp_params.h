// What the DDP tests (tests/dist/dist_test.cpp on the CPU, multigpu_test.cpp over NCCL) share:
// a fresh folder for a job's files, the parameters dist_worker's `ddp` scenario writes, and how
// far two runs' parameters are apart.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace grove::dist::testing {

// An empty folder under the system's temporary one, named for this process.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("grove_dist_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The float32 values of a params_w<world>_<mode>.bin file, in parameter order.
inline std::vector<float> read_floats(const std::filesystem::path& path) {
  const std::string bytes = read_text(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// The largest |a - b| / (1e-3 + |a|) over two runs' parameters (of equal count).
inline double worst_relative_difference(const std::vector<float>& one,
                                        const std::vector<float>& two) {
  double worst = 0;
  for (std::size_t i = 0; i < one.size() && i < two.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(one[i] - two[i])) /
                                (1e-3 + std::abs(static_cast<double>(one[i]))));
  }
  return worst;
}

}  // namespace grove::dist::testing
