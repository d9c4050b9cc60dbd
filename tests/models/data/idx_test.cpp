// Tests of the IDX reader (models/data/idx.h) on small files written here: plain and gzipped
// (one member and several), and every malformed case the reader names: missing, not IDX, an
// unsupported type, a header or data cut short, bytes after the data, and damaged gzip.
#include "models/data/idx.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/models/data/data_test_util.h"

namespace grove::data {
namespace {

using testing::error_of;
using testing::idx_bytes;
using testing::ramp_bytes;
using testing::TempDir;
using testing::write_bytes;
using testing::write_gzip;

TEST(IdxTest, ReadsPlainFile) {
  TempDir dir;
  // Sizes above 255 check that all four big-endian size bytes are read.
  write_bytes(dir / "images", idx_bytes({300, 2, 3}, ramp_bytes(1800)));
  const IdxArray array = read_idx(dir / "images");
  EXPECT_EQ(array.sizes, (std::vector<std::int64_t>{300, 2, 3}));
  EXPECT_EQ(array.bytes, ramp_bytes(1800));
  EXPECT_EQ(array.numel(), 1800);
}

TEST(IdxTest, ReadsGzippedFileWhateverItsName) {
  TempDir dir;
  const std::vector<std::uint8_t> labels{3, 1, 4, 1, 5, 9, 2};
  write_gzip(dir / "labels.gz", idx_bytes({7}, labels));
  write_gzip(dir / "labels-no-suffix", idx_bytes({7}, labels));  // gzip is found by its magic
  for (const char* name : {"labels.gz", "labels-no-suffix"}) {
    const IdxArray array = read_idx(dir / name);
    EXPECT_EQ(array.sizes, (std::vector<std::int64_t>{7})) << name;
    EXPECT_EQ(array.bytes, labels) << name;
  }
}

TEST(IdxTest, ReadsConcatenatedGzipMembersAsOneStream) {
  TempDir dir;
  const std::vector<std::uint8_t> whole = idx_bytes({4, 5}, ramp_bytes(20));
  const std::vector<std::uint8_t> head(whole.begin(), whole.begin() + 10);
  const std::vector<std::uint8_t> tail(whole.begin() + 10, whole.end());
  write_gzip(dir / "two.gz", head);
  write_gzip(dir / "two.gz", tail, /*append=*/true);
  const IdxArray array = read_idx(dir / "two.gz");
  EXPECT_EQ(array.sizes, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(array.bytes, ramp_bytes(20));
}

TEST(IdxTest, ReadsLargeGzippedFileAcrossInputBuffers) {
  TempDir dir;
  // 3 MB of bytes that do not compress well, so the compressed stream spans many input reads.
  std::vector<std::uint8_t> data(3u << 20);
  std::uint32_t state = 12345;
  for (std::uint8_t& byte : data) {
    state = state * 1664525u + 1013904223u;
    byte = static_cast<std::uint8_t>(state >> 24);
  }
  write_gzip(dir / "big.gz", idx_bytes({3, 1024, 1024}, data));
  EXPECT_EQ(read_idx(dir / "big.gz").bytes, data);
}

TEST(IdxTest, ReadsEmptyArray) {
  TempDir dir;
  write_bytes(dir / "empty", idx_bytes({0, 28, 28}, {}));
  const IdxArray array = read_idx(dir / "empty");
  EXPECT_EQ(array.sizes, (std::vector<std::int64_t>{0, 28, 28}));
  EXPECT_TRUE(array.bytes.empty());
}

TEST(IdxTest, MissingFileIsNamed) {
  TempDir dir;
  const std::string message = error_of([&] { read_idx(dir / "nothing-here"); });
  EXPECT_NE(message.find("no file at"), std::string::npos) << message;
  EXPECT_NE(message.find((dir / "nothing-here").string()), std::string::npos) << message;
}

TEST(IdxTest, WrongMagicIsNotIdx) {
  TempDir dir;
  write_bytes(dir / "text", {'h', 'e', 'l', 'l', 'o', '!', '!', '!', '!'});
  const std::string message = error_of([&] { read_idx(dir / "text"); });
  EXPECT_NE(message.find("is not an IDX file"), std::string::npos) << message;
  EXPECT_NE(message.find("0x68 0x65"), std::string::npos) << message;  // 'h' 'e'
  EXPECT_NE(message.find((dir / "text").string()), std::string::npos) << message;

  write_bytes(dir / "tiny", {0, 0});
  const std::string short_message = error_of([&] { read_idx(dir / "tiny"); });
  EXPECT_NE(short_message.find("not an IDX file"), std::string::npos) << short_message;
  EXPECT_NE(short_message.find("only 2 bytes"), std::string::npos) << short_message;
}

TEST(IdxTest, UnsupportedTypesAreRefusedByName) {
  TempDir dir;
  write_bytes(dir / "floats", idx_bytes({2}, std::vector<std::uint8_t>(8), 0x0D));
  const std::string message = error_of([&] { read_idx(dir / "floats"); });
  EXPECT_NE(message.find("unsupported IDX element type 0x0d (float32)"), std::string::npos)
      << message;
  EXPECT_NE(message.find("only 0x08 (unsigned byte)"), std::string::npos) << message;

  write_bytes(dir / "unknown", idx_bytes({2}, {1, 2}, 0x42));
  const std::string unknown = error_of([&] { read_idx(dir / "unknown"); });
  EXPECT_NE(unknown.find("unsupported IDX element type 0x42;"), std::string::npos) << unknown;
}

TEST(IdxTest, TruncatedDataSaysExpectedAndFound) {
  TempDir dir;
  write_bytes(dir / "short", idx_bytes({3, 4}, ramp_bytes(7)));
  const std::string message = error_of([&] { read_idx(dir / "short"); });
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("(3, 4) need 12 data bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("holds only 7"), std::string::npos) << message;
  EXPECT_NE(message.find((dir / "short").string()), std::string::npos) << message;

  // The same inside a valid gzip stream.
  write_gzip(dir / "short.gz", idx_bytes({3, 4}, ramp_bytes(7)));
  const std::string gzipped = error_of([&] { read_idx(dir / "short.gz"); });
  EXPECT_NE(gzipped.find("need 12 data bytes, but the file holds only 7"), std::string::npos)
      << gzipped;
}

TEST(IdxTest, SizesBeyondAPlainFileAreRefusedBeforeReading) {
  TempDir dir;
  // (65535, 65535, 65535): 2^48 bytes claimed by a 19-byte file. The reader compares the claim
  // with the file's size first, so the message comes without reading (or allocating) anything.
  write_bytes(dir / "liar", idx_bytes({65535, 65535, 65535}, ramp_bytes(3)));
  const std::string message = error_of([&] { read_idx(dir / "liar"); });
  EXPECT_NE(message.find("(65535, 65535, 65535) need 281462092005375 data bytes, but the file "
                         "holds only 3"),
            std::string::npos)
      << message;
}

TEST(IdxTest, TruncatedHeader) {
  TempDir dir;
  std::vector<std::uint8_t> bytes = idx_bytes({60000, 28, 28}, {});
  bytes.resize(9);  // 3 dims need 12 size bytes; keep 5
  write_bytes(dir / "header", bytes);
  const std::string message = error_of([&] { read_idx(dir / "header"); });
  EXPECT_NE(message.find("truncated header"), std::string::npos) << message;
  EXPECT_NE(message.find("expected 12 bytes, but the file ends after 5"), std::string::npos)
      << message;
}

TEST(IdxTest, BytesAfterTheDataAreWrongSize) {
  TempDir dir;
  write_bytes(dir / "long", idx_bytes({2, 2}, ramp_bytes(7)));
  const std::string message = error_of([&] { read_idx(dir / "long"); });
  EXPECT_NE(message.find("wrong size"), std::string::npos) << message;
  EXPECT_NE(message.find("expected exactly 4 data bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("3 more bytes"), std::string::npos) << message;
}

TEST(IdxTest, CutGzipIsCorrupt) {
  TempDir dir;
  write_gzip(dir / "whole.gz", idx_bytes({1000}, ramp_bytes(1000)));
  std::vector<std::uint8_t> bytes = testing::read_bytes(dir / "whole.gz");
  bytes.resize(bytes.size() / 2);
  write_bytes(dir / "cut.gz", bytes);
  const std::string message = error_of([&] { read_idx(dir / "cut.gz"); });
  EXPECT_NE(message.find("corrupt gzip"), std::string::npos) << message;
  EXPECT_NE(message.find("cut off"), std::string::npos) << message;
  EXPECT_NE(message.find((dir / "cut.gz").string()), std::string::npos) << message;
}

TEST(IdxTest, DamagedGzipIsCorrupt) {
  TempDir dir;
  write_gzip(dir / "whole.gz", idx_bytes({1000}, ramp_bytes(1000)));
  std::vector<std::uint8_t> bytes = testing::read_bytes(dir / "whole.gz");
  // The deflate data starts after the 10-byte header; the CRC-32 and size end the member.
  // Overwriting the middle breaks either the deflate codes or the CRC: both are corrupt data.
  for (std::size_t i = 12; i < bytes.size() - 8; ++i) bytes[i] ^= 0x5A;
  write_bytes(dir / "damaged.gz", bytes);
  const std::string message = error_of([&] { read_idx(dir / "damaged.gz"); });
  EXPECT_NE(message.find("corrupt gzip"), std::string::npos) << message;

  // Bytes after the last member that are not another member.
  bytes = testing::read_bytes(dir / "whole.gz");
  bytes.push_back(0x00);
  bytes.push_back(0x01);
  write_bytes(dir / "trailing.gz", bytes);
  const std::string trailing = error_of([&] { read_idx(dir / "trailing.gz"); });
  EXPECT_NE(trailing.find("corrupt gzip: expected the end of the file or another gzip member"),
            std::string::npos)
      << trailing;
}

}  // namespace
}  // namespace grove::data
