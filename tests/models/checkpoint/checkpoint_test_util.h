// Helpers of the checkpoint tests (tests/models/checkpoint): the temporary directory and files of
// tests/temp_files.h (for files made by hand, malformed ones included), the bytes of a
// safetensors file built from a header string, and the message of an expected error.
//
// What it is not: a safetensors writer (these put whatever bytes a test needs in a file, and
// need not be atomic).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/temp_files.h"

namespace grove::checkpoint::testing {

using grove::testing::TempDir;

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  grove::testing::write_file(path, bytes);
}
inline std::string read_bytes(const std::filesystem::path& path) {
  return grove::testing::read_file(path);
}

// The 8-byte little-endian encoding of `value`.
inline std::string u64_bytes(std::uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<std::size_t>(i)] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// A safetensors file: the header's length, the header as given (no padding added), the data.
inline std::string safetensors_bytes(const std::string& header, const std::string& data) {
  return u64_bytes(header.size()) + header + data;
}

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

}  // namespace grove::checkpoint::testing
