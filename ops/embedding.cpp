// embedding: argument checks, output shape and the user function; the kernel (with the index
// checks of Note [Index checks during capture]) is in ops/cpu/embedding.cpp.
#include "ops/embedding.h"

#include "ops/cpu/embedding.h"
#include "ops/dispatch.h"

namespace grove::ops {
namespace {

void infer_embedding(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& weight = call.input(0);
  const Tensor& indices = call.input(1);
  GROVE_OP_CHECK(call, weight.dim() == 2, "expected a 2-d weight (rows, features), but got ",
                 weight.dim(), " dims");
  GROVE_OP_CHECK(call, indices.dtype() == DType::Int64, "expected int64 indices, but got ",
                 indices.dtype(), "; convert them with to(int64)");
  DimVector sizes(indices.sizes());
  sizes.push_back(weight.sizes()[1]);
  outputs.add(sizes, weight.dtype());
}

// Inputs: weight, indices. No attributes.
constexpr OpEntry kEmbedding{OpKind::Embedding, infer_embedding, cpu::embedding, nullptr};

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return dispatch(kEmbedding, {weight, indices})[0];
}

}  // namespace grove::ops
