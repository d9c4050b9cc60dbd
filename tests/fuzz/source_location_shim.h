// std::source_location for clang 14 with libstdc++ 12, forced into every file of the fuzz build
// (GROVE_FUZZ=ON; -include, see tests/fuzz/CMakeLists.txt) and nowhere else.
//
// libstdc++'s <source_location> defines the class only when the compiler has
// __builtin_source_location, which clang gained in version 15; clang 14 (Debian 12's clang) has
// the older builtins this uses instead. grove's graphs layer takes source locations as default
// arguments, so without this the fuzz targets that link it (checkpoint, args) do not compile.
// What it is not: a part of grove; g++ builds and newer clangs never see it.
#pragma once

#include <version>

#if defined(__clang__) && !__has_builtin(__builtin_source_location)
#include <cstdint>

namespace std {

struct source_location {
  static constexpr source_location current(
      const char* file = __builtin_FILE(), const char* function = __builtin_FUNCTION(),
      std::uint_least32_t line = __builtin_LINE(),
      std::uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location location;
    location.file_ = file;
    location.function_ = function;
    location.line_ = line;
    location.column_ = column;
    return location;
  }
  constexpr source_location() noexcept = default;
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr std::uint_least32_t line() const noexcept { return line_; }
  constexpr std::uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  std::uint_least32_t line_ = 0;
  std::uint_least32_t column_ = 0;
};

}  // namespace std
#endif
