// grove's autograd, in one include: grad mode, backward and grad(), tensor hooks, gradcheck.
//
//   Tensor w = randn({3, 2}).requires_grad_();
//   Tensor loss = ops::sum(ops::relu(ops::matmul(x, w)));
//   loss.backward();          // w.grad() now holds d loss / d w
//   { autograd::NoGradGuard no_grad; ops::add_(w, w.grad(), -0.1); }   // an SGD step
//
// How it works: autograd/recorder.cpp (building the graph), autograd/engine.h (running it),
// autograd/derivatives.h (the rule of every op).
#pragma once

#include <functional>

#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/gradcheck.h"
#include "autograd/node.h"

namespace grove::autograd {

// The node that computes `tensor`'s gradient history (its grad_fn), or null for a leaf.
NodePtr grad_fn(const Tensor& tensor);

// Runs `hook` on the gradient of `tensor` each time backward computes it (before it is
// accumulated, for a leaf). The hook may return a replacement gradient of the same shape and
// dtype, or an undefined tensor to leave it as it is.
void register_hook(const Tensor& tensor, GradHook hook);

// Runs `hook` on a leaf after backward has accumulated a gradient into its grad().
void register_post_accumulate_grad_hook(const Tensor& leaf,
                                        std::function<void(const Tensor& leaf)> hook);

}  // namespace grove::autograd
