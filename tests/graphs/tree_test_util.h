// Shared helpers for the graph-tree scenario tests.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <thread>

#include "graphs/generation.h"
#include "graphs/tree_manager.h"
#include "test_ops.h"

namespace grove::graphs::testing {

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
      TreeManager manager(kCPU, options);
      body(manager);
    } catch (...) {
      error = std::current_exception();
    }
  });
  thread.join();
  if (error) std::rethrow_exception(error);
}

inline Tensor filled(std::int64_t n, float value) {
  return full({n}, value);
}

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
