// Shared helpers for the graph-tree scenario tests: the fixture every scenario uses (it skips
// the CUDA build's tests when there is no device), a manager on a fresh thread, and inputs and
// reads on the device of the build (kTestDevice, test_device.h).
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <thread>

#include "graphs/tree/generation.h"
#include "graphs/tree/tree_manager.h"
#include "test_device.h"

namespace grove::graphs::testing {

// The fixture of every scenario (each file names it after its suite, e.g.
// `using TreeBasic = testing::TreeTest;`): on a CUDA build without a device, the test is
// skipped, not failed.
class TreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kTestDevice.is_cuda() && !cuda_is_available()) GTEST_SKIP() << "no CUDA device";
  }
};

// Debug checks on (pool accounting after every record and checkpoint), warnings kept quiet.
inline TreeOptions test_options() {
  TreeOptions options;
  options.debug_checks = true;
  options.print_warnings = false;
  return options;
}

// Runs `body` with a fresh manager on a fresh thread: generations and mark_step_begin() are
// per thread, so every scenario starts from a clean slate however the tests are run.
inline void with_manager(const std::function<void(TreeManager&)>& body,
                         TreeOptions options = test_options()) {
  std::exception_ptr error;
  std::thread thread([&] {
    try {
      TreeManager manager(kTestDevice, options);
      body(manager);
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) std::rethrow_exception(error);
}

// A float32 tensor of n copies of value on the test device.
inline Tensor filled(std::int64_t n, float value) {
  return full({n}, value, TensorOptions(DType::Float32).device(kTestDevice));
}

// The values on the host (a copy that waits for the tensor's device).
inline std::vector<float> values(const Tensor& tensor) {
  return tensor.to_vector<float>();
}

inline bool any_warning_contains(const TreeManager& manager, const std::string& text) {
  for (const std::string& warning : manager.warnings()) {
    if (warning.find(text) != std::string::npos) return true;
  }
  return false;
}

// The message of the grove::Error thrown by `body`, or "" if none was thrown.
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

}  // namespace grove::graphs::testing
