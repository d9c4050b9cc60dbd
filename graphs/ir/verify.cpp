// Graph::verify: is the graph well formed? See its comment in graphs/ir/graph.h.
#include <sstream>

#include "core/error.h"
#include "graphs/ir/graph.h"
#include "ops/op_table.h"

namespace grove::graphs {
namespace {

// A tensor of `value`'s sizes, dtype and device for an op's `infer`, which reads only metadata.
// It owns at most one element (a 0-d tensor expanded, or an empty one), except for the inputs
// of ops that write in place, which refuse operands whose elements share memory (a fused
// optimizer update): those get memory of their own, never read.
Tensor stand_in(const Value& value, bool dense) {
  const TensorOptions options = TensorOptions(value.dtype).device(value.device);
  if (dense || product(value.sizes) == 0) return empty(value.sizes, options);
  return zeros({}, options).expand(value.sizes);
}

}  // namespace

void Graph::verify() const {
  const SuspendCoreObservers quiet;  // the stand-ins are the verifier's own business
  auto fail_prefix = [this](std::size_t node) {
    return "graph " + name_ + ": node " + std::to_string(node) + " (" +
           node_text(static_cast<std::int32_t>(node)) + "): ";
  };
  // 1. Inputs and statics define themselves, in order.
  for (std::size_t i = 0; i < inputs_.size(); ++i) {
    const Value& v = value(inputs_[i]);
    GROVE_CHECK(v.origin == ValueOrigin::Input && v.index == static_cast<std::int32_t>(i), "graph ",
                name_, ": input ", i, " is value ", inputs_[i],
                ", which is not defined as that input");
  }
  for (std::size_t i = 0; i < statics_.size(); ++i) {
    const Value& v = value(statics_[i]);
    GROVE_CHECK(v.origin == ValueOrigin::Static && v.index == static_cast<std::int32_t>(i),
                "graph ", name_, ": static input ", i, " is value ", statics_[i],
                ", which is not defined as that static input");
  }
  // 2. Nodes in order: inputs defined before, outputs defined here and only here.
  std::vector<bool> defined(values_.size(), false);
  for (const ValueId id : inputs_) defined[static_cast<std::size_t>(id)] = true;
  for (const ValueId id : statics_) defined[static_cast<std::size_t>(id)] = true;
  for (std::size_t i = 0; i < constants_.size(); ++i) {
    const ValueId id = constants_[i];
    GROVE_CHECK(value(id).origin == ValueOrigin::Constant &&
                    value(id).index == static_cast<std::int32_t>(i),
                "graph ", name_, ": constant ", i, " is value ", id,
                ", which is not defined as that constant");
    defined[static_cast<std::size_t>(id)] = true;
  }
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const Node& node = nodes_[n];
    for (const ValueId input : node.inputs) {
      GROVE_CHECK(input >= 0 && input < static_cast<ValueId>(values_.size()) &&
                      defined[static_cast<std::size_t>(input)],
                  fail_prefix(n), "reads value ", input, " before it is defined");
    }
    for (std::size_t o = 0; o < node.outputs.size(); ++o) {
      const ValueId output = node.outputs[o];
      GROVE_CHECK(output >= 0 && output < static_cast<ValueId>(values_.size()), fail_prefix(n),
                  "output ", o, " is not a value");
      const Value& v = value(output);
      GROVE_CHECK(!defined[static_cast<std::size_t>(output)], fail_prefix(n), "output ", o, " (",
                  value_name(output), ") is defined twice");
      GROVE_CHECK(v.origin == ValueOrigin::Node && v.index == static_cast<std::int32_t>(n) &&
                      v.output == static_cast<std::int32_t>(o),
                  fail_prefix(n), "output ", o, " (", value_name(output),
                  ") says it is defined elsewhere");
      defined[static_cast<std::size_t>(output)] = true;
    }
    // 3. Shapes: what the node does to its inputs' shapes.
    switch (node.kind) {
      case NodeKind::Op: {
        std::vector<Tensor> stand_ins;
        for (const ValueId input : node.inputs) {
          stand_ins.push_back(stand_in(value(input), node.in_place));
        }
        const ops::OpCall call{node.op, stand_ins, node.attributes};
        ops::OutputSpecs specs;
        if (!stand_ins.empty()) specs.device = stand_ins[0].device();
        try {
          ops::op_entry(node.op).infer(call, specs);
        } catch (const Error& error) {
          GROVE_CHECK(false, fail_prefix(n), "its op refuses the recorded inputs: ", error.what());
        }
        if (specs.in_place) {
          GROVE_CHECK(node.in_place && node.outputs.size() == 1, fail_prefix(n),
                      "the op writes its input 0 in place, so it must have one output marked "
                      "in place");
          const Value& target = value(node.inputs[0]);
          const Value& result = value(node.outputs[0]);
          GROVE_CHECK(IntArrayRef(result.sizes) == IntArrayRef(target.sizes) &&
                          result.dtype == target.dtype,
                      fail_prefix(n), "an in-place result must have its target's shape ",
                      describe_value(node.inputs[0]));
          break;
        }
        GROVE_CHECK(!node.in_place, fail_prefix(n), "is marked in place, but ", node.op,
                    " makes new outputs");
        GROVE_CHECK(static_cast<int>(node.outputs.size()) == specs.count, fail_prefix(n), "has ",
                    node.outputs.size(), " outputs, but ", node.op, " makes ", specs.count);
        for (std::size_t o = 0; o < node.outputs.size(); ++o) {
          const Value& v = value(node.outputs[o]);
          const ops::OutputSpecs::Spec& spec = specs.specs[o];
          GROVE_CHECK(IntArrayRef(v.sizes) == IntArrayRef(spec.sizes) && v.dtype == spec.dtype,
                      fail_prefix(n), "output ", o, " is recorded as ", dtype_name(v.dtype),
                      v.sizes, ", but ", node.op, " of these inputs makes ", dtype_name(spec.dtype),
                      IntArrayRef(spec.sizes));
        }
        break;
      }
      case NodeKind::View: {
        GROVE_CHECK(node.inputs.size() == 1 && node.outputs.size() == 1, fail_prefix(n),
                    "a view reads one value and makes one");
        const Value& source = value(node.inputs[0]);
        const Value& result = value(node.outputs[0]);
        GROVE_CHECK(result.dtype == source.dtype && result.device == source.device, fail_prefix(n),
                    "a view keeps its source's dtype and device");
        GROVE_CHECK(root(node.outputs[0]) == root(node.inputs[0]), fail_prefix(n),
                    "a view must share its source's memory");
        break;
      }
      case NodeKind::Copy: {
        GROVE_CHECK(node.inputs.size() == 1 && node.outputs.size() == 1, fail_prefix(n),
                    "a copy reads one value and makes one");
        GROVE_CHECK(
            IntArrayRef(value(node.outputs[0]).sizes) == IntArrayRef(value(node.inputs[0]).sizes),
            fail_prefix(n), "a copy keeps its source's sizes");
        break;
      }
      case NodeKind::Write: {
        const std::size_t expected_inputs = node.write == WriteKind::Copy ? 2 : 1;
        GROVE_CHECK(
            node.inputs.size() == expected_inputs && node.outputs.size() == 1 && node.in_place,
            fail_prefix(n), "a ", node.write == WriteKind::Copy ? "copy_" : "fill_", " reads ",
            expected_inputs, " value(s) and writes the first in place");
        const Value& target = value(node.inputs[0]);
        GROVE_CHECK(IntArrayRef(value(node.outputs[0]).sizes) == IntArrayRef(target.sizes),
                    fail_prefix(n), "a write's result has its target's shape");
        if (node.write == WriteKind::Copy) {
          const Value& source = value(node.inputs[1]);
          GROVE_CHECK(source.sizes.size() <= target.sizes.size(), fail_prefix(n), "the source ",
                      describe_value(node.inputs[1]), " does not broadcast to the target ",
                      describe_value(node.inputs[0]));
          const std::size_t lead = target.sizes.size() - source.sizes.size();
          for (std::size_t d = 0; d < source.sizes.size(); ++d) {
            GROVE_CHECK(source.sizes[d] == 1 || source.sizes[d] == target.sizes[lead + d],
                        fail_prefix(n), "the source ", describe_value(node.inputs[1]),
                        " does not broadcast to the target ", describe_value(node.inputs[0]));
          }
        }
        break;
      }
    }
  }
  // 4. Outputs are defined values.
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const ValueId id = outputs_[i];
    GROVE_CHECK(id >= 0 && id < static_cast<ValueId>(values_.size()) &&
                    defined[static_cast<std::size_t>(id)],
                "graph ", name_, ": output ", i, " is value ", id, ", which no node defines");
  }
}

}  // namespace grove::graphs
