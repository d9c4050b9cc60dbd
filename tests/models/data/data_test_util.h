// Helpers of the data tests (tests/models/data): the temporary directory and files of
// tests/temp_files.h, gzipped files (zlib's gzopen/gzwrite), IDX bytes, and the message of an
// expected error.
//
// What it is not: a public IDX writer (grove has none; these write whatever bytes a test needs,
// malformed ones included, and need not be atomic).
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "tests/temp_files.h"

namespace grove::data::testing {

using grove::testing::TempDir;

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  grove::testing::write_file(path, bytes);
}

// Writes `bytes` as one gzip member; with append, adds a member after those already there.
inline void write_gzip(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes,
                       bool append = false) {
  gzFile file = gzopen(path.c_str(), append ? "ab" : "wb");
  ASSERT_NE(file, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(file), Z_OK);
}

inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& path) {
  return grove::testing::read_file_bytes(path);
}

// An IDX file's bytes: 00 00 type dims, big-endian uint32 sizes, then `data` as given (which
// need not match the sizes: tests make malformed files this way).
inline std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& sizes,
                                           const std::vector<std::uint8_t>& data,
                                           std::uint8_t type = 0x08) {
  std::vector<std::uint8_t> bytes{0, 0, type, static_cast<std::uint8_t>(sizes.size())};
  for (std::uint32_t size : sizes) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      bytes.push_back(static_cast<std::uint8_t>(size >> shift));
    }
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// 0, 1, ..., count - 1 modulo 256.
inline std::vector<std::uint8_t> ramp_bytes(std::size_t count) {
  std::vector<std::uint8_t> bytes(count);
  for (std::size_t i = 0; i < count; ++i) bytes[i] = static_cast<std::uint8_t>(i % 256);
  return bytes;
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

}  // namespace grove::data::testing
