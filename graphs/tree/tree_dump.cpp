// Introspection of the trees: node counts, an indented text dump and a Graphviz DOT dump.
#include <sstream>

#include "graphs/tree/tree_manager.h"

namespace grove::graphs {
namespace {

using Children = std::map<int, std::vector<std::unique_ptr<GraphNode>>>;

template <typename Visit>
void visit_nodes(const Children& nodes, int depth, Visit visit) {
  for (const auto& [function_id, list] : nodes) {
    for (const auto& node : list) {
      visit(*node, depth);
      visit_nodes(node->children(), depth + 1, visit);
    }
  }
}

std::string describe(const TreeNode& node) {
  return str("function ", node.function().id, " '", node.function().label(), "', ",
             node.output_refs().size(), " outputs, ", node.num_live_outputs(), " live");
}

}  // namespace

std::size_t TreeManager::num_graph_nodes() const {
  std::size_t count = 0;
  visit_nodes(roots_, 0, [&](const GraphNode&, int) { ++count; });
  return count;
}

std::string TreeManager::dump_text() const {
  std::ostringstream out;
  out << "graph trees on " << device_ << ": state " << state_name(state_) << ", "
      << num_graph_nodes() << " graph nodes, " << pool_ << "\n";
  auto on_path = [&](const TreeNode& node) {
    if (current_ == nullptr) return false;
    for (const TreeNode* path_node : current_->path()) {
      if (path_node == &node) return true;
    }
    return false;
  };
  visit_nodes(roots_, 0, [&](const GraphNode& node, int depth) {
    out << std::string(2 * static_cast<std::size_t>(depth + 1), ' ')
        << (on_path(node) ? "* " : "- ") << "graph node " << node.id() << ": " << describe(node)
        << ", " << node.num_kernels() << " kernels\n";
  });
  for (const auto& warmup : warmup_chain_) {
    out << "  * warm-up node " << warmup->id() << ": " << describe(*warmup) << "\n";
  }
  if (current_ != nullptr) out << "current node: " << current_->id() << " (* marks the path)\n";
  return out.str();
}

std::string TreeManager::dump_dot() const {
  std::ostringstream out;
  out << "digraph graph_trees {\n  node [shape=box, fontname=monospace];\n";
  visit_nodes(roots_, 0, [&](const GraphNode& node, int) {
    out << "  n" << node.id() << " [label=\"node " << node.id() << "\\nfunction "
        << node.function().id << " " << node.function().label() << "\\n"
        << node.output_refs().size() << " outputs, " << node.num_live_outputs() << " live\""
        << (&node == current_ ? ", style=bold" : "") << "];\n";
    if (node.parent() != nullptr)
      out << "  n" << node.parent()->id() << " -> n" << node.id() << ";\n";
  });
  for (const auto& warmup : warmup_chain_) {
    out << "  w" << -warmup->id() << " [label=\"warm-up " << warmup->id() << "\\n"
        << warmup->function().label() << "\", style=dashed];\n";
    if (warmup->parent() != nullptr) {
      const TreeNode* parent = warmup->parent();
      out << "  " << (parent->kind() == TreeNode::Kind::Graph ? "n" : "w")
          << (parent->kind() == TreeNode::Kind::Graph ? parent->id() : -parent->id()) << " -> w"
          << -warmup->id() << " [style=dashed];\n";
    }
  }
  out << "}\n";
  return out.str();
}

}  // namespace grove::graphs
