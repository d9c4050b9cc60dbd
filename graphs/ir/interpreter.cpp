// Interpreter: node by node, the same calls the traced function made. See interpreter.h.
#include "graphs/ir/interpreter.h"

#include "core/error.h"
#include "ops/op_table.h"

namespace grove::graphs {
namespace {

// The view `node` made of `source` at trace time, made again of the tensor `source` is now.
Tensor remake_view(const Node& node, const Tensor& source, const Value& result) {
  const IntArrayRef args = node.args;
  switch (node.derived) {
    case DerivedKind::Reshape:
      return source.view(result.sizes);
    case DerivedKind::Permute:
      return source.permute(args);
    case DerivedKind::Slice: {
      // args = {dim, start, step}; the traced result's length along dim gives the end.
      const std::int64_t dim = args[0];
      const std::int64_t start = args[1];
      const std::int64_t step = args[2];
      const std::int64_t length = result.sizes[static_cast<std::size_t>(dim)];
      return source.slice(dim, start, start + (length == 0 ? 0 : (length - 1) * step + 1), step);
    }
    case DerivedKind::Select:
      return source.select(args[0], args[1]);
    case DerivedKind::Expand:
      return source.expand(result.sizes);
    case DerivedKind::AsStrided:
      return source.as_strided(result.sizes, result.strides, args[0]);
    case DerivedKind::Copy:
      break;
  }
  GROVE_INTERNAL_ASSERT(false, "remake_view: a Copy is not a view");
  return {};
}

// A copy as clone, contiguous and to() make it: same values, the result's dtype and device.
Tensor remake_copy(const Tensor& source, const Value& result) {
  Tensor copy = source;
  if (copy.device() != result.device) copy = copy.to(result.device);
  if (copy.dtype() != result.dtype) copy = copy.to(result.dtype);
  // to() of the same device and dtype returns its input; the trace saw a new tensor.
  if (copy.impl() == source.impl()) copy = source.clone();
  return copy;
}

void check_arguments(const Graph& graph, std::span<const Tensor> given,
                     const std::vector<ValueId>& expected, const char* what) {
  GROVE_CHECK(given.size() == expected.size(), "graph ", graph.name(), ": expected ",
              expected.size(), " ", what, ", but got ", given.size());
  for (std::size_t i = 0; i < given.size(); ++i) {
    const Value& v = graph.value(expected[i]);
    GROVE_CHECK(given[i].defined() && given[i].sizes() == IntArrayRef(v.sizes) &&
                    given[i].dtype() == v.dtype && given[i].device() == v.device,
                "graph ", graph.name(), ": ", what, " ", i, " must be ", dtype_name(v.dtype),
                v.sizes, " on ", v.device, " as traced, but got ",
                given[i].defined() ? std::string(dtype_name(given[i].dtype())) : "undefined",
                given[i].defined() ? given[i].sizes() : IntArrayRef{}, given[i].defined() ? " on " : "",
                given[i].defined() ? given[i].device() : kCPU);
  }
}

}  // namespace

Interpreter::Interpreter(const Graph& graph)
    : graph_(graph), constant_is_written_(graph.constants().size(), false) {
  for (const Node& node : graph.nodes()) {
    if (!node.in_place) continue;
    const Value& root = graph.value(graph.root(node.inputs[0]));
    if (root.origin == ValueOrigin::Constant) {
      constant_is_written_[static_cast<std::size_t>(root.index)] = true;
    }
  }
}

std::vector<Tensor> Interpreter::run(std::span<const Tensor> inputs,
                                     std::span<const Tensor> statics) {
  check_arguments(graph_, inputs, graph_.inputs(), "inputs");
  check_arguments(graph_, statics, graph_.statics(), "static inputs");
  std::vector<Tensor> env(graph_.values().size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    env[static_cast<std::size_t>(graph_.inputs()[i])] = inputs[i];
  }
  for (std::size_t i = 0; i < statics.size(); ++i) {
    env[static_cast<std::size_t>(graph_.statics()[i])] = statics[i];
  }
  for (std::size_t i = 0; i < graph_.constants().size(); ++i) {
    const Tensor& constant = graph_.constant_value(i);
    env[static_cast<std::size_t>(graph_.constants()[i])] =
        constant_is_written_[i] ? constant.clone() : constant;
  }
  for (const Node& node : graph_.nodes()) {
    switch (node.kind) {
      case NodeKind::Op: {
        scratch_.clear();
        for (const ValueId input : node.inputs) {
          scratch_.push_back(env[static_cast<std::size_t>(input)]);
        }
        const ops::OpOutputs outputs =
            ops::dispatch(ops::op_entry(node.op), scratch_, node.attributes);
        for (std::size_t o = 0; o < node.outputs.size(); ++o) {
          env[static_cast<std::size_t>(node.outputs[o])] = outputs[o];
        }
        break;
      }
      case NodeKind::View:
        env[static_cast<std::size_t>(node.outputs[0])] =
            remake_view(node, env[static_cast<std::size_t>(node.inputs[0])],
                        graph_.value(node.outputs[0]));
        break;
      case NodeKind::Copy:
        env[static_cast<std::size_t>(node.outputs[0])] = remake_copy(
            env[static_cast<std::size_t>(node.inputs[0])], graph_.value(node.outputs[0]));
        break;
      case NodeKind::Write: {
        const Tensor& target = env[static_cast<std::size_t>(node.inputs[0])];
        if (node.write == WriteKind::Copy) {
          target.copy_(env[static_cast<std::size_t>(node.inputs[1])]);
        } else {
          target.fill_(node.value);
        }
        env[static_cast<std::size_t>(node.outputs[0])] = target;
        break;
      }
    }
  }
  scratch_.clear();
  std::vector<Tensor> results;
  results.reserve(graph_.outputs().size());
  for (const ValueId output : graph_.outputs()) {
    results.push_back(env[static_cast<std::size_t>(output)]);
  }
  return results;
}

}  // namespace grove::graphs
