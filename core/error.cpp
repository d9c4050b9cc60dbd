// Error construction: appends the source location to the message.
#include "core/error.h"

#include <cstring>

namespace grove {
namespace {

// Strips the directories from __FILE__ so messages do not depend on where grove was built.
const char* short_file(const char* file) {
  const char* slash = std::strrchr(file, '/');
  return slash == nullptr ? file : slash + 1;
}

std::string with_location(const std::string& message, const char* file, int line) {
  return message + " (" + short_file(file) + ":" + std::to_string(line) + ")";
}

}  // namespace

Error::Error(std::string message, const char* file, int line)
    : std::runtime_error(with_location(message, file, line)), message_(std::move(message)) {}

namespace detail {

void throw_error(std::string message, const char* file, int line) {
  throw Error(std::move(message), file, line);
}

void throw_internal(const char* condition, std::string message, const char* file, int line) {
  throw Error(str("internal error in grove (a bug, please report it): ", condition, " failed",
                  message.empty() ? "" : ": ", message),
              file, line);
}

}  // namespace detail
}  // namespace grove
