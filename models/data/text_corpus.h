// The text corpus of the character-level GPT: files concatenated into one sequence of byte
// tokens with a vocabulary of 128 (ASCII), a train/validation split, and the sampler of random
// training windows.
//
// What it is not: a tokenizer with merges (BPE), and not Unicode-aware: bytes above 127 become
// token 127 (clipped and counted), so multi-byte UTF-8 characters become runs of 127.
//
// Invariants: every token is in 0..127; train and validation are consecutive views of one
// tensor (train first), so train.numel() + validation.numel() == tokens.numel().
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"

namespace grove::data {

inline constexpr std::int64_t kCorpusVocabSize = 128;

struct TextCorpus {
  Tensor tokens;                   // (N) int64, the whole text (or the token file's ids)
  Tensor train;                    // (N_train) int64: tokens[0, N_train), a view of tokens
  Tensor validation;               // (N - N_train) int64: the rest, a view of tokens
  std::int64_t clipped_bytes = 0;  // bytes > 127 that became 127
  std::vector<std::filesystem::path> paths;  // the files, in the order they were joined
  // true: byte tokens of text (0..127, decode() turns them back into text); false: the ids of a
  // token file, whose meaning (GPT-2's BPE, say) grove does not know.
  bool is_text = true;
  std::int64_t vocab_needed = kCorpusVocabSize;  // the largest token + 1 (a model needs as many)

  std::int64_t size() const { return tokens.defined() ? tokens.numel() : 0; }
};

// llm.c's token shard format: a header of 256 little-endian int32 (kTokenFileMagic, version 1,
// the token count, then zeros), then that many little-endian uint16 token ids. The same file
// trains grove, llm.c and PyTorch (nanoGPT reads the ids with numpy).
inline constexpr std::int32_t kTokenFileMagic = 20240520;
inline constexpr std::int64_t kTokenFileHeaderInts = 256;
// True if `path` is a regular file that starts with kTokenFileMagic.
bool is_token_file(const std::filesystem::path& path);
// Reads a token file and splits it as load_text_corpus does (is_text false). Throws
// grove::Error, naming the file, for a missing or unreadable file, a wrong magic or version, a
// size that is not the header's count of tokens, and no tokens.
TextCorpus load_token_file(const std::filesystem::path& path, double val_fraction = 0.1);

// "/usr/share/common-licenses": the default corpus's directory (Debian's base-files).
std::filesystem::path default_corpus_dir();

// The regular files directly under default_corpus_dir(), symbolic links skipped, sorted by name
// (byte order): exactly what the reference harness concatenates (237,320 bytes on Debian 12).
// Empty if the directory does not exist.
std::vector<std::filesystem::path> default_corpus_paths();

// Concatenates the files in the given order (no separator), clips bytes > 127 to 127, and splits:
// train is the first floor((1 - val_fraction) * N) tokens (in double, as Python's
// int(0.9 * len(data)) for val_fraction 0.1), validation the rest. Blocks on file I/O.
// Throws grove::Error when paths is empty, when a file cannot be read (naming it), when
// val_fraction is not in [0, 1), and when the text is empty.
TextCorpus load_text_corpus(const std::vector<std::filesystem::path>& paths,
                            double val_fraction = 0.1);

// A batch of training windows.
struct Windows {
  Tensor inputs;   // (B, T) int64: tokens[start_b + t]
  Tensor targets;  // (B, T) int64: tokens[start_b + t + 1], the next token of each input
};

// `batch` windows of `block` tokens each, at start offsets drawn uniformly from
// [0, N - block - 1] (every start whose target window fits) with the generator's Philox
// stream: two 32-bit words per window, mapped to the range by a 64x64->128 multiply (Lemire),
// so the same generator state gives the same windows on every machine. Advances the generator.
// tokens: a 1-d int64 CPU tensor. Throws grove::Error for batch or block < 1, for tokens that
// are not 1-d int64 on the CPU, and for a text too short for the block (fewer than block + 1
// tokens). Not during a graph capture (it reads tokens on the host and allocates).
Windows sample_windows(const Tensor& tokens, std::int64_t batch, std::int64_t block,
                       Generator& generator);

// The entropy of the tokens' frequencies, in nats: -sum p(c) log p(c) over the tokens c of
// `tokens` (1-d int64 on the CPU, values 0..65535). The loss of a model that knows only how
// often each token occurs; a language model should go well below it. 0 for no tokens.
double unigram_entropy(const Tensor& tokens);

// Text -> (len) int64 tokens: each byte, with bytes > 127 clipped to 127.
Tensor encode(std::string_view text);
// Tokens (any shape, int64, any device; read in row-major order) -> text, one byte per token.
// Throws grove::Error naming the first token outside 0..127.
std::string decode(const Tensor& tokens);

}  // namespace grove::data
