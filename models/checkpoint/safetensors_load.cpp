// load_safetensors (safetensors.h): read the 8-byte length and the header, parse and check every
// entry, check that the offsets tile the data section exactly, then read each tensor's bytes
// into a new CPU tensor while computing the checksum, and compare it with the header's.
//
// Invariants: nothing is allocated for tensor data until the offsets are known to lie within
// the file, so a hostile header cannot make load allocate more than the file's size; every
// refusal names the path and says what was found.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "core/error.h"
#include "models/checkpoint/safetensors.h"
#include "models/checkpoint/safetensors_format.h"

namespace grove::checkpoint {
namespace {

using Json = nlohmann::json;

// Throws grove::Error "load_safetensors: <path>: <parts>" with the caller's file and line.
#define GROVE_REFUSE(path, ...) GROVE_THROW(Error, "load_safetensors: ", path, ": ", __VA_ARGS__)

// One tensor as the header describes it.
struct Entry {
  std::string name;
  const detail::SafetensorsDType* dtype = nullptr;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

// A file open for reading, closed by the destructor.
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path) : path_(path) {
    descriptor_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (descriptor_ < 0) {
      const int error_number = errno;
      if (error_number == ENOENT) GROVE_REFUSE(path, "the file does not exist; check the path");
      GROVE_REFUSE(path, "cannot open the file: ",
                   std::error_code(error_number, std::generic_category()).message());
    }
    struct stat status {};
    if (::fstat(descriptor_, &status) != 0 || !S_ISREG(status.st_mode)) {
      ::close(descriptor_);
      GROVE_REFUSE(path, "not a regular file (a directory?); expected a safetensors file");
    }
    size_ = static_cast<std::uint64_t>(status.st_size);
  }
  ~InputFile() { ::close(descriptor_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  std::uint64_t size() const { return size_; }

  // Reads exactly `size` bytes at `offset`.
  void read_at(std::uint64_t offset, void* data, std::size_t size) const {
    char* bytes = static_cast<char*>(data);
    std::size_t done = 0;
    while (done < size) {
      const ::ssize_t count =
          ::pread(descriptor_, bytes + done, size - done, static_cast<::off_t>(offset + done));
      if (count < 0 && errno == EINTR) continue;
      if (count < 0) {
        GROVE_REFUSE(path_,
                     "reading failed: ", std::error_code(errno, std::generic_category()).message());
      }
      if (count == 0) GROVE_REFUSE(path_, "the file became shorter while it was read");
      done += static_cast<std::size_t>(count);
    }
  }

 private:
  std::filesystem::path path_;
  int descriptor_ = -1;
  std::uint64_t size_ = 0;
};

std::string grove_dtype_names() {
  std::string names;
  for (const detail::SafetensorsDType& entry : detail::kSafetensorsDTypes) {
    if (!entry.grove_dtype) continue;
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  }
  return names;
}

std::string all_dtype_names() {
  std::string names;
  for (const detail::SafetensorsDType& entry : detail::kSafetensorsDTypes) {
    names += (names.empty() ? "" : ", ") + std::string(entry.name);
  }
  return names;
}

// A non-negative integer that fits in 64 bits, or nullopt.
std::optional<std::uint64_t> as_unsigned(const Json& value) {
  if (!value.is_number_unsigned()) return std::nullopt;
  return value.get<std::uint64_t>();
}

std::map<std::string, std::string> parse_metadata(const std::filesystem::path& path,
                                                  const Json& metadata) {
  if (!metadata.is_object()) {
    GROVE_REFUSE(path, "\"__metadata__\" is a ", metadata.type_name(),
                 ", expected an object of strings; the file is corrupt or not a safetensors file");
  }
  std::map<std::string, std::string> result;
  for (const auto& [key, value] : metadata.items()) {
    if (!value.is_string()) {
      GROVE_REFUSE(path, "metadata entry '", key, "' is a ", value.type_name(),
                   ", expected a string (safetensors metadata holds strings only)");
    }
    result.emplace(key, value.get<std::string>());
  }
  return result;
}

Entry parse_entry(const std::filesystem::path& path, const std::string& name, const Json& value) {
  if (!value.is_object()) {
    GROVE_REFUSE(path, "entry '", name, "' is a ", value.type_name(),
                 ", expected an object with \"dtype\", \"shape\" and \"data_offsets\"");
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!value.contains(field)) {
      GROVE_REFUSE(path, "entry '", name, "' has no \"", field,
                   "\" (expected \"dtype\", \"shape\" and \"data_offsets\"); the file is corrupt");
    }
  }
  Entry entry;
  entry.name = name;
  const Json& dtype = value["dtype"];
  if (!dtype.is_string()) {
    GROVE_REFUSE(path, "tensor '", name, "': \"dtype\" is a ", dtype.type_name(),
                 ", expected a string");
  }
  const std::string dtype_name = dtype.get<std::string>();
  entry.dtype = detail::find_safetensors_dtype(dtype_name);
  if (entry.dtype == nullptr) {
    GROVE_REFUSE(path, "tensor '", name, "' has unknown dtype \"", dtype_name,
                 "\"; safetensors dtypes are ", all_dtype_names());
  }
  if (!entry.dtype->grove_dtype) {
    GROVE_REFUSE(path, "tensor '", name, "' has dtype ", dtype_name,
                 ", which grove cannot hold yet (it holds ", grove_dtype_names(),
                 "); convert the tensor to one of those where the file is written");
  }
  const Json& shape = value["shape"];
  bool shape_ok = shape.is_array();
  for (std::size_t i = 0; shape_ok && i < shape.size(); ++i) {
    const std::optional<std::uint64_t> size = as_unsigned(shape[i]);
    shape_ok = size && *size <= static_cast<std::uint64_t>(INT64_MAX);
    if (shape_ok) entry.shape.push_back(static_cast<std::int64_t>(*size));
  }
  if (!shape_ok) {
    GROVE_REFUSE(path, "tensor '", name, "': \"shape\" is ", shape.dump(),
                 ", expected an array of non-negative integers");
  }
  const Json& offsets = value["data_offsets"];
  std::optional<std::uint64_t> begin;
  std::optional<std::uint64_t> end;
  if (offsets.is_array() && offsets.size() == 2) {
    begin = as_unsigned(offsets[0]);
    end = as_unsigned(offsets[1]);
  }
  if (!begin || !end) {
    GROVE_REFUSE(path, "tensor '", name, "': \"data_offsets\" is ", offsets.dump(),
                 ", expected [begin, end] (two non-negative integers)");
  }
  entry.begin = *begin;
  entry.end = *end;
  if (entry.begin > entry.end) {
    GROVE_REFUSE(path, "tensor '", name, "' has data_offsets [", entry.begin, ", ", entry.end,
                 "] whose begin is after its end; the file is corrupt");
  }
  // Bytes the shape needs, with overflow treated as "more than any file holds".
  std::uint64_t needed = entry.dtype->element_size;
  bool overflow = false;
  for (std::int64_t size : entry.shape) {
    overflow =
        overflow || __builtin_mul_overflow(needed, static_cast<std::uint64_t>(size), &needed);
  }
  if (overflow || needed != entry.end - entry.begin) {
    std::ostringstream needed_text;
    if (overflow) {
      needed_text << "more than 2^64";
    } else {
      needed_text << needed;
    }
    GROVE_REFUSE(path, "tensor '", name, "': data_offsets [", entry.begin, ", ", entry.end,
                 "] hold ", entry.end - entry.begin, " bytes, but shape ", IntArrayRef(entry.shape),
                 " of ", dtype_name, " needs ", needed_text.str(), " bytes; the file is corrupt");
  }
  return entry;
}

// Checks that the entries (sorted by offsets) cover [0, data_size) exactly.
void check_tiling(const std::filesystem::path& path, const std::vector<Entry>& entries,
                  std::uint64_t data_size) {
  for (const Entry& entry : entries) {
    if (entry.end > data_size) {
      GROVE_REFUSE(path, "tensor '", entry.name, "' has data_offsets [", entry.begin, ", ",
                   entry.end, "], out of range: the data section has only ", data_size,
                   " bytes; the file is truncated or its header is corrupt");
    }
  }
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& entry : entries) {
    if (entry.begin < covered) {
      GROVE_REFUSE(path, "tensors '", previous->name, "' [", previous->begin, ", ", previous->end,
                   "] and '", entry.name, "' [", entry.begin, ", ", entry.end,
                   "] have overlapping data_offsets; the file is corrupt");
    }
    if (entry.begin > covered) {
      GROVE_REFUSE(
          path, "bytes [", covered, ", ", entry.begin, ") of the data belong to no tensor (",
          previous ? "after '" + previous->name + "', " : std::string(), "before '", entry.name,
          "'); safetensors packs tensors without gaps, so the file is corrupt");
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered < data_size) {
    GROVE_REFUSE(path, data_size - covered,
                 " trailing bytes follow the last tensor's data (the data section has ", data_size,
                 " bytes, the tensors cover ", covered,
                 "); the file was appended to or is corrupt");
  }
}

}  // namespace

SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  const InputFile file(path);
  if (file.size() < 8) {
    GROVE_REFUSE(
        path, "the file is ", file.size(),
        " bytes, shorter than the 8-byte header length a safetensors file starts with; it is "
        "truncated or not a safetensors file");
  }
  unsigned char length_bytes[8];
  file.read_at(0, length_bytes, sizeof(length_bytes));
  const std::uint64_t header_size = detail::decode_u64_little_endian(length_bytes);
  if (header_size > file.size() - 8) {
    GROVE_REFUSE(path, "the header length is ", header_size, " bytes, beyond the file (",
                 file.size(), " bytes in all); the file is truncated or not a safetensors file");
  }
  if (header_size > detail::kMaxHeaderBytes) {
    GROVE_REFUSE(path, "the header length is ", header_size, " bytes, above the ",
                 detail::kMaxHeaderBytes, " that safetensors readers accept; the file is corrupt");
  }
  std::string header_text(header_size, '\0');
  file.read_at(8, header_text.data(), header_text.size());
  Json header;
  try {
    header = Json::parse(header_text);
  } catch (const Json::exception& error) {  // parse_error, or out_of_range for 1e999
    GROVE_REFUSE(path, "the header is not valid JSON (", error.what(),
                 "); the file is corrupt or not a safetensors file");
  }
  if (!header.is_object()) {
    GROVE_REFUSE(path, "the header is a JSON ", header.type_name(),
                 ", expected an object; the file is corrupt or not a safetensors file");
  }

  SafetensorsFile result;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      result.metadata = parse_metadata(path, value);
    } else {
      entries.push_back(parse_entry(path, key, value));
    }
  }
  std::optional<std::uint32_t> expected_crc;
  if (const auto found = result.metadata.find(std::string(kDataChecksumKey));
      found != result.metadata.end()) {
    expected_crc = detail::parse_crc32_hex(found->second);
    if (!expected_crc) {
      GROVE_REFUSE(path, "metadata entry '", kDataChecksumKey, "' is \"", found->second,
                   "\", expected 8 hex digits; the file is corrupt");
    }
    result.metadata.erase(found);
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  const std::uint64_t data_start = 8 + header_size;
  check_tiling(path, entries, file.size() - data_start);

  std::uint32_t crc = 0;
  result.tensors.reserve(entries.size());
  for (const Entry& entry : entries) {
    Tensor tensor = empty(entry.shape, TensorOptions(*entry.dtype->grove_dtype));
    const std::size_t nbytes = static_cast<std::size_t>(entry.end - entry.begin);
    if (nbytes > 0) {
      file.read_at(data_start + entry.begin, tensor.data_ptr(), nbytes);
      crc = detail::update_crc32(crc, tensor.data_ptr(), nbytes);
    }
    result.tensors.emplace_back(entry.name, std::move(tensor));
  }
  if (expected_crc && crc != *expected_crc) {
    GROVE_REFUSE(
        path,
        "the data does not match its checksum: the file is corrupt or was changed after grove "
        "wrote it (crc32 of the data is ",
        detail::crc32_hex(crc), ", the header's ", kDataChecksumKey, " says ",
        detail::crc32_hex(*expected_crc), ")");
  }
  result.checksum_verified = expected_crc.has_value();
  // A C++ bool holding another byte is undefined behaviour, so BOOL data is checked here.
  for (const auto& [name, tensor] : result.tensors) {
    if (tensor.dtype() != DType::Bool) continue;
    const auto* bytes = static_cast<const unsigned char*>(tensor.data_ptr());
    for (std::size_t i = 0; i < tensor.nbytes(); ++i) {
      if (bytes[i] > 1) {
        GROVE_REFUSE(path, "tensor '", name, "' (BOOL) holds the byte ", int{bytes[i]},
                     " at element ", i, ", expected 0 or 1; the file is corrupt");
      }
    }
  }
  return result;
}

}  // namespace grove::checkpoint

#undef GROVE_REFUSE
