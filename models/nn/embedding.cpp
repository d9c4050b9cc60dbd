// nn::Embedding; see embedding.h.
#include "models/nn/embedding.h"

#include "core/error.h"
#include "models/nn/init.h"
#include "ops/embedding.h"

namespace grove::nn {

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim)
    : Module("Embedding"), num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {
  GROVE_CHECK(num_embeddings > 0 && embedding_dim > 0, "Embedding: expected positive ",
              "num_embeddings and embedding_dim, got ", num_embeddings, " and ", embedding_dim);
  init::normal_(register_parameter("weight", empty({num_embeddings, embedding_dim})), 0.0, 1.0);
}

Tensor Embedding::forward(const Tensor& indices) {
  GROVE_CHECK(indices.dtype() == DType::Int64, "Embedding: expected int64 indices, got ",
              indices.dtype(), "; convert them with to(DType::Int64)");
  return ops::embedding(weight(), indices);  // (*) -> (*, embedding_dim)
}

std::string Embedding::extra_repr() const {
  return std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_);
}

}  // namespace grove::nn
