// CPU kernels for cross_entropy and nll_loss and their gradients (ops/softmax.h), the pair of
// ops/cuda/loss.cu; declared in ops/cpu/softmax.h with softmax.
//
// Forward: a row of the (N, C) scores at a time, as softmax does (ops/cpu/softmax.cpp);
// cross_entropy keeps lse = log(sum(exp(row))) per row for its gradient, and sums its rows'
// losses in fixed blocks, so the mean does not depend on the thread count.
//
// Backward: one pass over the targets checks them and counts the rows that are not
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
#include "ops/cpu/softmax_rows.h"
#include "ops/loss_layout.h"

namespace grove::ops::cpu {
namespace {

using rows::log_sum_exp;

// Inputs with fewer elements than this run on one thread (thread start-up would dominate).
constexpr std::int64_t kParallelElements = std::int64_t{1} << 15;
// cross_entropy sums its rows' losses in this many blocks, then adds the blocks in order.
constexpr int kLossBlocks = 64;

// The loss's inputs (ops/loss_layout.h) and their dtype, for the targets' error messages.
template <typename T>
struct LossArgs : LossLayout<T> {
  DType dtype;
};

template <typename T>
LossArgs<T> loss_args(const OpCall& call) {
  const Tensor& scores = call.input(0);
  return {loss_layout<T>(call, scores, call.input(1)), scores.dtype()};
}

template <typename T>
void launch_cross_entropy(const LossArgs<T>& args, T* loss, T* lse, Stream stream) {
  launch_cpu(stream, [=] {
    check_targets("cross_entropy", args.dtype, args.targets, args.rows, args.classes,
                  args.target_stride, args.ignore_index);
    double partial[kLossBlocks] = {};
    std::int64_t counted[kLossBlocks] = {};
    const std::int64_t block = (args.rows + kLossBlocks - 1) / kLossBlocks;
#pragma omp parallel for schedule(static) if (args.rows * args.classes >= kParallelElements)
    for (int b = 0; b < kLossBlocks; ++b) {
      const std::int64_t end = std::min(args.rows, (b + 1) * block);
      for (std::int64_t i = b * block; i < end; ++i) {
        const T* row = args.scores + i * args.row_stride;
        const double row_lse = log_sum_exp(row, args.classes, args.class_stride);
        lse[i] = static_cast<T>(row_lse);
        const std::int64_t target = args.targets[i * args.target_stride];
        if (target == args.ignore_index) continue;
        partial[b] += row_lse - static_cast<double>(row[target * args.class_stride]);
        ++counted[b];
      }
    }
    double total = 0.0;
    std::int64_t count = 0;
    for (int b = 0; b < kLossBlocks; ++b) {
      total += partial[b];
      count += counted[b];
    }
    *loss = static_cast<T>(total / static_cast<double>(count));  // 0 / 0 = NaN: none counted
  });
}

template <typename T>
void launch_nll_loss(const LossArgs<T>& args, T* loss, Stream stream) {
  launch_cpu(stream, [=] {
    check_targets("nll_loss", args.dtype, args.targets, args.rows, args.classes, args.target_stride,
                  args.ignore_index);
    double total = 0.0;
    std::int64_t count = 0;
    for (std::int64_t i = 0; i < args.rows; ++i) {
      const std::int64_t target = args.targets[i * args.target_stride];
      if (target == args.ignore_index) continue;
      total -= static_cast<double>(args.scores[i * args.row_stride + target * args.class_stride]);
      ++count;
    }
    *loss = static_cast<T>(total / static_cast<double>(count));  // 0 / 0 = NaN: none counted
  });
}

}  // namespace

void check_targets(const char* op, DType dtype, const std::int64_t* targets, std::int64_t rows,
                   std::int64_t classes, std::int64_t target_stride, std::int64_t ignore_index) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const std::int64_t target = targets[i * target_stride];
    GROVE_CHECK(target == ignore_index || (target >= 0 && target < classes), op, ": target ",
                target, " at position ", i, " is out of range for ", classes,
                " classes (expected a value in [0, ", classes, ") or ignore_index ", ignore_index,
                ") (inputs: ", dtype, "[", rows, ", ", classes, "], int64[", rows, "])");
  }
}

void cross_entropy(const OpCall& call, const OpOutputs& outputs) {
  const Stream stream = current_stream(outputs[0].device());
  dispatch_floating(outputs[0].dtype(), "cross_entropy", [&]<typename T>() {
    launch_cross_entropy(loss_args<T>(call), static_cast<T*>(outputs[0].data_ptr()),
                         static_cast<T*>(outputs[1].data_ptr()), stream);
  });
}

void nll_loss(const OpCall& call, const OpOutputs& outputs) {
  const Stream stream = current_stream(outputs[0].device());
  dispatch_floating(outputs[0].dtype(), "nll_loss", [&]<typename T>() {
    launch_nll_loss(loss_args<T>(call), static_cast<T*>(outputs[0].data_ptr()), stream);
  });
}

// --- gradients ---

namespace {

// What the kernels capture: trivially copyable (Note [CPU streams simulate CUDA capture]).
template <typename T>
struct LossBackwardPlan : LossLayout<T> {
  const T* grad = nullptr;  // 0-d
  const T* lse = nullptr;   // (N), cross_entropy_backward only
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
  LossBackwardPlan<T> plan{loss_layout<T>(call, scores, call.input(2))};
  plan.grad = static_cast<const T*>(call.input(0).data_ptr());
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
