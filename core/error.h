// Errors: how grove reports what went wrong.
//
// - GROVE_CHECK(cond, parts...) is for anything a user can cause (bad shapes, wrong dtypes, misuse
//   of an API). It throws grove::Error whose message joins the parts (any type with operator<<),
//   followed by the file and line. Messages say what was expected, what was found, and a hint.
// - GROVE_INTERNAL_ASSERT(cond, parts...) is for grove's own invariants: if it fires, grove has
//   a bug, and the message says so.
// - OutOfMemoryError is thrown by allocators after they have freed what they could and retried.
// - DeviceCheckError is thrown at a synchronisation when a kernel found a bad value, such as an
//   index out of range (Note [Device-side error reports] in core/cuda/device_errors.h).
//
// Nothing here allocates unless an error is actually thrown.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace grove {

// The one exception type for user-facing errors. what() holds the full message including the
// source location; message() holds the text without it.
class Error : public std::runtime_error {
 public:
  Error(std::string message, const char* file, int line);
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
};

// Thrown when an allocator cannot satisfy a request even after freeing cached memory.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

// Thrown at a synchronisation when a kernel launched earlier found a bad value on the device.
class DeviceCheckError : public Error {
 public:
  using Error::Error;
};

namespace detail {

template <typename... Parts>
std::string join_message(const Parts&... parts) {
  if constexpr (sizeof...(Parts) == 0) {
    return std::string();
  } else {
    std::ostringstream out;
    (out << ... << parts);
    return out.str();
  }
}

[[noreturn]] void throw_error(std::string message, const char* file, int line);
[[noreturn]] void throw_internal(const char* condition, std::string message, const char* file,
                                 int line);

}  // namespace detail

// Joins any streamable values into one string: str("expected ", 3, " dims").
template <typename... Parts>
std::string str(const Parts&... parts) {
  return detail::join_message(parts...);
}

}  // namespace grove

#define GROVE_CHECK(cond, ...)                                                           \
  do {                                                                                   \
    if (!(cond)) [[unlikely]] {                                                          \
      ::grove::detail::throw_error(::grove::detail::join_message(__VA_ARGS__), __FILE__, \
                                   __LINE__);                                            \
    }                                                                                    \
  } while (false)

#define GROVE_INTERNAL_ASSERT(cond, ...)                                                           \
  do {                                                                                             \
    if (!(cond)) [[unlikely]] {                                                                    \
      ::grove::detail::throw_internal(#cond, ::grove::detail::join_message(__VA_ARGS__), __FILE__, \
                                      __LINE__);                                                   \
    }                                                                                              \
  } while (false)

// Throws an error of the given type (for example OutOfMemoryError) with a joined message.
#define GROVE_THROW(ErrorType, ...) \
  throw ErrorType(::grove::detail::join_message(__VA_ARGS__), __FILE__, __LINE__)
