// nn::Embedding: a lookup table of num_embeddings rows of embedding_dim values
// (ops::embedding), PyTorch's nn.Embedding without padding_idx, max_norm or sparse gradients.
//
// Parameter: weight (num_embeddings, embedding_dim) ~ N(0, 1) from the CPU default generator.
// Indices outside [0, num_embeddings) are errors raised by the op; see
// Note [Index checks during capture] in ops/embedding.h.
// Contract: as nn::Module (not thread-safe); forward allocates its output (a gather).
#pragma once

#include <cstdint>

#include "models/nn/module.h"

namespace grove::nn {

class Embedding : public Module {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim);

  // indices: int64 (*) -> (*, embedding_dim)
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;

  const Tensor& weight() const { return parameter("weight"); }

 private:
  std::int64_t num_embeddings_;
  std::int64_t embedding_dim_;
};

}  // namespace grove::nn
