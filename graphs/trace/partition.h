// Splitting a joint forward-and-backward trace into a forward graph and a backward graph, and
// dropping what nothing needs.
//
// The joint graph comes from tracing a function and then the autograd engine on its outputs
// (graphs/compile/compile.cpp): its inputs are the function's inputs followed by one
// placeholder per output gradient, its outputs the function's outputs followed by the
// gradients, and its nodes [0, forward_end) are the forward's, the rest the backward's.
//
// Note [What the forward saves for the backward]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The backward graph reads three kinds of forward values:
//   - static inputs (parameters): it takes them as static inputs of its own, in place;
//   - constants the graph never writes: it keeps the same snapshot;
//   - everything else (inputs of the function, and values forward nodes computed): these are
//     the saved values. The forward returns the computed ones after the function's outputs;
//     the caller keeps the function's inputs itself. Both go to the backward as inputs, in the
//     order of `saved`, followed by the output gradients.
// Only values a live backward node reads are saved (a value the derivative rules never read is
// not, even if autograd's nodes held it), and nodes whose results nothing needs are dropped
// from both graphs. A node that writes in place stays when the memory it writes is a static
// input or an input (the caller sees the write) or is read later by a live node.
#pragma once

#include <cstdint>
#include <vector>

#include "graphs/ir/graph.h"

namespace grove::graphs {

struct Partition {
  Graph forward;   // (inputs..., statics) -> (outputs..., saved values computed by it...)
  Graph backward;  // (saved..., output gradients...), its statics -> (gradients...)
  // The joint graph's values the backward takes as inputs, in order (see the Note).
  std::vector<ValueId> saved;
  // For each saved value: the forward input it is (its index), or -1 when the forward
  // returns it (then it is forward output num_outputs + k, k counting such values in order).
  std::vector<std::int32_t> saved_input_index;
  // For each static input of the backward: the index of the same static in the joint graph.
  std::vector<std::int32_t> backward_statics;
  // For each static input of the forward: the index of the same static in the joint graph.
  std::vector<std::int32_t> forward_statics;
};

// `num_inputs`: the function's inputs (the joint graph's first inputs; the rest are output
// gradients); `num_outputs`: the function's outputs (the joint graph's first outputs; the rest
// are gradients); `forward_end`: the first backward node.
Partition partition_joint(const Graph& joint, std::size_t num_inputs, std::size_t num_outputs,
                          std::int32_t forward_end);

// `graph` without the nodes nothing needs (for a trace without a backward), named `name`.
Graph without_dead_nodes(const Graph& graph, std::string name);

}  // namespace grove::graphs
