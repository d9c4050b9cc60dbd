// Shape ops: argument checks, output shapes and the user functions. cat, tril, triu and
// one_hot go through dispatch with kernels in ops/cpu/shape.cpp and ops/cuda/shape.cu; stack is
// unsqueeze + cat; split, chunk and flatten only build views (narrow, reshape) and launch
// nothing.
#include "ops/shape.h"

#include <vector>

#include "ops/attributes.h"
#include "ops/cpu/shape.h"
#include "ops/cuda/shape.h"
#include "ops/dispatch.h"
#include "ops/op_table.h"

namespace grove::ops {
namespace {

void infer_cat(const OpCall& call, OutputSpecs& outputs) {
  GROVE_OP_CHECK(call, !call.inputs.empty(), "expected at least one tensor");
  const Tensor& first = call.input(0);
  GROVE_OP_CHECK(call, first.dim() > 0,
                 "cannot concatenate 0-d tensors; unsqueeze them first (or use stack)");
  const std::int64_t dim_in = CatAttributes::from(call.attributes).dim;
  GROVE_OP_CHECK(call, dim_in >= -first.dim() && dim_in < first.dim(), "dimension ", dim_in,
                 " is out of range for tensors of ", first.dim(), " dims (expected a value in [",
                 -first.dim(), ", ", first.dim() - 1, "])");
  const std::int64_t dim = dim_in < 0 ? dim_in + first.dim() : dim_in;
  DimVector sizes(first.sizes());
  sizes[static_cast<std::size_t>(dim)] = 0;
  for (std::size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& input = call.input(i);
    GROVE_OP_CHECK(call, input.dtype() == first.dtype(),
                   "expected tensors of one dtype, but tensor 0 is ", first.dtype(), " and tensor ",
                   i, " is ", input.dtype());
    GROVE_OP_CHECK(call, input.dim() == first.dim(), "expected tensors of ", first.dim(),
                   " dims, but tensor ", i, " has shape ", input.sizes());
    for (std::int64_t d = 0; d < first.dim(); ++d) {
      GROVE_OP_CHECK(call, d == dim || input.sizes()[d] == first.sizes()[d],
                     "sizes must match except in dimension ", dim, ", but tensor 0 has shape ",
                     first.sizes(), " and tensor ", i, " has shape ", input.sizes());
    }
    sizes[static_cast<std::size_t>(dim)] += input.sizes()[dim];
  }
  outputs.add(sizes, first.dtype());
}

void infer_triangle(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& x = call.input(0);
  GROVE_OP_CHECK(call, x.dim() >= 2,
                 "expected a tensor of at least 2 dims (..., rows, columns), but got ", x.dim(),
                 " dims");
  outputs.add(x.sizes(), x.dtype());
}

void infer_one_hot(const OpCall& call, OutputSpecs& outputs) {
  const Tensor& indices = call.input(0);
  const std::int64_t classes = OneHotAttributes::from(call.attributes).num_classes;
  GROVE_OP_CHECK(call, indices.dtype() == DType::Int64, "expected int64 indices, but got ",
                 indices.dtype());
  GROVE_OP_CHECK(call, classes >= 0, "expected num_classes >= 0, but got ", classes,
                 " (it cannot be inferred from the data: that would read the indices on the host)");
  // With no classes every index is out of range; the kernels would see no output element to
  // check it against, so refuse here, on every device alike.
  GROVE_OP_CHECK(call, classes > 0 || indices.numel() == 0,
                 "num_classes 0 leaves no valid index for ", indices.numel(),
                 " indices; expected num_classes > 0");
  DimVector sizes(indices.sizes());
  sizes.push_back(classes);
  outputs.add(sizes, DType::Int64);
}

// cat: inputs are the tensors; CatAttributes. tril, triu: TriangleAttributes. one_hot:
// OneHotAttributes (ops/attributes.h).
// Any number of tensors, none included: infer_cat refuses none with its own message, naming what
// cat needs.
constexpr InputSpec kCatInputs[] = {{"tensors", InputDTypes::AnyShared, /*optional=*/true}};
constexpr InputSpec kTriangleInputs[] = {{"x", InputDTypes::Any}};
constexpr InputSpec kOneHotInputs[] = {{"indices", InputDTypes::Index}};

// cat: CatAttributes.
constexpr OpEntry kCat{.kind = OpKind::Cat,
                       .inputs = kCatInputs,
                       .infer = infer_cat,
                       .cpu = cpu::cat,
                       .cuda = GROVE_CUDA_KERNEL(cat),
                       .describe = describe_as<CatAttributes>,
                       .repeats_last_input = true};
constexpr OpEntry kTril{.kind = OpKind::Tril,
                        .inputs = kTriangleInputs,
                        .infer = infer_triangle,
                        .cpu = cpu::triangle,
                        .cuda = GROVE_CUDA_KERNEL(triangle),
                        .describe = describe_as<TriangleAttributes>};
constexpr OpEntry kTriu{.kind = OpKind::Triu,
                        .inputs = kTriangleInputs,
                        .infer = infer_triangle,
                        .cpu = cpu::triangle,
                        .cuda = GROVE_CUDA_KERNEL(triangle),
                        .describe = describe_as<TriangleAttributes>};
constexpr OpEntry kOneHot{.kind = OpKind::OneHot,
                          .inputs = kOneHotInputs,
                          .infer = infer_one_hot,
                          .cpu = cpu::one_hot,
                          .cuda = GROVE_CUDA_KERNEL(one_hot),
                          .describe = describe_as<OneHotAttributes>};

// "float32[2, 3]" for messages of the ops that do not go through dispatch.
std::string describe(const Tensor& x) {
  return str(x.dtype(), x.sizes());
}

}  // namespace

Tensor cat(std::span<const Tensor> tensors, std::int64_t dim) {
  return dispatch(kCat, tensors, CatAttributes{dim}.to_attributes())[0];
}

Tensor cat(std::initializer_list<Tensor> tensors, std::int64_t dim) {
  return cat(std::span<const Tensor>(tensors.begin(), tensors.size()), dim);
}

Tensor stack(std::span<const Tensor> tensors, std::int64_t dim) {
  GROVE_CHECK(!tensors.empty(), "stack: expected at least one tensor");
  GROVE_CHECK(tensors[0].defined(), "stack: tensor 0 is undefined");
  const std::int64_t positions = tensors[0].dim() + 1;  // where the new dim can go
  GROVE_CHECK(dim >= -positions && dim < positions, "stack: dimension ", dim,
              " is out of range for stacking tensors of ", positions - 1,
              " dims (expected a value in [", -positions, ", ", positions - 1, "]; tensor 0 is ",
              describe(tensors[0]), ")");
  std::vector<Tensor> unsqueezed;
  unsqueezed.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    GROVE_CHECK(tensors[i].defined(), "stack: tensor ", i, " is undefined");
    GROVE_CHECK(tensors[i].sizes() == tensors[0].sizes(),
                "stack: expected tensors of one shape, but tensor 0 is ", describe(tensors[0]),
                " and tensor ", i, " is ", describe(tensors[i]));
    unsqueezed.push_back(tensors[i].unsqueeze(dim));
  }
  return cat(unsqueezed, dim < 0 ? dim + positions : dim);
}

Tensor stack(std::initializer_list<Tensor> tensors, std::int64_t dim) {
  return stack(std::span<const Tensor>(tensors.begin(), tensors.size()), dim);
}

std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim) {
  GROVE_CHECK(x.dim() > 0, "split: cannot split a 0-d tensor (", describe(x), ")");
  const std::int64_t d = wrap_dim(dim, x.dim(), "split");
  const std::int64_t size = x.sizes()[d];
  GROVE_CHECK(split_size > 0 || (split_size == 0 && size == 0),
              "split: expected split_size > 0 (or 0 for an empty dimension), but got ", split_size,
              " for dimension ", d, " of ", describe(x));
  std::vector<Tensor> pieces;
  if (size == 0) {
    pieces.push_back(x.narrow(d, 0, 0));
    return pieces;
  }
  for (std::int64_t start = 0; start < size; start += split_size) {
    pieces.push_back(x.narrow(d, start, std::min(split_size, size - start)));
  }
  return pieces;
}

std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim) {
  GROVE_CHECK(chunks > 0, "chunk: expected chunks > 0, but got ", chunks, " (input ", describe(x),
              ")");
  GROVE_CHECK(x.dim() > 0, "chunk: cannot chunk a 0-d tensor (", describe(x), ")");
  const std::int64_t d = wrap_dim(dim, x.dim(), "chunk");
  const std::int64_t size = x.sizes()[d];
  if (size == 0) return std::vector<Tensor>(static_cast<std::size_t>(chunks), x.narrow(d, 0, 0));
  // ceil(size / chunks), written so that a huge chunks cannot overflow (size + chunks - 1 did).
  return split(x, size / chunks + (size % chunks != 0 ? 1 : 0), d);
}

Tensor flatten(const Tensor& x, std::int64_t start_dim, std::int64_t end_dim) {
  if (x.dim() == 0) return x.reshape({1});
  const std::int64_t start = wrap_dim(start_dim, x.dim(), "flatten");
  const std::int64_t end = wrap_dim(end_dim, x.dim(), "flatten");
  GROVE_CHECK(start <= end, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim,
              " for ", describe(x));
  DimVector sizes;
  for (std::int64_t d = 0; d < start; ++d) sizes.push_back(x.sizes()[d]);
  std::int64_t merged = 1;
  for (std::int64_t d = start; d <= end; ++d) merged *= x.sizes()[d];
  sizes.push_back(merged);
  for (std::int64_t d = end + 1; d < x.dim(); ++d) sizes.push_back(x.sizes()[d]);
  return x.reshape(sizes);
}

Tensor tril(const Tensor& x, std::int64_t diagonal) {
  return dispatch(kTril, {x}, TriangleAttributes{diagonal}.to_attributes())[0];
}

Tensor triu(const Tensor& x, std::int64_t diagonal) {
  return dispatch(kTriu, {x}, TriangleAttributes{diagonal}.to_attributes())[0];
}

Tensor one_hot(const Tensor& indices, std::int64_t num_classes) {
  return dispatch(kOneHot, {indices}, OneHotAttributes{num_classes}.to_attributes())[0];
}

std::span<const OpEntry> shape_entries() {
  static constexpr OpEntry kEntries[] = {kCat, kTril, kTriu, kOneHot};
  return kEntries;
}

}  // namespace grove::ops
