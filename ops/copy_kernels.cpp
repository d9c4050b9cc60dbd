// cat, fill_ and copy_ for every device (ops/copy_kernels.h).
#include "ops/copy_kernels.h"

#include "core/copy_kernel.h"
#include "ops/attributes.h"

namespace grove::ops::any_device {

void cat(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::int64_t dim = wrap_dim(CatAttributes::from(call.attributes).dim, out.dim(), "cat");
  std::int64_t start = 0;
  for (const Tensor& input : call.inputs) {
    const std::int64_t length = input.sizes()[dim];
    if (length > 0) launch_copy(out.narrow(dim, start, length), input);
    start += length;
  }
}

void fill(const OpCall& call, const OpOutputs& outputs) {
  launch_fill(outputs[0], call.attributes.scalar);
}

void copy(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = outputs[0];
  const Tensor& src = call.input(1);
  launch_copy(x, src.sizes() == x.sizes() ? src : src.expand(x.sizes()));
}

}  // namespace grove::ops::any_device
