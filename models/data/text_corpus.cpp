// The text corpus (text_corpus.h): listing and reading the files, the byte -> token mapping,
// the split, and the window sampler.
//
// What it is not: streaming; the whole text is held in memory (a few hundred kilobytes for the
// default corpus).
//
// Invariant: tokens are bytes clipped to 0..127, one token per byte, in file order.
#include "models/data/text_corpus.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/stream.h"

namespace grove::data {
namespace {

constexpr std::uint8_t kLargestToken = kCorpusVocabSize - 1;

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// Appends the bytes of `path` to `text`, or says why it cannot.
void append_file(const std::filesystem::path& path, std::string& text) {
  const std::string name = path.string();
  std::error_code error;
  GROVE_CHECK(std::filesystem::exists(path, error), "load_text_corpus: no file at ", name,
              "; expected a readable text file");
  GROVE_CHECK(!std::filesystem::is_directory(path, error), "load_text_corpus: ", name,
              " is a directory; expected a text file (list the files inside it instead)");
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(name.c_str(), "rb"));
  GROVE_CHECK(file != nullptr, "load_text_corpus: cannot read ", name, " (", std::strerror(errno),
              "); check its permissions");
  char buffer[1 << 16];
  std::size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) text.append(buffer, got);
  GROVE_CHECK(!std::ferror(file.get()), "load_text_corpus: reading ", name, " failed (",
              std::strerror(errno), "); check the disk and the file");
}

// Bytes -> (N) int64 tokens, clipping; adds the number of clipped bytes to *clipped.
Tensor tokens_of(std::string_view text, std::int64_t* clipped) {
  Tensor tokens = empty({static_cast<std::int64_t>(text.size())}, DType::Int64);
  std::int64_t* out = tokens.data<std::int64_t>();
  std::int64_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<std::uint8_t>(text[i]);
    count += byte > kLargestToken;
    out[i] = std::min(byte, kLargestToken);
  }
  if (clipped != nullptr) *clipped += count;
  return tokens;
}

}  // namespace

std::filesystem::path default_corpus_dir() {
  return "/usr/share/common-licenses";
}

std::vector<std::filesystem::path> default_corpus_paths() {
  std::vector<std::filesystem::path> paths;
  std::error_code error;
  const std::filesystem::path dir = default_corpus_dir();
  if (!std::filesystem::is_directory(dir, error)) return paths;
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator(dir, error)) {
    if (entry.is_symlink(error) || !entry.is_regular_file(error)) continue;
    paths.push_back(entry.path());
  }
  // By name in byte order (as Python's sorted() orders ASCII names).
  std::sort(paths.begin(), paths.end(), [](const auto& a, const auto& b) {
    return a.filename().string() < b.filename().string();
  });
  return paths;
}

TextCorpus load_text_corpus(const std::vector<std::filesystem::path>& paths, double val_fraction) {
  GROVE_CHECK(!paths.empty(), "load_text_corpus: expected at least one file, but got none; ",
              "the default corpus is the files under ", default_corpus_dir().string(),
              " (Debian package base-files)");
  GROVE_CHECK(val_fraction >= 0.0 && val_fraction < 1.0,
              "load_text_corpus: expected val_fraction in [0, 1), but got ", val_fraction);
  std::string text;
  for (const std::filesystem::path& path : paths) append_file(path, text);
  if (text.empty()) {
    std::string names;
    for (const std::filesystem::path& path : paths) {
      names += (names.empty() ? "" : ", ") + path.string();
    }
    GROVE_CHECK(false, "load_text_corpus: expected some text, but ",
                paths.size() == 1 ? "the file " : "the files ", names,
                paths.size() == 1 ? " is empty" : " are empty", "; give it text to train on");
  }

  TextCorpus corpus;
  corpus.paths = paths;
  corpus.tokens = tokens_of(text, &corpus.clipped_bytes);
  const auto total = static_cast<std::int64_t>(text.size());
  // As Python's int((1 - val_fraction) * len(data)): truncation of the product in double.
  const auto train_count =
      static_cast<std::int64_t>((1.0 - val_fraction) * static_cast<double>(total));
  corpus.train = corpus.tokens.slice(0, 0, train_count);
  corpus.validation = corpus.tokens.slice(0, train_count, total);
  return corpus;
}

Windows sample_windows(const Tensor& tokens, std::int64_t batch, std::int64_t block,
                       Generator& generator) {
  GROVE_CHECK(batch >= 1 && block >= 1, "sample_windows: expected batch >= 1 and block >= 1, ",
              "but got batch ", batch, " and block ", block);
  GROVE_CHECK(tokens.defined() && tokens.dim() == 1 && tokens.dtype() == DType::Int64 &&
                  tokens.device().is_cpu(),
              "sample_windows: expected 1-d int64 tokens on the CPU (such as TextCorpus::train)",
              tokens.defined() ? "" : ", but got an undefined tensor");
  const std::int64_t count = tokens.numel();
  GROVE_CHECK(count >= block + 1, "sample_windows: a window of block ", block, " needs ", block + 1,
              " tokens (inputs and their next tokens), but the text has only ", count,
              "; use a smaller block size or a longer text (a larger validation fraction for "
              "the validation split)");
  check_not_capturing(kCPU, "sample_windows");

  const Tensor source = tokens.contiguous();
  const std::int64_t* text = source.data<std::int64_t>();
  // Two 32-bit words per window, four per Philox counter: two windows per counter.
  const PhiloxArgs args = generator.reserve(static_cast<std::uint64_t>((batch + 1) / 2));
  const auto [seed, offset] = args.resolve();
  const auto starts_possible = static_cast<std::uint64_t>(count - block);  // [0, count - block)

  Windows windows;
  windows.inputs = empty({batch, block}, DType::Int64);   // (B, T)
  windows.targets = empty({batch, block}, DType::Int64);  // (B, T)
  std::int64_t* inputs = windows.inputs.data<std::int64_t>();
  std::int64_t* targets = windows.targets.data<std::int64_t>();
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto words = philox4x32_10(offset + static_cast<std::uint64_t>(b / 2), 0, seed);
    const std::size_t first_word = static_cast<std::size_t>(b % 2) * 2;
    const std::uint64_t random =
        (std::uint64_t{words[first_word]} << 32) | std::uint64_t{words[first_word + 1]};
    // Lemire's map of a 64-bit word onto [0, starts_possible).
    const auto start =
        static_cast<std::int64_t>((static_cast<unsigned __int128>(random) * starts_possible) >> 64);
    const std::size_t bytes = static_cast<std::size_t>(block) * sizeof(std::int64_t);
    std::memcpy(inputs + b * block, text + start, bytes);
    std::memcpy(targets + b * block, text + start + 1, bytes);
  }
  return windows;
}

namespace {

// The little-endian int32 at `bytes` (a token file's header word).
std::int32_t little_endian_int32(const unsigned char* bytes) {
  return static_cast<std::int32_t>(
      static_cast<std::uint32_t>(bytes[0]) | (static_cast<std::uint32_t>(bytes[1]) << 8) |
      (static_cast<std::uint32_t>(bytes[2]) << 16) | (static_cast<std::uint32_t>(bytes[3]) << 24));
}

}  // namespace

bool is_token_file(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.string().c_str(), "rb"));
  unsigned char magic[4];
  if (file == nullptr || std::fread(magic, 1, 4, file.get()) != 4) return false;
  return little_endian_int32(magic) == kTokenFileMagic;
}

TextCorpus load_token_file(const std::filesystem::path& path, double val_fraction) {
  const std::string name = path.string();
  GROVE_CHECK(val_fraction >= 0.0 && val_fraction < 1.0,
              "load_token_file: expected val_fraction in [0, 1), got ", val_fraction);
  std::string bytes;
  append_file(path, bytes);
  constexpr std::size_t kHeaderBytes = kTokenFileHeaderInts * 4;
  const auto header_int = [&](std::size_t index) -> std::int64_t {
    return little_endian_int32(reinterpret_cast<const unsigned char*>(bytes.data()) + 4 * index);
  };
  GROVE_CHECK(bytes.size() >= kHeaderBytes && header_int(0) == kTokenFileMagic,
              "load_token_file: ", name, " does not start with a token file's header (",
              kTokenFileHeaderInts, " int32, the first ", kTokenFileMagic,
              "); give a text file or an llm.c .bin shard");
  GROVE_CHECK(header_int(1) == 1, "load_token_file: ", name, " is version ", header_int(1),
              " of the format; grove reads version 1 (uint16 token ids)");
  const std::int64_t count = header_int(2);
  const std::size_t expected =
      kHeaderBytes + 2 * static_cast<std::size_t>(std::max<std::int64_t>(count, 0));
  GROVE_CHECK(count > 0 && bytes.size() == expected, "load_token_file: ", name, "'s header says ",
              count, " tokens (", expected, " bytes with the header), but the file has ",
              bytes.size(), " bytes; it is cut short or not a token file");
  TextCorpus corpus;
  corpus.paths = {path};
  corpus.is_text = false;
  corpus.tokens = empty({count}, DType::Int64);
  std::int64_t* out = corpus.tokens.data<std::int64_t>();
  const auto* ids = reinterpret_cast<const unsigned char*>(bytes.data()) + kHeaderBytes;
  std::int64_t largest = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    out[i] = ids[2 * i] | (ids[2 * i + 1] << 8);
    largest = std::max(largest, out[i]);
  }
  corpus.vocab_needed = largest + 1;
  const auto n_train = static_cast<std::int64_t>((1.0 - val_fraction) * static_cast<double>(count));
  corpus.train = corpus.tokens.slice(0, 0, n_train);
  corpus.validation = corpus.tokens.slice(0, n_train, count);
  return corpus;
}

Tensor encode(std::string_view text) {
  return tokens_of(text, nullptr);
}

std::string decode(const Tensor& tokens) {
  GROVE_CHECK(tokens.defined() && tokens.dtype() == DType::Int64,
              "decode: expected int64 tokens, but got ",
              tokens.defined() ? std::string(dtype_name(tokens.dtype())) : "an undefined tensor");
  const Tensor host = tokens.to(kCPU).contiguous();
  const std::int64_t* values = host.data<std::int64_t>();
  std::string text(static_cast<std::size_t>(host.numel()), '\0');
  for (std::int64_t i = 0; i < host.numel(); ++i) {
    GROVE_CHECK(values[i] >= 0 && values[i] <= kLargestToken, "decode: expected tokens in 0..",
                int{kLargestToken}, ", but token ", i, " (row-major) is ", values[i]);
    text[static_cast<std::size_t>(i)] = static_cast<char>(values[i]);
  }
  return text;
}

double unigram_entropy(const Tensor& tokens) {
  GROVE_CHECK(tokens.dim() == 1 && tokens.dtype() == DType::Int64 && tokens.device().is_cpu(),
              "unigram_entropy: expected 1-d int64 tokens on the CPU, got ", tokens.sizes(), " ",
              tokens.dtype(), " on ", tokens.device());
  constexpr std::int64_t kLargest = 65535;
  std::vector<std::int64_t> counts;
  for (const std::int64_t token : tokens.contiguous().to_vector<std::int64_t>()) {
    GROVE_CHECK(token >= 0 && token <= kLargest, "unigram_entropy: token ", token,
                " is outside 0..", kLargest);
    if (static_cast<std::size_t>(token) >= counts.size()) {
      counts.resize(static_cast<std::size_t>(token) + 1, 0);
    }
    ++counts[static_cast<std::size_t>(token)];
  }
  const double total = static_cast<double>(tokens.numel());
  double entropy = 0.0;
  for (const std::int64_t count : counts) {
    if (count == 0) continue;
    const double p = static_cast<double>(count) / total;
    entropy -= p * std::log(p);
  }
  return entropy;
}

}  // namespace grove::data
