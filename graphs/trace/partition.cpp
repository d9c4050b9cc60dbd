// Partition of a joint trace and dead-node removal. See
// Note [What the forward saves for the backward] in partition.h.
#include "graphs/trace/partition.h"

#include <functional>

#include "core/error.h"

namespace grove::graphs {
namespace {

using Resolve = std::function<ValueId(ValueId source_value)>;

// Marks the live nodes of [begin, end), walking backwards from the values in `needed` (by value
// id), and adds what the live nodes read to `needed`. See the Note for what keeps a write.
std::vector<bool> mark_live(const Graph& graph, std::int32_t begin, std::int32_t end,
                            std::vector<bool>& needed) {
  std::vector<bool> live(graph.nodes().size(), false);
  std::vector<bool> root_needed(graph.values().size(), false);
  for (std::size_t v = 0; v < needed.size(); ++v) {
    if (needed[v])
      root_needed[static_cast<std::size_t>(graph.root(static_cast<ValueId>(v)))] = true;
  }
  for (std::int32_t n = end - 1; n >= begin; --n) {
    const Node& node = graph.nodes()[static_cast<std::size_t>(n)];
    bool is_live = false;
    for (const ValueId output : node.outputs)
      is_live = is_live || needed[static_cast<std::size_t>(output)];
    for (std::size_t w = 0; !is_live && w < written_inputs(node); ++w) {
      const ValueId memory = graph.root(node.inputs[w]);
      const ValueOrigin origin = graph.value(memory).origin;
      is_live = origin == ValueOrigin::Input || origin == ValueOrigin::Static ||
                root_needed[static_cast<std::size_t>(memory)];
    }
    if (!is_live) continue;
    live[static_cast<std::size_t>(n)] = true;
    for (const ValueId input : node.inputs) {
      needed[static_cast<std::size_t>(input)] = true;
      root_needed[static_cast<std::size_t>(graph.root(input))] = true;
    }
  }
  return live;
}

// Copies the live nodes of [begin, end) of `source` into `target`. `map` takes source value ids
// to target ones (kNoValue: not there yet); a value a node reads that is not mapped is handed
// to `resolve`, which adds it to `target` (as an input, static or constant).
void copy_live(const Graph& source, const std::vector<bool>& live, std::int32_t begin,
               std::int32_t end, std::vector<ValueId>& map, Graph& target, const Resolve& resolve) {
  auto mapped = [&](ValueId id) {
    ValueId& slot = map[static_cast<std::size_t>(id)];
    if (slot == kNoValue) slot = resolve(id);
    return slot;
  };
  for (std::int32_t n = begin; n < end; ++n) {
    if (!live[static_cast<std::size_t>(n)]) continue;
    Node node = source.nodes()[static_cast<std::size_t>(n)];
    const std::vector<ValueId> source_outputs = node.outputs;
    for (ValueId& input : node.inputs) input = mapped(input);
    std::vector<Value> results;
    for (const ValueId output : source_outputs) results.push_back(source.value(output));
    const std::int32_t index = target.add_node(std::move(node), std::span<const Value>(results));
    const Node& added = target.nodes()[static_cast<std::size_t>(index)];
    for (std::size_t o = 0; o < source_outputs.size(); ++o) {
      map[static_cast<std::size_t>(source_outputs[o])] = added.outputs[o];
    }
  }
}

// Constants that some node of `graph` in [begin, end) writes in place.
std::vector<bool> written_constants(const Graph& graph, std::int32_t begin, std::int32_t end) {
  std::vector<bool> written(graph.constants().size(), false);
  for (std::int32_t n = begin; n < end; ++n) {
    const Node& node = graph.nodes()[static_cast<std::size_t>(n)];
    for (std::size_t w = 0; w < written_inputs(node); ++w) {
      const Value& memory = graph.value(graph.root(node.inputs[w]));
      if (memory.origin == ValueOrigin::Constant) {
        written[static_cast<std::size_t>(memory.index)] = true;
      }
    }
  }
  return written;
}

// Adds `id` of `source` to `target` as what it is in `source`: a static (recorded in
// `statics`), or a constant sharing the snapshot. Inputs and node values are the caller's to
// place; reaching one here is a bug.
ValueId add_leaf(const Graph& source, ValueId id, Graph& target,
                 std::vector<std::int32_t>& statics) {
  const Value& v = source.value(id);
  switch (v.origin) {
    case ValueOrigin::Static:
      statics.push_back(v.index);
      return target.add_static(v, v.name);
    case ValueOrigin::Constant:
      return target.add_constant(source.constant_value(static_cast<std::size_t>(v.index)));
    case ValueOrigin::Input:
    case ValueOrigin::Node:
      break;
  }
  GROVE_INTERNAL_ASSERT(false, "partition: value ", source.value_name(id),
                        " reached a graph that has no place for it");
  return kNoValue;
}

}  // namespace

Partition partition_joint(const Graph& joint, std::size_t num_inputs, std::size_t num_outputs,
                          std::int32_t forward_end) {
  const auto num_nodes = static_cast<std::int32_t>(joint.nodes().size());
  GROVE_INTERNAL_ASSERT(num_inputs <= joint.inputs().size() &&
                            num_outputs <= joint.outputs().size() && forward_end <= num_nodes,
                        "partition_joint: the split does not fit the graph");
  // A constant the forward writes is saved as the forward left it. One only the backward writes
  // (a slice's gradient buffer, zeros() then a copy into part of it) is the backward's own: its
  // graph gets the snapshot and the interpreter writes a fresh copy of it on every run.
  const std::vector<bool> constant_written = written_constants(joint, 0, forward_end);
  auto forward_defined = [&](ValueId id) {
    const Value& v = joint.value(id);
    switch (v.origin) {
      case ValueOrigin::Input:
        return static_cast<std::size_t>(v.index) < num_inputs;
      case ValueOrigin::Static:
      case ValueOrigin::Constant:
        return true;
      case ValueOrigin::Node:
        return v.index < forward_end;
    }
    return false;
  };

  // 1. The backward: what its live nodes need from the forward.
  std::vector<bool> needed_backward(joint.values().size(), false);
  for (std::size_t i = num_outputs; i < joint.outputs().size(); ++i) {
    needed_backward[static_cast<std::size_t>(joint.outputs()[i])] = true;
  }
  const std::vector<bool> live_backward = mark_live(joint, forward_end, num_nodes, needed_backward);

  Partition parts{
      Graph(joint.name() + "_forward"), Graph(joint.name() + "_backward"), {}, {}, {}, {}};
  std::vector<bool> needed_forward(joint.values().size(), false);
  for (std::size_t v = 0; v < joint.values().size(); ++v) {
    const auto id = static_cast<ValueId>(v);
    if (!needed_backward[v] || !forward_defined(id)) continue;
    const Value& value = joint.value(id);
    if (value.origin == ValueOrigin::Static) continue;
    if (value.origin == ValueOrigin::Constant &&
        !constant_written[static_cast<std::size_t>(value.index)]) {
      continue;
    }
    parts.saved.push_back(id);
    parts.saved_input_index.push_back(value.origin == ValueOrigin::Input ? value.index : -1);
    if (value.origin != ValueOrigin::Input) needed_forward[v] = true;
  }

  // 2. The forward: the function's outputs and the saved values it computes.
  for (std::size_t i = 0; i < num_outputs; ++i) {
    needed_forward[static_cast<std::size_t>(joint.outputs()[i])] = true;
  }
  const std::vector<bool> live_forward = mark_live(joint, 0, forward_end, needed_forward);
  {
    Graph& forward = parts.forward;
    std::vector<ValueId> map(joint.values().size(), kNoValue);
    for (std::size_t i = 0; i < num_inputs; ++i) {
      const ValueId id = joint.inputs()[i];
      map[static_cast<std::size_t>(id)] = forward.add_input(joint.value(id), joint.value(id).name);
    }
    const Resolve resolve = [&](ValueId id) {
      return add_leaf(joint, id, forward, parts.forward_statics);
    };
    copy_live(joint, live_forward, 0, forward_end, map, forward, resolve);
    std::vector<ValueId> outputs;
    auto output_of = [&](ValueId id) {
      ValueId& slot = map[static_cast<std::size_t>(id)];
      if (slot == kNoValue) slot = resolve(id);
      return slot;
    };
    for (std::size_t i = 0; i < num_outputs; ++i) outputs.push_back(output_of(joint.outputs()[i]));
    for (std::size_t k = 0; k < parts.saved.size(); ++k) {
      if (parts.saved_input_index[k] < 0) outputs.push_back(output_of(parts.saved[k]));
    }
    forward.set_outputs(std::move(outputs));
  }

  // 3. The backward graph: saved values and output gradients in, gradients out.
  {
    Graph& backward = parts.backward;
    std::vector<ValueId> map(joint.values().size(), kNoValue);
    for (std::size_t k = 0; k < parts.saved.size(); ++k) {
      map[static_cast<std::size_t>(parts.saved[k])] =
          backward.add_input(joint.value(parts.saved[k]), "saved" + std::to_string(k));
    }
    for (std::size_t i = num_inputs; i < joint.inputs().size(); ++i) {
      const ValueId id = joint.inputs()[i];
      map[static_cast<std::size_t>(id)] = backward.add_input(joint.value(id), joint.value(id).name);
    }
    const Resolve resolve = [&](ValueId id) {
      return add_leaf(joint, id, backward, parts.backward_statics);
    };
    copy_live(joint, live_backward, forward_end, num_nodes, map, backward, resolve);
    std::vector<ValueId> outputs;
    for (std::size_t i = num_outputs; i < joint.outputs().size(); ++i) {
      ValueId& slot = map[static_cast<std::size_t>(joint.outputs()[i])];
      if (slot == kNoValue) slot = resolve(joint.outputs()[i]);
      outputs.push_back(slot);
    }
    backward.set_outputs(std::move(outputs));
  }
  return parts;
}

Graph without_dead_nodes(const Graph& graph, std::string name) {
  std::vector<bool> needed(graph.values().size(), false);
  for (const ValueId output : graph.outputs()) needed[static_cast<std::size_t>(output)] = true;
  const auto num_nodes = static_cast<std::int32_t>(graph.nodes().size());
  const std::vector<bool> live = mark_live(graph, 0, num_nodes, needed);
  Graph result(std::move(name));
  std::vector<ValueId> map(graph.values().size(), kNoValue);
  for (const ValueId id : graph.inputs()) {
    map[static_cast<std::size_t>(id)] = result.add_input(graph.value(id), graph.value(id).name);
  }
  // Every static stays, in order, so the caller passes the same statics as to the trace.
  for (const ValueId id : graph.statics()) {
    map[static_cast<std::size_t>(id)] = result.add_static(graph.value(id), graph.value(id).name);
  }
  std::vector<std::int32_t> unused;
  const Resolve resolve = [&](ValueId id) { return add_leaf(graph, id, result, unused); };
  copy_live(graph, live, 0, num_nodes, map, result, resolve);
  std::vector<ValueId> outputs;
  for (const ValueId output : graph.outputs()) {
    ValueId& slot = map[static_cast<std::size_t>(output)];
    if (slot == kNoValue) slot = resolve(output);
    outputs.push_back(slot);
  }
  result.set_outputs(std::move(outputs));
  return result;
}

}  // namespace grove::graphs
