// The backward engine: runs a backward graph from some outputs to the leaves.
//
// backward(outputs, grad_outputs) accumulates into the grad() of every leaf that requires
// gradients and is reachable; grad(outputs, inputs, grad_outputs) returns the gradients of
// `inputs` instead and accumulates into no leaf's grad() (hooks, including retain_grad()'s,
// still run on the nodes it goes through). Both run on the calling thread and stream, with grad
// mode off (grove does not build graphs of gradients), and return once every backward op has
// been launched.
//
// Order: a node runs once all the gradients flowing into it are summed (dependency counts
// from a walk of the graph); among ready nodes, the most recently created runs first, and leaf
// accumulation before anything else. Without retain_graph, each node frees its saved tensors
// right after it runs, and a second backward through it throws.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace grove::autograd {

// Gradients of `outputs` (one per output; an undefined entry means ones for a one-element
// output) accumulate into the leaves.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              bool retain_graph = false);

struct GradOptions {
  bool retain_graph = false;
  // An input that no output depends on gets an undefined gradient instead of an error.
  bool allow_unused = false;
};

// d(outputs)/d(inputs) weighted by grad_outputs (vector-Jacobian products), one per input:
// zeros for an input that is part of the graph but receives no gradient; an error (or, with
// allow_unused, an undefined tensor) for an input the outputs do not depend on.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, GradOptions options = {});

// How many backward() passes (not grad() calls) this thread has run; compile() tells a
// function that runs its own backward (a whole training step) from one that does not.
std::uint64_t backward_passes_on_this_thread();

}  // namespace grove::autograd
