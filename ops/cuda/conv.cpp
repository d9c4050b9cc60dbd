// CUDA kernels of conv2d, conv2d_backward_input and conv2d_backward_weight: cuDNN's convolution
// calls (cudnnConvolutionForward, ...BackwardData, ...BackwardFilter), one per op, on NCHW
// contiguous tensors; ops/cpu/conv.cpp and ops/cpu/conv_backward.cpp are the reference. The bias
// is added by cudnnAddTensor after the convolution. Each call runs the plan of its shape, from
// the plan cache (ops/cuda/conv_plans.cpp; Note [cuDNN convolution plans]), which benchmark mode
// (ops/cuda/conv_benchmark.cpp) may have measured. Library calls only, compiled by g++.
#include "ops/cuda/conv.h"

#include "core/cuda/cuda_device.h"
#include "core/stream.h"
#include "ops/attributes.h"
#include "ops/cuda/conv_plans.h"

namespace grove::ops::cuda {
namespace {

using convolution::CallBuffers;
using convolution::ConvPlan;
using convolution::Direction;
using convolution::find_plan;
using convolution::run_convolution;
using convolution::Scale;
using convolution::tensor_descriptor;
using convolution::workspace;
using convolution::Workspace;

void fill_zero(const Tensor& out) {
  GROVE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(),
                                   cuda_backend::cuda_stream(current_stream(out.device()))));
}

void check_dtype(const OpCall& call, DType dtype) {
  GROVE_INTERNAL_ASSERT(dtype == DType::Float32 || dtype == DType::Float64, op_name(call.kind),
                        " reached the CUDA kernel with dtype ", dtype);
}

}  // namespace

// input: (N, C, H, W), weight: (O, C/G, kH, kW), bias: (O) or none -> out: (N, O, Ho, Wo).
void conv2d(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  check_dtype(call, out.dtype());
  if (out.numel() == 0) return;
  const Device device = out.device();
  const cuda_backend::DeviceGuard guard(device);
  cudnnHandle_t handle = cudnn_handle(device);
  const Scale scale(out.dtype());
  const Tensor input = call.input(0).contiguous();
  const Tensor bias = call.inputs.size() == 3 ? call.input(2).contiguous() : Tensor();
  if (input.numel() == 0) {
    // No input channels, or an input plane that is all padding: every output is the bias (or 0).
    fill_zero(out);
    if (bias.defined()) {
      cudnnTensorDescriptor_t bias_descriptor =
          tensor_descriptor(out.dtype(), DimVector{1, out.size(1), 1, 1}, "conv2d");
      cudnnTensorDescriptor_t out_descriptor =
          tensor_descriptor(out.dtype(), out.sizes(), "conv2d");
      const cudnnStatus_t status =
          cudnnAddTensor(handle, scale.one(), bias_descriptor, bias.data_ptr(), scale.one(),
                         out_descriptor, out.data_ptr());
      cudnnDestroyTensorDescriptor(bias_descriptor);
      cudnnDestroyTensorDescriptor(out_descriptor);
      GROVE_CUDNN_CHECK(status);
    }
    return;
  }
  const Tensor weight = call.input(1).contiguous();
  const CallBuffers buffers{input.data_ptr(), weight.data_ptr(), out.data_ptr()};
  // A named local, not a temporary argument: find_plan returns a reference into its cache.
  const Conv2dAttributes geometry = Conv2dAttributes::from(call.attributes);
  const ConvPlan& plan = find_plan(handle, Direction::Forward, out.dtype(), device, input.sizes(),
                                   weight.sizes(), out.sizes(), geometry, buffers, "conv2d");
  const Workspace space = workspace(plan.workspace_bytes, device);
  GROVE_CUDNN_CHECK(run_convolution(handle, Direction::Forward, plan, plan.algorithm, buffers,
                                    space.data, plan.workspace_bytes, scale));
  if (bias.defined()) {
    GROVE_CUDNN_CHECK(cudnnAddTensor(handle, scale.one(), plan.bias, bias.data_ptr(), scale.one(),
                                     plan.output, out.data_ptr()));
  }
}

// grad: (N, O, Ho, Wo), weight: (O, C/G, kH, kW) -> out: input_sizes (N, C, H, W).
void conv2d_backward_input(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  check_dtype(call, out.dtype());
  if (out.numel() == 0) return;
  const Device device = out.device();
  const cuda_backend::DeviceGuard guard(device);
  const Tensor grad = call.input(0).contiguous();
  if (grad.numel() == 0) return fill_zero(out);  // no output channels: nothing flows back
  cudnnHandle_t handle = cudnn_handle(device);
  const Scale scale(out.dtype());
  const Tensor weight = call.input(1).contiguous();
  const CallBuffers buffers{weight.data_ptr(), grad.data_ptr(), out.data_ptr()};
  const Conv2dAttributes geometry = Conv2dAttributes::from(call.attributes);
  const ConvPlan& plan =
      find_plan(handle, Direction::BackwardData, out.dtype(), device, out.sizes(), weight.sizes(),
                grad.sizes(), geometry, buffers, "conv2d_backward_input");
  const Workspace space = workspace(plan.workspace_bytes, device);
  GROVE_CUDNN_CHECK(run_convolution(handle, Direction::BackwardData, plan, plan.algorithm, buffers,
                                    space.data, plan.workspace_bytes, scale));
}

// grad: (N, O, Ho, Wo), input: (N, C, H, W) -> out: weight_sizes (O, C/G, kH, kW).
void conv2d_backward_weight(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  check_dtype(call, out.dtype());
  if (out.numel() == 0) return;
  const Device device = out.device();
  const cuda_backend::DeviceGuard guard(device);
  const Tensor input = call.input(1).contiguous();
  // An empty batch, or an input plane that is all padding: the sum has no nonzero term.
  if (input.numel() == 0) return fill_zero(out);
  cudnnHandle_t handle = cudnn_handle(device);
  const Scale scale(out.dtype());
  const Tensor grad = call.input(0).contiguous();
  const CallBuffers buffers{input.data_ptr(), grad.data_ptr(), out.data_ptr()};
  const Conv2dAttributes geometry = Conv2dAttributes::from(call.attributes);
  const ConvPlan& plan =
      find_plan(handle, Direction::BackwardFilter, out.dtype(), device, input.sizes(), out.sizes(),
                grad.sizes(), geometry, buffers, "conv2d_backward_weight");
  const Workspace space = workspace(plan.workspace_bytes, device);
  GROVE_CUDNN_CHECK(run_convolution(handle, Direction::BackwardFilter, plan, plan.algorithm,
                                    buffers, space.data, plan.workspace_bytes, scale));
}

}  // namespace grove::ops::cuda
