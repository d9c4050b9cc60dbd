// The IDX reader: the file format of MNIST and Fashion-MNIST, plain or gzipped.
//
// An IDX file is a big-endian header followed by the data:
//   bytes 0-1  zero
//   byte  2    element type: 0x08 unsigned byte (the only type read here; 0x09 signed byte,
//              0x0B int16, 0x0C int32, 0x0D float32 and 0x0E float64 are refused by name)
//   byte  3    number of dimensions D (at least 1)
//   then D big-endian uint32 sizes, then prod(sizes) elements in row-major order, and nothing
//   after them.
// A file that starts with the gzip magic bytes (1f 8b) is inflated first (zlib's inflate API,
// concatenated gzip members allowed, as gunzip does); anything else is read as is.
//
// What it is not: a writer (tests write their own files), and not a lazy or memory-mapped
// reader: the whole array is read into memory.
//
// Invariants of a returned IdxArray: sizes has at least one entry, and bytes.size() is the
// product of sizes. Every malformed file is a grove::Error naming the path and what was wrong:
// missing or unreadable, not IDX (magic), an unsupported type, fewer data bytes than the sizes
// say (with both counts), bytes after the data, or a corrupt or cut-off gzip stream.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace grove::data {

// The contents of an IDX file of unsigned bytes.
struct IdxArray {
  std::vector<std::int64_t> sizes;  // e.g. (N, 28, 28) for images, (N) for labels
  std::vector<std::uint8_t> bytes;  // prod(sizes) elements, row-major

  std::int64_t numel() const { return static_cast<std::int64_t>(bytes.size()); }
};

// Reads the IDX file at `path` (gzipped or not). Blocks on file I/O; thread-safe (no shared
// state). Throws grove::Error as described above.
IdxArray read_idx(const std::filesystem::path& path);

}  // namespace grove::data
