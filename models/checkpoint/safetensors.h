// safetensors files: grove's checkpoint format, readable by Hugging Face's safetensors library
// (safetensors.torch.load_file, safetensors.numpy.load_file) and so by PyTorch.
//
// The format (https://github.com/huggingface/safetensors), all integers little-endian:
//   bytes 0-7       N, an unsigned 64-bit header length
//   bytes 8..8+N    a UTF-8 JSON object (the header):
//                     {"__metadata__": {"key": "value", ...},              (optional; strings only)
//                      "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]},
//                      ...}
//   then the data   every tensor's elements, row-major, at [begin, end) counted from the first
//                   byte after the header; the tensors cover the data exactly (no gaps, no
//                   overlaps, nothing after the last one).
// grove writes as the reference writer does: compact JSON with "__metadata__" first, then the
// tensors in data order, with the header padded with spaces to a multiple of 8 bytes. The data
// order is by element size, largest first, then by name (the reference orders by dtype, then
// name); either way every tensor starts at a multiple of its element size. It adds one metadata
// entry, "grove.data_crc32": zlib's crc32 of the whole data section, as 8 lowercase hex digits;
// load checks it when it is there.
//
// dtypes: grove's float32, float64, int64, int32 and bool are F32, F64, I64, I32 and BOOL.
// Other safetensors dtypes (F16, BF16, U8, I8, I16, U16, U32, U64, F8_*) are refused when
// loading, naming the tensor: grove's core has no such dtype yet.
//
// What it is not: a lazy or memory-mapped reader (load reads every tensor into memory), and not
// the checkpoint of a run (which names files, keeps the last few, stores optimizer state): that
// layer is built on this one. Little-endian hosts only.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace grove::checkpoint {

// Tensors with their names, in a chosen order (a state dict).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// The metadata key under which save_safetensors stores the data's checksum.
inline constexpr std::string_view kDataChecksumKey = "grove.data_crc32";

// Writes `tensors` and `metadata` to `path` as a safetensors file, atomically (an
// AtomicFileWriter, atomic_file.h: `path` keeps its old contents until the new file is complete
// and on disk). Tensors may be on any device and have any strides: each is copied to the CPU
// and made contiguous one at a time while writing, so the host holds at most one tensor's copy.
// Names must be non-empty, unique, valid UTF-8 and not "__metadata__"; metadata keys and values
// must be valid UTF-8 and must not use kDataChecksumKey, which save adds. Violations throw
// grove::Error naming the tensor or key before any file is created.
// Blocks on the copies and on file I/O; thread-safe as long as no other thread writes to the
// tensors or to the same path.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// What load_safetensors read.
struct SafetensorsFile {
  // CPU tensors, contiguous, each with its own storage, in the order of their data in the file
  // (for files grove wrote: by element size, largest first, then by name). Tensors with equal
  // offsets (empty ones) keep the order of their names.
  NamedTensors tensors;
  // The "__metadata__" entries, without kDataChecksumKey (reported by checksum_verified).
  std::map<std::string, std::string> metadata;
  // True when the file carried kDataChecksumKey and the data matched it; false for a file
  // without it (written by another tool), which is accepted unchecked.
  bool checksum_verified = false;
};

// Reads a whole safetensors file. Throws grove::Error naming the path and what is wrong for: a
// missing or unreadable file, one shorter than 8 bytes, a header length beyond the file, a
// header that is not a JSON object, a metadata value that is not a string, an entry without
// dtype, shape or data_offsets, an unknown dtype or one grove cannot hold, offsets that do not
// match shape * element size, overlapping tensors, gaps, offsets beyond the file, bytes after
// the last tensor, a BOOL byte other than 0 or 1, and a data section that does not match its
// checksum. Allocates at most the file's size; blocks on file I/O; thread-safe.
SafetensorsFile load_safetensors(const std::filesystem::path& path);

// The safetensors name of a grove dtype ("F32", "F64", "I64", "I32", "BOOL").
std::string_view safetensors_dtype_name(DType dtype);

}  // namespace grove::checkpoint
