// See Note [Reduced-precision compute] in ops/reduced_compute.h.
#include "ops/reduced_compute.h"

#include "core/copy_kernel.h"

namespace grove::ops {
namespace {

// A float32 tensor of `source`'s sizes on its device; holding its values when `fill`.
Tensor widened(const Tensor& source, bool fill) {
  Tensor wide = empty(source.sizes(), TensorOptions(DType::Float32).device(source.device()));
  if (fill) launch_copy(wide, source);
  return wide;
}

}  // namespace

bool needs_widening(const OpCall& call, const OpOutputs& outputs, bool kernel_takes_reduced) {
  if (kernel_takes_reduced) return false;
  for (const Tensor& input : call.inputs) {
    if (is_reduced_float(input.dtype())) return true;
  }
  for (const Tensor& output : outputs.span()) {
    if (is_reduced_float(output.dtype())) return true;
  }
  return false;
}

void run_widened(KernelFn kernel, const OpCall& call, const OpOutputs& outputs,
                 std::size_t written) {
  // 1. Inputs: each 16-bit one widened (exactly) into a float32 temporary.
  std::vector<Tensor> inputs(call.inputs.begin(), call.inputs.end());
  for (Tensor& input : inputs) {
    if (is_reduced_float(input.dtype())) input = widened(input, true);
  }
  // 2. Outputs: an in-place op writes its (widened) input 0; any other 16-bit output gets an
  //    empty float32 temporary.
  OpOutputs wide_outputs;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& output = outputs[i];
    if (written > 0 && i == 0) {
      wide_outputs.push_back(inputs[0]);
    } else {
      wide_outputs.push_back(is_reduced_float(output.dtype()) ? widened(output, false) : output);
    }
  }
  // 3. The float32 op.
  kernel(OpCall{call.kind, inputs, call.attributes}, wide_outputs);
  // 4. Round what the op wrote into the 16-bit tensors it was given.
  for (std::size_t w = 0; w < written; ++w) {
    if (is_reduced_float(call.inputs[w].dtype())) launch_copy(call.inputs[w], inputs[w]);
  }
  for (std::size_t i = written > 0 ? 1 : 0; i < outputs.size(); ++i) {
    if (is_reduced_float(outputs[i].dtype())) launch_copy(outputs[i], wide_outputs[i]);
  }
}

}  // namespace grove::ops
