// Graph: building the IR and the aliasing questions asked of it. Printing is in print.cpp, the
// verifier in verify.cpp.
#include "graphs/ir/graph.h"

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/op_table.h"
#include "ops/reduce.h"

namespace grove::graphs {
namespace {

Value value_like(const Tensor& tensor, ValueOrigin origin, std::int32_t index) {
  Value value;
  value.origin = origin;
  value.index = index;
  value.sizes = tensor.sizes();
  value.strides = tensor.strides();
  value.storage_offset = tensor.storage_offset();
  value.dtype = tensor.dtype();
  value.device = tensor.device();
  return value;
}

// Two values over one memory are the same tensor when they read it the same way (an in-place
// op's result is its target, written).
bool same_layout(const Value& a, const Value& b) {
  return IntArrayRef(a.sizes) == IntArrayRef(b.sizes) &&
         IntArrayRef(a.strides) == IntArrayRef(b.strides) && a.storage_offset == b.storage_offset &&
         a.dtype == b.dtype;
}

}  // namespace

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::Op:
      return "op";
    case NodeKind::View:
      return "view";
    case NodeKind::Copy:
      return "copy";
    case NodeKind::Write:
      return "write";
  }
  return "?";
}

const char* alias_kind_name(AliasKind kind) {
  switch (kind) {
    case AliasKind::None:
      return "none";
    case AliasKind::Input:
      return "input";
    case AliasKind::ViewOfInput:
      return "view of input";
    case AliasKind::Static:
      return "static input";
    case AliasKind::ViewOfStatic:
      return "view of static input";
    case AliasKind::Output:
      return "output";
    case AliasKind::ViewOfOutput:
      return "view of output";
  }
  return "?";
}

ValueId Graph::add_value(Value value) {
  values_.push_back(std::move(value));
  return static_cast<ValueId>(values_.size() - 1);
}

ValueId Graph::add_input(const Tensor& example, std::string name) {
  return add_input(value_like(example, ValueOrigin::Input, 0), std::move(name));
}

ValueId Graph::add_static(const Tensor& example, std::string name) {
  return add_static(value_like(example, ValueOrigin::Static, 0), std::move(name));
}

ValueId Graph::add_input(const Value& like, std::string name) {
  Value value = like;
  value.origin = ValueOrigin::Input;
  value.index = static_cast<std::int32_t>(inputs_.size());
  value.output = 0;
  value.base = kNoValue;
  value.name = std::move(name);
  const ValueId id = add_value(std::move(value));
  inputs_.push_back(id);
  return id;
}

ValueId Graph::add_static(const Value& like, std::string name) {
  Value value = like;
  value.origin = ValueOrigin::Static;
  value.index = static_cast<std::int32_t>(statics_.size());
  value.output = 0;
  value.base = kNoValue;
  value.name = std::move(name);
  const ValueId id = add_value(std::move(value));
  statics_.push_back(id);
  return id;
}

ValueId Graph::add_constant(Tensor snapshot) {
  const ValueId id = add_value(
      value_like(snapshot, ValueOrigin::Constant, static_cast<std::int32_t>(constants_.size())));
  constants_.push_back(id);
  constant_values_.push_back(std::move(snapshot));
  return id;
}

std::size_t written_inputs(const Node& node) {
  if (!node.in_place) return 0;
  return node.kind == NodeKind::Op ? ops::in_place_writes(node.op, node.attributes) : 1;
}

std::int32_t Graph::add_node(Node node, std::span<const Tensor> results) {
  std::vector<Value> described;
  described.reserve(results.size());
  for (const Tensor& result : results)
    described.push_back(value_like(result, ValueOrigin::Node, 0));
  return add_node(std::move(node), std::span<const Value>(described));
}

std::int32_t Graph::add_node(Node node, std::span<const Value> results) {
  const auto index = static_cast<std::int32_t>(nodes_.size());
  for (const ValueId input : node.inputs) {
    GROVE_INTERNAL_ASSERT(input >= 0 && input < static_cast<ValueId>(values_.size()), "graph ",
                          name_, ": node ", index, " reads undefined value ", input);
  }
  // Which of the node's results share memory with what it read (see Value::base).
  ValueId shared = kNoValue;
  if (node.kind == NodeKind::View || node.in_place) {
    GROVE_INTERNAL_ASSERT(!node.inputs.empty(), "graph ", name_, ": node ", index,
                          " views or writes an input but has none");
    shared = root(node.inputs[0]);
  }
  node.outputs.clear();
  for (std::size_t i = 0; i < results.size(); ++i) {
    Value value = results[i];
    value.origin = ValueOrigin::Node;
    value.index = index;
    value.output = static_cast<std::int32_t>(i);
    value.base = i == 0 ? shared : kNoValue;
    value.name.clear();
    node.outputs.push_back(add_value(std::move(value)));
  }
  nodes_.push_back(std::move(node));
  return index;
}

void Graph::set_outputs(std::vector<ValueId> outputs) {
  for (const ValueId output : outputs) {
    GROVE_INTERNAL_ASSERT(output >= 0 && output < static_cast<ValueId>(values_.size()), "graph ",
                          name_, ": output ", output, " is not a value");
  }
  outputs_ = std::move(outputs);
}

const Value& Graph::value(ValueId id) const {
  GROVE_INTERNAL_ASSERT(id >= 0 && id < static_cast<ValueId>(values_.size()), "graph ", name_,
                        ": no value ", id);
  return values_[static_cast<std::size_t>(id)];
}

ValueId Graph::root(ValueId id) const {
  const ValueId base = value(id).base;
  return base == kNoValue ? id : base;
}

OutputAlias Graph::output_alias(std::size_t output) const {
  GROVE_INTERNAL_ASSERT(output < outputs_.size(), "graph ", name_, ": no output ", output);
  const ValueId id = outputs_[output];
  const ValueId memory = root(id);
  // The caller's own tensors first: an input or a static input, or a view of one.
  const Value& root_value = value(memory);
  const bool same = same_layout(root_value, value(id));
  if (root_value.origin == ValueOrigin::Input) {
    return {same ? AliasKind::Input : AliasKind::ViewOfInput, root_value.index};
  }
  if (root_value.origin == ValueOrigin::Static) {
    return {same ? AliasKind::Static : AliasKind::ViewOfStatic, root_value.index};
  }
  // An earlier output over the same memory: the caller gets two handles on one buffer.
  for (std::size_t earlier = 0; earlier < output; ++earlier) {
    const ValueId other = outputs_[earlier];
    if (root(other) != memory) continue;
    return {same_layout(value(other), value(id)) ? AliasKind::Output : AliasKind::ViewOfOutput,
            static_cast<std::int32_t>(earlier)};
  }
  return {};
}

std::vector<bool> Graph::written_constants() const {
  std::vector<bool> written(constants_.size(), false);
  for (const Node& node : nodes_) {
    for (std::size_t w = 0; w < written_inputs(node); ++w) {
      const Value& root_value = value(root(node.inputs[w]));
      if (root_value.origin == ValueOrigin::Constant) {
        written[static_cast<std::size_t>(root_value.index)] = true;
      }
    }
  }
  return written;
}

void Graph::compact_uniform_constants() {
  const std::vector<bool> written = written_constants();
  for (std::size_t i = 0; i < constants_.size(); ++i) {
    const Tensor& snapshot = constant_values_[i];
    if (!written[i] || snapshot.numel() < 2 || !snapshot.is_contiguous()) continue;
    const Tensor flat = snapshot.reshape({snapshot.numel()});
    // NaN equals nothing, so a snapshot holding one is never taken for uniform; 0 and -0 are
    // equal but their reciprocals (+inf, -inf) are not, so a replay keeps every zero's sign.
    auto all_equal = [&](const Tensor& values) {
      const Tensor same = ops::eq(values, values.narrow(0, 0, 1)).to(DType::Int64);
      return ops::sum(same).to(kCPU).item<std::int64_t>() == values.numel();
    };
    if (!all_equal(flat)) continue;
    if (is_floating_point(snapshot.dtype())) {
      const Tensor one = full({}, 1.0, TensorOptions(flat.dtype()).device(flat.device()));
      if (!all_equal(ops::div(one, flat))) continue;
    }
    const DimVector ones(snapshot.sizes().size(), 1);
    constant_values_[i] = flat.narrow(0, 0, 1).clone().reshape(ones).expand(snapshot.sizes());
  }
}

}  // namespace grove::graphs
