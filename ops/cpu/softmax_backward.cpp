// CPU kernels for the losses' gradients, cross_entropy_backward and nll_loss_backward
// (ops/softmax.h). One pass over the targets checks them and counts the rows that are not
// ignored (n); then each row of the (N, C) result is written on its own:
//   cross_entropy: grad / n * (exp(logits[i, c] - lse[i]) - [c == targets[i]])
//   nll_loss:      -grad / n at c == targets[i], 0 elsewhere
// and 0 on ignored rows. grad (0-d) is read here, when the kernel runs, never on the host. Rows
// are spread over threads when there are many; each element is computed by one thread, in
// double, so the result does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "ops/attributes.h"
#include "ops/cpu/softmax.h"

namespace grove::ops::cpu {
namespace {

// Inputs with fewer elements than this run on one thread (as the forward kernels).
constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;

// What the kernels capture: trivially copyable (Note [CPU streams simulate CUDA capture]).
template <typename T>
struct LossBackwardPlan {
  const T* grad = nullptr;  // 0-d
  const T* scores = nullptr;
  std::int64_t rows = 0, classes = 0, row_stride = 0, class_stride = 0;
  const std::int64_t* targets = nullptr;
  std::int64_t target_stride = 0, ignore_index = 0;
  const T* lse = nullptr;  // (N), cross_entropy_backward only
  std::int64_t lse_stride = 0;
  T* out = nullptr;  // (N, C), contiguous
  DType dtype = DType::Float32;
  bool cross_entropy = false;
};

template <typename T>
void run_loss_backward(const LossBackwardPlan<T>& plan) {
  check_targets(plan.cross_entropy ? "cross_entropy_backward" : "nll_loss_backward", plan.dtype,
                plan.targets, plan.rows, plan.classes, plan.target_stride, plan.ignore_index);
  std::int64_t counted = 0;
  for (std::int64_t i = 0; i < plan.rows; ++i) {
    counted += plan.targets[i * plan.target_stride] != plan.ignore_index ? 1 : 0;
  }
  // With no row counted every row is ignored and written as 0: the scale is never used.
  const double scale =
      counted == 0 ? 0.0 : static_cast<double>(plan.grad[0]) / static_cast<double>(counted);
#pragma omp parallel for schedule(static) if (plan.rows * plan.classes >= kParallelElements)
  for (std::int64_t i = 0; i < plan.rows; ++i) {
    T* out = plan.out + i * plan.classes;
    const std::int64_t target = plan.targets[i * plan.target_stride];
    if (target == plan.ignore_index || !plan.cross_entropy) {
      std::fill(out, out + plan.classes, T(0));
      if (target != plan.ignore_index) out[target] = static_cast<T>(-scale);
      continue;
    }
    const T* row = plan.scores + i * plan.row_stride;
    const double lse = static_cast<double>(plan.lse[i * plan.lse_stride]);
    for (std::int64_t c = 0; c < plan.classes; ++c) {
      const double probability = std::exp(static_cast<double>(row[c * plan.class_stride]) - lse);
      out[c] = static_cast<T>(scale * (probability - (c == target ? 1.0 : 0.0)));
    }
  }
}

// Inputs: grad, scores, targets, and lse for cross_entropy_backward.
template <typename T>
void launch_loss_backward(const OpCall& call, const Tensor& out) {
  const Tensor& scores = call.input(1);
  const Tensor& targets = call.input(2);
  LossBackwardPlan<T> plan;
  plan.grad = static_cast<const T*>(call.input(0).data_ptr());
  plan.scores = static_cast<const T*>(scores.data_ptr());
  plan.rows = scores.size(0);
  plan.classes = scores.size(1);
  plan.row_stride = scores.stride(0);
  plan.class_stride = scores.stride(1);
  plan.targets = static_cast<const std::int64_t*>(targets.data_ptr());
  plan.target_stride = targets.stride(0);
  plan.ignore_index = LossAttributes::from(call.attributes).ignore_index;
  plan.cross_entropy = call.kind == OpKind::CrossEntropyBackward;
  if (plan.cross_entropy) {
    plan.lse = static_cast<const T*>(call.input(3).data_ptr());
    plan.lse_stride = call.input(3).stride(0);
  }
  plan.out = static_cast<T*>(out.data_ptr());
  plan.dtype = scores.dtype();
  launch_cpu(current_stream(out.device()), [plan] { run_loss_backward(plan); });
}

void loss_backward(const OpCall& call, const OpOutputs& outputs) {
  dispatch_floating(outputs[0].dtype(), op_name(call.kind).data(),
                    [&]<typename T>() { launch_loss_backward<T>(call, outputs[0]); });
}

}  // namespace

void cross_entropy_backward(const OpCall& call, const OpOutputs& outputs) {
  loss_backward(call, outputs);
}

void nll_loss_backward(const OpCall& call, const OpOutputs& outputs) {
  loss_backward(call, outputs);
}

}  // namespace grove::ops::cpu
