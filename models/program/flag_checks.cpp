// The program's flag checks. See flag_checks.h.
#include "models/program/flag_checks.h"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/error.h"

namespace grove::program {
namespace {

// Whether `text` is a whole number in [min, max], read without wrapping or clamping.
bool whole_number_in(const std::string& text, std::int64_t min, std::uint64_t max) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (text.empty()) return false;
  if (text[0] == '-') {
    std::int64_t value = 0;
    const auto [stop, error] = std::from_chars(begin, end, value);
    return error == std::errc() && stop == end && value >= min;
  }
  std::uint64_t value = 0;
  const auto [stop, error] = std::from_chars(begin, end, value);
  return error == std::errc() && stop == end && value <= max &&
         (min <= 0 || value >= static_cast<std::uint64_t>(min));
}

}  // namespace

CLI::Validator whole_number(std::int64_t min, std::uint64_t max) {
  const std::string description =
      "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, description](std::string& text) -> std::string {
        if (whole_number_in(text, min, max)) return {};
        return "expected " + description + ", got " + text;
      },
      "INT", "whole_number");
}

CLI::Validator count_flag() {
  return whole_number(0, std::numeric_limits<std::int64_t>::max());
}

CLI::Validator seed_flag() {
  return whole_number(0, std::numeric_limits<std::uint64_t>::max());
}

void prepare_output_file(const std::string& path, const char* flag) {
  namespace fs = std::filesystem;
  const fs::path file(path);
  std::error_code error;
  GROVE_CHECK(!fs::is_directory(file, error), flag, " ", path,
              ": expected a file to write, but it is a folder; name a file in it");
  const fs::path folder = file.parent_path().empty() ? fs::path(".") : file.parent_path();
  if (!fs::exists(folder, error)) {
    fs::create_directories(folder, error);
    GROVE_CHECK(!error, flag, " ", path, ": cannot make the folder ", folder.string(), " (",
                error.message(), "); choose a path in a folder you can write to");
  }
  // The run writes the file at its end (and the checkpoint also on Ctrl-C and every N steps):
  // try the folder now, with a file of our own that is removed at once.
  const fs::path probe = folder / (".grove-write-test-" + std::to_string(::getpid()));
  std::FILE* handle = std::fopen(probe.c_str(), "wb");
  const int reason = errno;
  GROVE_CHECK(handle != nullptr, flag, " ", path, ": cannot write to the folder ", folder.string(),
              " (", std::strerror(reason), "); choose a path in a folder you can write to");
  std::fclose(handle);
  fs::remove(probe, error);
}

}  // namespace grove::program
