// Helpers of the data tests (tests/models/data): a temporary directory that removes itself,
// writers of raw and gzipped files (zlib's gzopen/gzwrite), IDX bytes, and the message of an
// expected error.
//
// What it is not: a public IDX writer (grove has none; these write whatever bytes a test needs,
// malformed ones included, and need not be atomic).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"

namespace grove::data::testing {

// A fresh directory under the system's temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("grove_data_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
             (test != nullptr ? test->name() : "none"));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline void write_bytes(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  }
  ASSERT_EQ(std::fclose(file), 0);
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
  std::vector<std::uint8_t> bytes(std::filesystem::file_size(path));
  std::FILE* file = std::fopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr) << path;
  if (file == nullptr) return {};
  EXPECT_EQ(std::fread(bytes.data(), 1, bytes.size(), file), bytes.size());
  std::fclose(file);
  return bytes;
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
