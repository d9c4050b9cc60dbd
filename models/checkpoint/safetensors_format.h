// Internal to grove_checkpoint: what the safetensors writer and reader share (dtype names, the
// header length's encoding, the checksum's spelling, the limits). Not installed for users;
// safetensors.h is the interface.
//
// Invariant: the dtype table below is the only place that maps safetensors names to grove
// dtypes and element sizes.
#pragma once

#include <zlib.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace grove::checkpoint::detail {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; grove writes and reads tensor memory as is");

// A safetensors dtype: its name, its element size, and the grove dtype that holds it (none for
// dtypes grove's core does not have yet).
struct SafetensorsDType {
  std::string_view name;
  std::size_t element_size;
  std::optional<DType> grove_dtype;
};

inline constexpr std::array<SafetensorsDType, 15> kSafetensorsDTypes{{
    {"BOOL", 1, DType::Bool},
    {"U8", 1, std::nullopt},
    {"I8", 1, std::nullopt},
    {"F8_E5M2", 1, std::nullopt},
    {"F8_E4M3", 1, std::nullopt},
    {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},
    {"F16", 2, DType::Float16},
    {"BF16", 2, DType::BFloat16},
    {"I32", 4, DType::Int32},
    {"U32", 4, std::nullopt},
    {"F32", 4, DType::Float32},
    {"F64", 8, DType::Float64},
    {"I64", 8, DType::Int64},
    {"U64", 8, std::nullopt},
}};

// The table's entry for a name, or nullptr for a name safetensors does not define.
inline const SafetensorsDType* find_safetensors_dtype(std::string_view name) {
  for (const SafetensorsDType& entry : kSafetensorsDTypes) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// The table's entry for a grove dtype, or nullptr if safetensors has none for it.
inline const SafetensorsDType* find_safetensors_dtype(DType dtype) {
  for (const SafetensorsDType& entry : kSafetensorsDTypes) {
    if (entry.grove_dtype == dtype) return &entry;
  }
  return nullptr;
}

// The reference reader refuses headers above 100 MB; grove keeps the same limit both ways.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

// The header is padded with spaces so that the data starts at a multiple of this.
inline constexpr std::size_t kDataAlignment = 8;

inline void encode_u64_little_endian(std::uint64_t value, unsigned char (&bytes)[8]) {
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
}

inline std::uint64_t decode_u64_little_endian(const unsigned char (&bytes)[8]) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

// zlib's crc32 continued over `size` more bytes (crc32_z takes a size_t, so no chunking).
inline std::uint32_t update_crc32(std::uint32_t crc, const void* data, std::size_t size) {
  return static_cast<std::uint32_t>(
      crc32_z(crc, static_cast<const Bytef*>(data), static_cast<z_size_t>(size)));
}

// "0a1b2c3d": 8 lowercase hex digits.
inline std::string crc32_hex(std::uint32_t crc) {
  constexpr char kDigits[] = "0123456789abcdef";
  std::string text(8, '0');
  for (int i = 7; i >= 0; --i, crc >>= 4) text[static_cast<std::size_t>(i)] = kDigits[crc & 0xF];
  return text;
}

// The inverse of crc32_hex; nullopt unless `text` is exactly 8 hex digits (either case).
inline std::optional<std::uint32_t> parse_crc32_hex(std::string_view text) {
  if (text.size() != 8) return std::nullopt;
  std::uint32_t value = 0;
  for (char c : text) {
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    value = (value << 4) | digit;
  }
  return value;
}

}  // namespace grove::checkpoint::detail
