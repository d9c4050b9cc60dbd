// Graph's text and DOT forms (see graphs/ir/graph.h for the text form's shape).
#include <sstream>

#include "core/format.h"
#include "graphs/ir/graph.h"
#include "ops/op_table.h"

namespace grove::graphs {
namespace {

const char* derived_name(DerivedKind kind) {
  switch (kind) {
    case DerivedKind::Reshape:
      return "reshape";
    case DerivedKind::Permute:
      return "permute";
    case DerivedKind::Slice:
      return "slice";
    case DerivedKind::Select:
      return "select";
    case DerivedKind::Expand:
      return "expand";
    case DerivedKind::AsStrided:
      return "as_strided";
    case DerivedKind::Copy:
      return "copy";
  }
  return "?";
}

// The arguments of a view, named as the view's Tensor method names them.
std::string view_arguments(const Node& node) {
  std::ostringstream out;
  const IntArrayRef a = node.args;
  switch (node.derived) {
    case DerivedKind::Permute:
      out << "dims=" << a;
      break;
    case DerivedKind::Slice:
      if (a.size() == 3) out << "dim=" << a[0] << " start=" << a[1] << " step=" << a[2];
      break;
    case DerivedKind::Select:
      if (a.size() == 2) out << "dim=" << a[0] << " index=" << a[1];
      break;
    case DerivedKind::AsStrided:
      if (a.size() == 1) out << "storage_offset=" << a[0];
      break;
    case DerivedKind::Reshape:
    case DerivedKind::Expand:
    case DerivedKind::Copy:
      break;
  }
  return out.str();
}

// What a node is called in text: the op's name, the view's kind, or the write's name.
std::string node_label(const Node& node) {
  switch (node.kind) {
    case NodeKind::Op:
      return std::string(ops::op_name(node.op));
    case NodeKind::View:
    case NodeKind::Copy:
      return derived_name(node.derived);
    case NodeKind::Write:
      return node.write == WriteKind::Copy ? "copy_" : "fill_";
  }
  return "?";
}

// Attributes after the call: an op's typed attributes, a view's arguments, a fill's value.
std::string node_attributes(const Node& node) {
  switch (node.kind) {
    case NodeKind::Op:
      return ops::describe_attributes(node.op, node.attributes);
    case NodeKind::View:
      return view_arguments(node);
    case NodeKind::Copy:
      return "";
    case NodeKind::Write: {
      if (node.write == WriteKind::Copy) return "";
      std::ostringstream out;
      out << "value=" << node.value;
      return out.str();
    }
  }
  return "";
}

std::string dot_escape(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

}  // namespace

std::string Graph::value_name(ValueId id) const {
  const Value& v = value(id);
  std::string name = "%";
  name += v.name.empty() ? std::to_string(id) : v.name;
  return name;
}

std::string Graph::describe_value(ValueId id) const {
  const Value& v = value(id);
  std::ostringstream out;
  out << value_name(id) << ": " << dtype_name(v.dtype) << v.sizes;
  if (!v.device.is_cpu()) out << " on " << v.device;
  return out.str();
}

std::string Graph::node_text(std::int32_t index) const {
  const Node& node = nodes_.at(static_cast<std::size_t>(index));
  std::ostringstream out;
  for (std::size_t i = 0; i < node.outputs.size(); ++i) {
    out << (i == 0 ? "" : ", ") << describe_value(node.outputs[i]);
  }
  out << " = " << node_label(node) << "(";
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    out << (i == 0 ? "" : ", ") << value_name(node.inputs[i]);
  }
  out << ")";
  const std::string attributes = node_attributes(node);
  if (!attributes.empty()) out << " " << attributes;
  // Where the result's memory comes from, when it is not its own.
  if (node.in_place) {
    out << "  # writes ";
    for (std::size_t w = 0; w < written_inputs(node); ++w) {
      out << (w == 0 ? "" : ", ") << value_name(node.inputs[w]);
    }
    out << " in place";
  } else if (node.kind == NodeKind::View) {
    out << "  # view of " << value_name(root(node.inputs[0]));
  }
  return out.str();
}

std::string Graph::to_text() const {
  std::ostringstream out;
  out << "graph " << name_ << "(";
  bool first = true;
  for (const ValueId id : inputs_) {
    out << (first ? "" : ", ") << describe_value(id);
    first = false;
  }
  for (const ValueId id : statics_) {
    out << (first ? "" : ", ") << "static " << describe_value(id);
    first = false;
  }
  out << ") {\n";
  for (const ValueId id : constants_) out << "  " << describe_value(id) << " = constant\n";
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    out << "  " << node_text(static_cast<std::int32_t>(i)) << "\n";
  }
  out << "  return (";
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    out << (i == 0 ? "" : ", ") << value_name(outputs_[i]);
  }
  out << ")";
  const char* separator = "  # ";
  for (std::size_t i = 0; i < outputs_.size(); ++i) {
    const OutputAlias alias = output_alias(i);
    if (alias.kind == AliasKind::None) continue;
    out << separator << "output " << i << " is " << alias_kind_name(alias.kind) << " "
        << alias.index;
    separator = "; ";
  }
  out << "\n}\n";
  return out.str();
}

std::string Graph::to_dot() const {
  std::ostringstream out;
  out << "digraph \"" << dot_escape(name_) << "\" {\n  rankdir=TB;\n";
  // Inputs and statics are ellipses named after their value; nodes are boxes; an edge carries
  // the value that flows along it.
  auto producer = [this](ValueId id) {
    const Value& v = value(id);
    std::string name = v.origin == ValueOrigin::Node ? "n" : "v";
    name += std::to_string(v.origin == ValueOrigin::Node ? v.index : id);
    return name;
  };
  for (const ValueId id : inputs_) {
    out << "  v" << id << " [shape=ellipse, label=\"" << dot_escape(describe_value(id)) << "\"];\n";
  }
  for (const ValueId id : statics_) {
    out << "  v" << id << " [shape=ellipse, style=dashed, label=\"static "
        << dot_escape(describe_value(id)) << "\"];\n";
  }
  for (const ValueId id : constants_) {
    out << "  v" << id << " [shape=ellipse, style=dotted, label=\"constant "
        << dot_escape(describe_value(id)) << "\"];\n";
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& node = nodes_[i];
    std::string label = node_label(node);
    const std::string attributes = node_attributes(node);
    if (!attributes.empty()) {
      label += "\\n";
      label += dot_escape(attributes);
    }
    out << "  n" << i << " [shape=box" << (node.kind == NodeKind::Op ? "" : ", style=rounded")
        << ", label=\"" << label << "\"];\n";
    for (const ValueId input : node.inputs) {
      out << "  " << producer(input) << " -> n" << i << " [label=\""
          << dot_escape(value_name(input)) << "\"];\n";
    }
  }
  out << "  return [shape=doublecircle, label=\"return\"];\n";
  for (const ValueId output : outputs_) {
    out << "  " << producer(output) << " -> return [label=\"" << dot_escape(value_name(output))
        << "\"];\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace grove::graphs
