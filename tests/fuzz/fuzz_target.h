// What the fuzz targets (tests/fuzz/*_fuzz.cpp) share: the rule for which outcomes of an input are
// expected, checks of a reader's promises, and a scratch file for readers that take a path.
//
// The rule: a grove::Error is the expected answer to bad input. Anything else is a finding: an
// internal error (GROVE_INTERNAL_ASSERT, a grove bug), a violated promise (FUZZ_CHECK), another
// exception (it escapes the target and ends the process), a crash, a sanitizer report, a hang or
// an allocation far beyond the input's size (libFuzzer's -rss_limit_mb and -malloc_limit_mb).
//
// What it is not: a test framework. A target is one function, LLVMFuzzerTestOneInput, linked
// either with libFuzzer (GROVE_FUZZ=ON, clang) or with replay_main.cpp (every build; CTest replays
// the saved corpus and crash inputs with it).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include "core/error.h"

// Stops the process (a finding) unless `cond` holds: for the promises a reader's header makes.
#define FUZZ_CHECK(cond)                                                                    \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "fuzz: %s:%d: promise broken: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                         \
    }                                                                                       \
  } while (false)

namespace grove::fuzz {

// Runs `body`, swallowing a grove::Error (the expected refusal of bad input) unless it is an
// internal error, which stops the process. Other exceptions propagate and end the process.
template <typename Body>
void expect_only_grove_errors(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    // GROVE_INTERNAL_ASSERT's messages start so (core/error.cpp); others may quote the input.
    if (error.message().rfind("internal error in grove", 0) == 0) {
      std::fprintf(stderr, "fuzz: an internal error (a grove bug): %s\n", error.what());
      std::abort();
    }
  }
}

// A file (or directory) in the temporary directory ($TMPDIR, else /tmp), named for the target and
// this process so that parallel fuzzing jobs do not share it; removed when the object dies.
// Not thread-safe; each target keeps one as a function-local static.
class ScratchPath {
 public:
  explicit ScratchPath(std::string_view name)
      : path_(std::filesystem::temp_directory_path() /
              ("grove-fuzz-" + std::string(name) + "-" + std::to_string(::getpid()))) {}
  ~ScratchPath() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchPath(const ScratchPath&) = delete;
  ScratchPath& operator=(const ScratchPath&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Replaces the file at `path` with the given bytes.
inline void write_file(const std::filesystem::path& path, const std::uint8_t* data,
                       std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  FUZZ_CHECK(out.good());  // the scratch file must be writable, or the run tests nothing
}

}  // namespace grove::fuzz
