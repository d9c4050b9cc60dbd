// The IDX reader (idx.h): a byte source (the plain file, or zlib's inflate over it) and the
// parser of the header and data on top of it.
//
// What it is not: a general gzip tool. A gzip stream must end with its end marker and may be
// followed only by further gzip members (as gunzip accepts); other trailing bytes are an error.
//
// Invariant: every error names the file and says what was expected and what was found.
#include "models/data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <memory>
#include <sstream>
#include <string>

#include "core/error.h"

namespace grove::data {
namespace {

constexpr std::uint8_t kUnsignedByteType = 0x08;
// Data is read in pieces of this size, so a header that claims more data than the file holds
// costs at most one piece beyond the data that is really there.
constexpr std::size_t kReadPiece = std::size_t{16} << 20;

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

std::string hex_byte(unsigned value) {
  std::ostringstream out;
  out << "0x" << std::hex << std::setw(2) << std::setfill('0') << value;
  return out.str();
}

const char* type_name(std::uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return nullptr;
  }
}

std::string format_sizes(const std::vector<std::int64_t>& sizes) {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < sizes.size(); ++i) out << (i ? ", " : "") << sizes[i];
  out << ")";
  return out.str();
}

// Where the IDX bytes come from: read() fills up to `count` bytes and returns fewer only at the
// end of the data.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual std::size_t read(std::uint8_t* destination, std::size_t count) = 0;
};

class PlainSource final : public ByteSource {
 public:
  PlainSource(std::FILE* file, const std::string& path) : file_(file), path_(path) {}

  std::size_t read(std::uint8_t* destination, std::size_t count) override {
    const std::size_t got = std::fread(destination, 1, count, file_);
    GROVE_CHECK(got == count || !std::ferror(file_), "read_idx: ", path_, ": reading failed (",
                std::strerror(errno), "); check the disk and the file");
    return got;
  }

 private:
  std::FILE* file_;
  const std::string& path_;
};

// zlib's inflate over the file, member after member (concatenated gzip members are one stream,
// as gunzip reads them).
class GzipSource final : public ByteSource {
 public:
  GzipSource(std::FILE* file, const std::string& path)
      : file_(file), path_(path), input_(kInputBytes) {
    // 16 + MAX_WBITS: a gzip wrapper (header and CRC-32 trailer), not raw deflate or zlib.
    GROVE_CHECK(inflateInit2(&stream_, 16 + MAX_WBITS) == Z_OK, "read_idx: ", path_,
                ": zlib could not start inflating (out of memory?)");
  }
  ~GzipSource() override { inflateEnd(&stream_); }
  GzipSource(const GzipSource&) = delete;
  GzipSource& operator=(const GzipSource&) = delete;

  std::size_t read(std::uint8_t* destination, std::size_t count) override {
    std::size_t produced = 0;
    while (produced < count && !finished_) {
      if (stream_.avail_in == 0) {
        GROVE_CHECK(refill(), "read_idx: ", path_,
                    ": corrupt gzip: the compressed stream ends before its end marker, after ",
                    stream_.total_out + inflated_before_,
                    " decompressed bytes (the file is cut off; download or copy it again)");
      }
      const std::size_t room = std::min<std::size_t>(count - produced, std::size_t{1} << 30);
      stream_.next_out = destination + produced;
      stream_.avail_out = static_cast<uInt>(room);
      const int status = inflate(&stream_, Z_NO_FLUSH);
      produced += room - stream_.avail_out;
      if (status == Z_STREAM_END) {
        end_of_member();
      } else if (status != Z_OK && status != Z_BUF_ERROR) {
        GROVE_CHECK(false, "read_idx: ", path_, ": corrupt gzip data (zlib: ",
                    stream_.msg != nullptr ? stream_.msg : "error " + std::to_string(status),
                    "); the file is damaged, download or copy it again");
      }
    }
    return produced;
  }

 private:
  static constexpr std::size_t kInputBytes = std::size_t{1} << 18;

  // Keeps the unread input, appends what the file has next; false if nothing more came.
  bool refill() {
    const std::size_t kept = stream_.avail_in;
    if (kept > 0) std::memmove(input_.data(), stream_.next_in, kept);
    const std::size_t got = std::fread(input_.data() + kept, 1, input_.size() - kept, file_);
    GROVE_CHECK(got > 0 || !std::ferror(file_), "read_idx: ", path_, ": reading failed (",
                std::strerror(errno), "); check the disk and the file");
    stream_.next_in = input_.data();
    stream_.avail_in = static_cast<uInt>(kept + got);
    return got > 0;
  }

  // After a member's end marker: the end of the file, or another member (1f 8b).
  void end_of_member() {
    while (stream_.avail_in < 2 && refill()) {
    }
    if (stream_.avail_in == 0) {
      finished_ = true;
      return;
    }
    const bool another_member =
        stream_.avail_in >= 2 && stream_.next_in[0] == 0x1f && stream_.next_in[1] == 0x8b;
    GROVE_CHECK(another_member, "read_idx: ", path_,
                ": corrupt gzip: expected the end of the file or another gzip member after the "
                "compressed data, but found other bytes "
                "(starting with ",
                hex_byte(stream_.next_in[0]), "); the file is damaged");
    inflated_before_ += stream_.total_out;
    GROVE_CHECK(inflateReset(&stream_) == Z_OK, "read_idx: ", path_,
                ": zlib could not restart for the next gzip member");
  }

  std::FILE* file_;
  const std::string& path_;
  std::vector<std::uint8_t> input_;
  z_stream stream_{};
  std::uint64_t inflated_before_ = 0;  // bytes of the members before the current one
  bool finished_ = false;
};

// Reads exactly `count` bytes, or says what part of the file is missing.
void read_exactly(ByteSource& source, std::uint8_t* destination, std::size_t count,
                  const std::string& path, const char* what) {
  const std::size_t got = source.read(destination, count);
  GROVE_CHECK(got == count, "read_idx: ", path, ": truncated ", what, ": expected ", count,
              " bytes, but the file ends after ", got, " (the file is cut off or not IDX)");
}

}  // namespace

IdxArray read_idx(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code error;
  GROVE_CHECK(std::filesystem::exists(path, error), "read_idx: no file at ", name,
              "; expected an IDX file (plain or .gz) there");
  GROVE_CHECK(!std::filesystem::is_directory(path, error), "read_idx: ", name,
              " is a directory; expected an IDX file");
  FilePtr file(std::fopen(name.c_str(), "rb"));
  GROVE_CHECK(file != nullptr, "read_idx: cannot open ", name, " (", std::strerror(errno),
              "); check its permissions");

  std::uint8_t magic[2] = {0, 0};
  const std::size_t magic_bytes = std::fread(magic, 1, 2, file.get());
  std::rewind(file.get());
  const bool gzipped = magic_bytes == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  std::unique_ptr<ByteSource> source;
  if (gzipped) {
    source = std::make_unique<GzipSource>(file.get(), name);
  } else {
    source = std::make_unique<PlainSource>(file.get(), name);
  }

  // Header: 00 00 type dims.
  std::uint8_t header[4];
  const std::size_t header_bytes = source->read(header, 4);
  GROVE_CHECK(header_bytes == 4, "read_idx: ", name,
              " is not an IDX file: expected a 4-byte header, but the data holds only ",
              header_bytes, " bytes");
  GROVE_CHECK(header[0] == 0 && header[1] == 0, "read_idx: ", name,
              " is not an IDX file: expected its first two bytes to be zero (the IDX magic "
              "00 00 <type> <dims>), but found ",
              hex_byte(header[0]), " ", hex_byte(header[1]), "; is this the right file?");
  const std::uint8_t type = header[2];
  const char* known_type = type_name(type);
  GROVE_CHECK(type == kUnsignedByteType, "read_idx: ", name, ": unsupported IDX element type ",
              hex_byte(type), known_type != nullptr ? std::string(" (") + known_type + ")" : "",
              "; only 0x08 (unsigned byte) is supported, the type of MNIST and Fashion-MNIST");
  const int dims = header[3];
  GROVE_CHECK(dims >= 1, "read_idx: ", name,
              ": expected at least one dimension in the IDX header, but it says 0");

  // Sizes: dims big-endian uint32.
  std::vector<std::uint8_t> size_bytes(static_cast<std::size_t>(dims) * 4);
  read_exactly(*source, size_bytes.data(), size_bytes.size(), name, "header (its sizes)");
  IdxArray array;
  std::int64_t expected = 1;
  for (int d = 0; d < dims; ++d) {
    const std::uint8_t* b = &size_bytes[static_cast<std::size_t>(d) * 4];
    const std::int64_t size = (std::int64_t{b[0]} << 24) | (std::int64_t{b[1]} << 16) |
                              (std::int64_t{b[2]} << 8) | std::int64_t{b[3]};
    array.sizes.push_back(size);
    GROVE_CHECK(!__builtin_mul_overflow(expected, size, &expected), "read_idx: ", name,
                ": the header's sizes ", format_sizes(array.sizes),
                "... describe more than 2^63 bytes; the header is corrupt");
  }

  // A plain file must hold the data the sizes claim before any of it is allocated; a gzipped
  // one's inflated size is known only by inflating it, so its data comes in pieces (kReadPiece).
  const auto total = static_cast<std::size_t>(expected);
  if (!gzipped) {
    const std::uintmax_t file_bytes = std::filesystem::file_size(path, error);
    const std::uintmax_t header_bytes_total = 4 + size_bytes.size();
    const std::uintmax_t data_bytes =
        error || file_bytes < header_bytes_total ? 0 : file_bytes - header_bytes_total;
    GROVE_CHECK(error || total <= data_bytes, "read_idx: ", name,
                ": truncated: the header's sizes ", format_sizes(array.sizes), " need ", total,
                " data bytes, but the file holds only ", data_bytes,
                "; the file is incomplete (download or copy it again)");
  }
  // Data, in pieces.
  array.bytes.reserve(std::min(total, kReadPiece));
  std::size_t found = 0;
  while (found < total) {
    const std::size_t want = std::min(kReadPiece, total - found);
    array.bytes.resize(found + want);
    const std::size_t got = source->read(array.bytes.data() + found, want);
    found += got;
    if (got < want) break;
  }
  GROVE_CHECK(found == total, "read_idx: ", name, ": truncated: the header's sizes ",
              format_sizes(array.sizes), " need ", total, " data bytes, but the file holds only ",
              found, "; the file is incomplete (download or copy it again)");

  // Nothing may follow the data.
  std::uint64_t extra = 0;
  std::uint8_t scratch[4096];
  for (std::size_t got = 0; (got = source->read(scratch, sizeof(scratch))) > 0;) extra += got;
  GROVE_CHECK(extra == 0, "read_idx: ", name, ": wrong size: expected exactly ", total,
              " data bytes for the header's sizes ", format_sizes(array.sizes), ", but ", extra,
              " more bytes follow them; the header does not match the data (a wrong or "
              "corrupt file)");
  return array;
}

}  // namespace grove::data
