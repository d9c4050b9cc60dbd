// Small formatting helpers for messages: byte counts and pointers.
#pragma once

#include <cstddef>
#include <string>

namespace grove {

// "1.50 MiB", "512 bytes".
std::string format_bytes(std::size_t nbytes);
// "0x7f12a4000000".
std::string format_pointer(const void* ptr);

}  // namespace grove
