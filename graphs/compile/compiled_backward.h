// The autograd node of a compiled call: its backward runs the trace's backward graph.
#pragma once

#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "core/tensor.h"

namespace grove::graphs {

class TracedFunction;

// How a compiled call's backward runs its graph: through the tree manager (warm-up, record,
// replay), or interpreted outside it (the call that traced, whose forward ran eagerly:
// Note [Exactly one eager call's effects] in traced_function.h).
enum class BackwardRoute : std::uint8_t { Managed, Interpreted };

// Makes `outputs[differentiable[j]]` (j in order) the outputs of one node whose backward runs
// `traced`'s backward graph on `saved` and the output gradients, and sends its results along
// `edges`. `where` is the compiled call's source location; `name` the node's.
void attach_compiled_backward(std::shared_ptr<TracedFunction> traced, std::vector<Tensor>& outputs,
                              const std::vector<std::size_t>& differentiable,
                              std::vector<Tensor> saved, std::vector<autograd::Edge> edges,
                              std::string name, const std::source_location& where,
                              BackwardRoute route);

}  // namespace grove::graphs
