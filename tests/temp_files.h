// Files for tests: a temporary directory that removes itself, and whole-file writes and reads.
// Shared by the test suites that make files (tests/models/data, checkpoint, program), each of
// which adds its own format's bytes (IDX, safetensors) in its *_test_util.h.
//
// What it is not: anything the library uses; these write files non-atomically on purpose (tests
// make damaged and malformed files).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace grove::testing {

// The names of the entries of a folder, sorted.
inline std::set<std::string> names_in(const std::filesystem::path& folder) {
  std::set<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// A fresh directory under the system's temporary directory, named after the process and the
// running test, removed with its contents.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("grove_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
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

  // The names of the directory's entries, sorted (temporary files included).
  std::vector<std::string> entries() const {
    const std::set<std::string> names = names_in(path_);
    return {names.begin(), names.end()};
  }

 private:
  std::filesystem::path path_;
};

// Writes `bytes` as the whole file (replacing it); a failure fails the test.
inline void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  if (!bytes.empty()) {
    ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), file), bytes.size());
  }
  ASSERT_EQ(std::fclose(file), 0);
}
inline void write_file(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  write_file(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// The whole file; a missing file fails the test and reads as empty.
inline std::string read_file(const std::filesystem::path& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  EXPECT_FALSE(error) << path << ": " << error.message();
  if (error) return {};
  std::string bytes(size, '\0');
  std::FILE* file = std::fopen(path.c_str(), "rb");
  EXPECT_NE(file, nullptr) << path;
  if (file == nullptr) return {};
  EXPECT_EQ(std::fread(bytes.data(), 1, bytes.size(), file), bytes.size());
  std::fclose(file);
  return bytes;
}
inline std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  return {bytes.begin(), bytes.end()};
}

}  // namespace grove::testing
