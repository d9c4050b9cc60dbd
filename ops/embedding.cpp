// embedding: argument checks, output shape and the user function; the kernel (with the index
// checks of Note [Index checks during capture]) is in ops/cpu/embedding.cpp; the CUDA kernels,
// which cannot check on the host, are in ops/cuda/embedding.cu
// (Note [Out-of-range indices on the GPU]).
#include "ops/embedding.h"

#include "ops/attributes.h"
#include "ops/cpu/embedding.h"
#include "ops/cuda/embedding.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

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

// grad: (*indices.sizes(), D) floating point, indices: int64 (*) -> (num_weights, D).
void infer_embedding_backward(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& grad = call.input(0);
  const Tensor& indices = call.input(1);
  const std::int64_t num_weights = EmbeddingBackwardAttributes::from(call.attributes).num_weights;
  GROVE_OP_CHECK(call, indices.dtype() == DType::Int64, "expected int64 indices, but got ",
                 indices.dtype(), "; convert them with to(int64)");
  GROVE_OP_CHECK(call, is_floating_point(grad.dtype()), "expected a floating-point grad, but got ",
                 grad.dtype());
  GROVE_OP_CHECK(call,
                 grad.dim() == indices.dim() + 1 &&
                     IntArrayRef(grad.sizes().data(), static_cast<std::size_t>(indices.dim())) ==
                         indices.sizes(),
                 "expected grad of shape (*indices' shape ", indices.sizes(),
                 ", features), but got ", grad.sizes());
  GROVE_OP_CHECK(call, num_weights >= 0, "expected num_weights >= 0, but got ", num_weights);
  outputs.add({num_weights, grad.size(-1)}, grad.dtype());
}

// The weight's rows may be of any dtype (a lookup copies them).
constexpr InputSpec kEmbeddingInputs[] = {{"weight", InputDTypes::Any},
                                          {"indices", InputDTypes::Index}};
constexpr InputSpec kEmbeddingBackwardInputs[] = {{"grad"}, {"indices", InputDTypes::Index}};
// No attributes.
constexpr OpEntry kEmbedding{.kind = OpKind::Embedding,
                             .inputs = kEmbeddingInputs,
                             .infer = infer_embedding,
                             .cpu = cpu::embedding,
                             .cuda = GROVE_CUDA_KERNEL(embedding)};
// EmbeddingBackwardAttributes (ops/attributes.h).
constexpr OpEntry kEmbeddingBackward{.kind = OpKind::EmbeddingBackward,
                                     .inputs = kEmbeddingBackwardInputs,
                                     .infer = infer_embedding_backward,
                                     .cpu = cpu::embedding_backward,
                                     .cuda = GROVE_CUDA_KERNEL(embedding_backward),
                                     .describe = describe_as<EmbeddingBackwardAttributes>};

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices) {
  return dispatch(kEmbedding, {weight, indices})[0];
}

Tensor embedding_backward(const Tensor& grad, const Tensor& indices, std::int64_t num_weights) {
  return dispatch(kEmbeddingBackward, {grad, indices},
                  EmbeddingBackwardAttributes{num_weights}.to_attributes())[0];
}

std::span<const OpEntry> embedding_entries() {
  static constexpr OpEntry kEntries[] = {kEmbedding, kEmbeddingBackward};
  return kEntries;
}

}  // namespace grove::ops
