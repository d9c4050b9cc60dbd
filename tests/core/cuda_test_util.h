// Helpers shared by the CUDA tests of core (tests/core/cuda_*_test.cpp): the skip without a
// device, the device under test, and the message of an expected error.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/device.h"
#include "core/error.h"

// Every GPU test starts with this: without a device the test is skipped, not failed.
#define SKIP_WITHOUT_GPU() \
  if (!::grove::cuda_is_available()) GTEST_SKIP() << "no CUDA device"

namespace grove::testing {

inline const Device kGpu = cuda(0);

// The message of the grove::Error that f throws, or "(no error)".
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& error) {
    return error.what();
  }
  return "(no error)";
}

}  // namespace grove::testing
