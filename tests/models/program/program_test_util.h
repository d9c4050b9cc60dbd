// Helpers of the program output tests (tests/models/program): the temporary directory and file
// helpers of tests/temp_files.h, and the message of an expected grove::Error.
//
// What it is not: anything the library uses; these write files non-atomically on purpose (tests
// make damaged files).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/error.h"
#include "tests/temp_files.h"

namespace grove::program::testing {

using grove::testing::names_in;
using grove::testing::TempDir;
// Whole-file text (tests/temp_files.h).
inline void write_text(const std::filesystem::path& path, const std::string& text) {
  grove::testing::write_file(path, text);
}
inline std::string read_text(const std::filesystem::path& path) {
  return grove::testing::read_file(path);
}

// The message of the grove::Error that `action` throws, or "" (and a test failure) if none.
inline std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.message();
  }
  ADD_FAILURE() << "expected a grove::Error";
  return "";
}

}  // namespace grove::program::testing
