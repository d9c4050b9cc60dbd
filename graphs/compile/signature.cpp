// Signature of a compiled call. See Note [The signature of a compiled call] in signature.h.
#include "graphs/compile/signature.h"

#include <sstream>

#include "autograd/grad_mode.h"
#include "ops/autocast.h"

namespace grove::graphs {

Signature Signature::of(const std::vector<Tensor>& inputs) {
  Signature signature;
  signature.grad_mode = autograd::GradMode::is_enabled();
  signature.autocast = ops::autocast_dtype();
  signature.inputs.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    GROVE_CHECK(input.defined(), "compiled function: input ", i,
                " is undefined; pass defined tensors");
    Input entry{DimVector(input.sizes()), DimVector(input.strides()), input.dtype(), input.device(),
                input.requires_grad()};
    for (std::size_t j = 0; j < i; ++j) {
      if (inputs[j].storage() != input.storage()) continue;
      entry.shares_memory_with = static_cast<std::int32_t>(j);
      entry.same_view = inputs[j].sizes() == input.sizes() &&
                        inputs[j].strides() == input.strides() &&
                        inputs[j].storage_offset() == input.storage_offset() &&
                        inputs[j].dtype() == input.dtype();
      break;
    }
    signature.inputs.push_back(std::move(entry));
  }
  return signature;
}

std::string Signature::describe() const {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Input& input = inputs[i];
    out << (i == 0 ? "" : ", ") << dtype_name(input.dtype) << input.sizes;
    if (IntArrayRef(input.strides) != IntArrayRef(contiguous_strides(input.sizes))) {
      out << " strides " << input.strides;
    }
    if (!input.device.is_cpu()) out << " on " << input.device;
    if (input.requires_grad) out << " requires_grad";
    if (input.shares_memory_with >= 0) {
      out << (input.same_view ? " = x" : " shares x") << input.shares_memory_with;
    }
  }
  out << "), grad " << (grad_mode ? "on" : "off");
  if (autocast) out << ", autocast " << *autocast;
  return out.str();
}

}  // namespace grove::graphs
