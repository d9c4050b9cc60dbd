// graphs::Graph: the IR that compile() traces a function into, partitions and interprets.
//
// A graph is a straight-line program over values:
//   - values (Value) are tensors as the trace saw them: sizes, strides, storage offset, dtype,
//     device, and `base`, the value whose memory they share (a view's source, an in-place op's
//     target), so aliasing is explicit;
//   - graph inputs are the tensors the caller passes; static inputs are the tensors the traced
//     function reached without being given them (parameters, buffers, constants in the closure):
//     a replay uses them in place, where they are;
//   - constants are tensors the function made without an op (zeros, full, from_vector): the
//     graph keeps a snapshot of their values as the trace first saw them;
//   - nodes run in order; each reads values defined earlier and defines its outputs once. A node
//     is a dispatched op (NodeKind::Op: its OpKind and OpAttributes, replayed through the op
//     table), or something core did without dispatch (Note [Core observers] in
//     core/core_observer.h): a view (NodeKind::View), a copy (NodeKind::Copy: clone, contiguous,
//     to) or an in-place write (NodeKind::Write: Tensor::copy_, Tensor::fill_);
//   - outputs are values; output_alias() says when one is an input, a static input or another
//     output, or a view of one (the tree manager and the partition need to know).
// In-place ops and writes define a new value for the written tensor (base: the target's base),
// so every later reader names the version it reads; the interpreter maps both to one tensor.
//
// It prints as text, one line per node, like a PyTorch FX graph:
//   graph mlp(%x: float32[128, 784], static %w: float32[256, 784], static %b: float32[256]) {
//     %3: float32[128, 256] = linear(%x, %w, %b)
//     %4: float32[128, 256] = relu(%3)
//     return (%4)
//   }
// and as Graphviz DOT; verify() checks that a graph is well formed (see its comment).
//
// Not thread-safe; a Graph is built by one tracer and read-only afterwards.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/core_observer.h"
#include "core/tensor.h"
#include "ops/dispatch.h"

namespace grove::graphs {

using ValueId = std::int32_t;
inline constexpr ValueId kNoValue = -1;

enum class ValueOrigin : std::uint8_t {
  Input,     // the caller passes it
  Static,    // the function found it (a parameter): used in place, where it is
  Constant,  // the function made it without an op (zeros, from_vector): a snapshot in the graph
  Node,      // a node's output
};

struct Value {
  ValueOrigin origin = ValueOrigin::Node;
  std::int32_t index = 0;   // Input/Static/Constant: the position in inputs()/statics()/
                            // constants(); Node: the node
  std::int32_t output = 0;  // Node: which of the node's outputs
  DimVector sizes;
  DimVector strides;
  std::int64_t storage_offset = 0;
  DType dtype = DType::Float32;
  Device device = kCPU;
  ValueId base = kNoValue;  // the root value whose memory this one shares; kNoValue: its own
  std::string name;         // printed as %name (inputs and statics); empty: %<id>
};

enum class NodeKind : std::uint8_t {
  Op,     // a dispatched op: op, attributes
  View,   // a view core made: derived (Reshape, Permute, Slice, Select, Expand, AsStrided), args
  Copy,   // a copy core made (clone, contiguous, to): derived == DerivedKind::Copy
  Write,  // core's in-place write into inputs[0]: write (Copy from inputs[1], or Fill value)
};
const char* node_kind_name(NodeKind kind);

struct Node {
  NodeKind kind = NodeKind::Op;
  ops::OpKind op = ops::OpKind::Add;           // Op
  ops::OpAttributes attributes;                // Op (a random op's generator is kept as traced)
  DerivedKind derived = DerivedKind::Reshape;  // View, Copy
  DimVector args;                              // View: DerivedKind's arguments
  WriteKind write = WriteKind::Copy;           // Write
  Scalar value;                                // Write (Fill)
  bool in_place = false;  // Op writing inputs[0], and every Write: outputs[0] is that tensor
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
};

// How many leading inputs a node writes in place: 0 if it is not in place, else 1, or n for an
// optimizer update of n parameters (ops::in_place_writes;
// Note [One update over many parameters] in ops/optim.h). Only inputs[0] gets a new value (outputs[0]); the others are
// written where they are, which the interpreter, running nodes in order, gets right, and which
// every pass asking what a node writes must ask here.
std::size_t written_inputs(const Node& node);

// How an output relates to what the caller already holds. See Graph::output_alias.
enum class AliasKind : std::uint8_t {
  None,          // memory of its own
  Input,         // is graph input `index`
  ViewOfInput,   // shares graph input `index`'s memory
  Static,        // is static input `index`
  ViewOfStatic,  // shares static input `index`'s memory
  Output,        // is output `index` (an earlier one)
  ViewOfOutput,  // shares an earlier output `index`'s memory
};
struct OutputAlias {
  AliasKind kind = AliasKind::None;
  std::int32_t index = -1;
};
const char* alias_kind_name(AliasKind kind);

class Graph {
 public:
  explicit Graph(std::string name = "graph") : name_(std::move(name)) {}

  // Adds a graph input or a static input shaped like `example`.
  ValueId add_input(const Tensor& example, std::string name = {});
  ValueId add_static(const Tensor& example, std::string name = {});
  // Adds a constant holding `snapshot` (the graph keeps it; the caller must not change it).
  ValueId add_constant(Tensor snapshot);
  // The same, described by a value of another graph (its origin, index, base and name are
  // replaced): how a partition copies values from the joint graph into its parts.
  ValueId add_input(const Value& like, std::string name = {});
  ValueId add_static(const Value& like, std::string name = {});
  // Appends `node` (its `outputs` are filled in here) whose results are `results`, as the trace
  // saw them; returns the node's index. Its inputs must be defined already.
  std::int32_t add_node(Node node, std::span<const Tensor> results);
  std::int32_t add_node(Node node, std::span<const Value> results);
  void set_outputs(std::vector<ValueId> outputs);

  const std::string& name() const { return name_; }
  const std::vector<Value>& values() const { return values_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& statics() const { return statics_; }
  const std::vector<ValueId>& constants() const { return constants_; }
  const Tensor& constant_value(std::size_t index) const { return constant_values_.at(index); }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  const Value& value(ValueId id) const;

  // The root of `id`'s memory: itself, or the value it views or writes in place.
  ValueId root(ValueId id) const;
  OutputAlias output_alias(std::size_t output) const;

  // "%3", "%x": how `id` is named in the text form.
  std::string value_name(ValueId id) const;
  // "%3: float32[128, 256]"
  std::string describe_value(ValueId id) const;
  // One node's line of the text form, without indentation.
  std::string node_text(std::int32_t node) const;
  // The graph as text (see the file comment), and as a Graphviz DOT graph.
  std::string to_text() const;
  std::string to_dot() const;

  // Checks that the graph is well formed; throws grove::Error naming the node and what is wrong:
  //   - every value is defined once: an input, a static input, or one output of one node;
  //   - every node reads only values defined before it, and every output is defined;
  //   - an Op node's outputs have the sizes and dtypes its op's `infer` gives for its inputs'
  //     (run on stand-in tensors of the recorded shapes, which allocate at most one element);
  //     an in-place op's and a Write's output has its target's shape;
  //   - a View's output has its source's dtype and device and shares its source's memory; a Copy
  //     keeps its source's sizes; a Write's source broadcasts to its target.
  void verify() const;

  // Per constant: whether a node writes it in place (through itself or a view of it).
  std::vector<bool> written_constants() const;
  // Keeps each constant the graph writes in place, and whose elements are all equal (the zeros
  // autograd makes for the gradient of a slice or a select), as one element broadcast to its
  // sizes instead of a full snapshot. A written constant is cloned at the start of every run
  // (graphs/ir/interpreter.h), and a clone of the broadcast is the same dense tensor, so runs
  // are unchanged while the snapshot's memory is freed. Reads the constants' values (a device
  // synchronisation): call it once, after the trace, before the graph runs. Constants only read
  // are left as they are: they are used in place, with their recorded strides.
  void compact_uniform_constants();

 private:
  ValueId add_value(Value value);

  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> statics_;
  std::vector<ValueId> constants_;
  std::vector<Tensor> constant_values_;
  std::vector<ValueId> outputs_;
};

}  // namespace grove::graphs
