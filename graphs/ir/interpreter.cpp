// Interpreter: node by node, the same calls the traced function made. See interpreter.h.
#include "graphs/ir/interpreter.h"

#include <algorithm>

#include "core/core_observer.h"
#include "core/error.h"
#include "ops/autocast.h"
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
                given[i].defined() ? given[i].sizes() : IntArrayRef{},
                given[i].defined() ? " on " : "", given[i].defined() ? given[i].device() : kCPU);
  }
}

}  // namespace

Interpreter::Interpreter(const Graph& graph)
    : graph_(graph), constant_is_written_(graph.written_constants()) {
  // Last readers: walk backwards; a value not seen yet (and not an output) is read last here.
  std::vector<bool> read_later(graph.values().size(), false);
  std::vector<bool> memory_read_later(graph.values().size(), false);  // by root value
  for (const ValueId output : graph.outputs()) {
    read_later[static_cast<std::size_t>(output)] = true;
    memory_read_later[static_cast<std::size_t>(graph.root(output))] = true;
  }
  last_use_.resize(graph.nodes().size());
  release_after_.resize(graph.nodes().size());
  copy_moves_.assign(graph.nodes().size(), false);
  std::vector<bool> source_dead_after(graph.nodes().size(), false);  // Write(Copy) nodes
  for (std::size_t n = graph.nodes().size(); n-- > 0;) {
    const Node& node = graph.nodes()[n];
    if (node.kind == NodeKind::Write && node.write == WriteKind::Copy) {
      source_dead_after[n] =
          !memory_read_later[static_cast<std::size_t>(graph.root(node.inputs[1]))];
    }
    if (node.kind == NodeKind::Copy) {
      // The copy may hand its source on when the source is an op's result with memory of its
      // own, dense, of the result's dtype and device, and nothing reads that memory later.
      const ValueId source = node.inputs[0];
      const Value& from = graph.value(source);
      const Value& to = graph.value(node.outputs[0]);
      copy_moves_[n] = from.origin == ValueOrigin::Node && graph.root(source) == source &&
                       !memory_read_later[static_cast<std::size_t>(source)] &&
                       from.dtype == to.dtype && from.device == to.device &&
                       IntArrayRef(from.strides) == IntArrayRef(to.strides) &&
                       from.storage_offset == 0;
    }
    std::vector<bool>& last = last_use_[n];
    last.assign(node.inputs.size(), false);
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const auto id = static_cast<std::size_t>(node.inputs[i]);
      // A value read twice by one node (x * x) is copied into both slots.
      bool again_in_node = false;
      for (std::size_t j = 0; j < node.inputs.size(); ++j) {
        again_in_node = again_in_node || (j != i && node.inputs[j] == node.inputs[i]);
      }
      last[i] = !read_later[id] && !again_in_node;
    }
    // Views, copies and writes read through the environment, not the scratch buffer: the
    // values they read last are dropped after them. So are values an op reads last in two slots
    // (x * x: copied into both, not moved), and results nothing reads.
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const auto id = static_cast<std::size_t>(node.inputs[i]);
      const bool first_slot =
          std::find(node.inputs.begin(), node.inputs.begin() + static_cast<std::ptrdiff_t>(i),
                    node.inputs[i]) == node.inputs.begin() + static_cast<std::ptrdiff_t>(i);
      const bool read_last_here = !read_later[id] && first_slot;
      if (read_last_here && (node.kind != NodeKind::Op || !last[i])) {
        release_after_[n].push_back(node.inputs[i]);
      }
    }
    for (const ValueId output : node.outputs) {
      if (!read_later[static_cast<std::size_t>(output)]) release_after_[n].push_back(output);
    }
    for (const ValueId input : node.inputs) {
      read_later[static_cast<std::size_t>(input)] = true;
      memory_read_later[static_cast<std::size_t>(graph.root(input))] = true;
    }
  }
  plan_writes_into_targets(source_dead_after);
  entries_.reserve(graph.nodes().size());
  for (const Node& node : graph.nodes()) {
    entries_.push_back(node.kind == NodeKind::Op ? &ops::op_entry(node.op) : nullptr);
  }
  // A written constant's fresh copy is made just before the first node that reads it, not at
  // the start of the run: the zeros of a slice's gradient are needed late in a backward, and
  // made all at the start they would add to the run's peak memory.
  clone_before_.resize(graph.nodes().size());
  std::vector<bool> placed(graph.constants().size(), false);
  for (std::size_t n = 0; n < graph.nodes().size(); ++n) {
    for (const ValueId input : graph.nodes()[n].inputs) {
      const Value& value = graph.value(input);
      const auto index = static_cast<std::size_t>(value.index);
      if (value.origin != ValueOrigin::Constant || !constant_is_written_[index] || placed[index]) {
        continue;
      }
      placed[index] = true;
      clone_before_[n].push_back(index);
    }
  }
}

// Note [Writing into the copy's target]: the rules a graph alone decides.
void Interpreter::plan_writes_into_targets(const std::vector<bool>& source_dead_after) {
  const Graph& graph = graph_;
  const std::size_t num_nodes = graph.nodes().size();
  write_into_.assign(num_nodes, {});
  std::vector<std::int64_t> producer(graph.values().size(), -1);
  for (std::size_t n = 0; n < num_nodes; ++n) {
    for (const ValueId output : graph.nodes()[n].outputs) {
      producer[static_cast<std::size_t>(output)] = static_cast<std::int64_t>(n);
    }
  }
  for (std::size_t w = 0; w < num_nodes; ++w) {
    const Node& write = graph.nodes()[w];
    if (write.kind != NodeKind::Write || write.write != WriteKind::Copy || !source_dead_after[w]) {
      continue;
    }
    const ValueId target = write.inputs[0];
    const ValueId source = write.inputs[1];
    const Value& to = graph.value(target);
    const Value& from = graph.value(source);
    const bool target_exists_before =
        (to.origin == ValueOrigin::Input || to.origin == ValueOrigin::Static) &&
        graph.root(target) == target;
    const std::int64_t p = producer[static_cast<std::size_t>(source)];
    if (!target_exists_before || from.origin != ValueOrigin::Node || p < 0 ||
        graph.root(source) != source) {
      continue;
    }
    const Node& op = graph.nodes()[static_cast<std::size_t>(p)];
    const bool dense_alike =
        IntArrayRef(from.sizes) == IntArrayRef(to.sizes) && from.dtype == to.dtype &&
        from.device == to.device && from.storage_offset == 0 && to.storage_offset == 0 &&
        IntArrayRef(from.strides) == IntArrayRef(contiguous_strides(from.sizes)) &&
        IntArrayRef(to.strides) == IntArrayRef(from.strides);
    std::size_t output = 0;  // which of the op's outputs g is
    while (output < op.outputs.size() && op.outputs[output] != source) ++output;
    if (op.kind != NodeKind::Op || op.in_place || output >= op.outputs.size() ||
        output >= ops::OutputSpecs::kMaxOutputs ||
        write_into_[static_cast<std::size_t>(p)][output].target >= 0 || !dense_alike) {
      continue;
    }
    bool target_touched = false;  // read or written from the op up to the copy
    for (std::size_t m = static_cast<std::size_t>(p); m < w && !target_touched; ++m) {
      for (const ValueId input : graph.nodes()[m].inputs) {
        target_touched = target_touched || graph.root(input) == target;
      }
    }
    if (target_touched) continue;
    // Two outputs of one op into one target: the second copy_ reads T, so target_touched
    // refuses it above.
    write_into_[static_cast<std::size_t>(p)][output] = {target, w};
    has_writes_into_ = true;
  }
}

// Note [Writing into the copy's target]: the rules only the run's tensors decide.
// `storages` holds the storages of the run's inputs and static inputs, sorted.
bool Interpreter::may_write_into(const Tensor& target,
                                 const std::vector<const Storage*>& storages) {
  if (!target.is_contiguous() || target.requires_grad()) return false;
  const auto [first, last] = std::equal_range(storages.begin(), storages.end(),
                                              static_cast<const Storage*>(target.storage().get()));
  return last - first == 1;  // the target's own, shared with no other input
}

std::vector<Tensor> Interpreter::run(std::span<const Tensor> inputs,
                                     std::span<const Tensor> statics) {
  check_arguments(graph_, inputs, graph_.inputs(), "inputs");
  check_arguments(graph_, statics, graph_.statics(), "static inputs");
  // The graph holds the casts autocast made when it was traced (Note [Autocast]).
  const ops::AutocastGuard no_autocast(std::nullopt);
  std::vector<Tensor> env(graph_.values().size());
  // The scratch handles are dropped on every way out, a failed op's included (an out of memory
  // in a warm-up or a recording): kept until the next run, they would hold that run's inputs,
  // blocks of a graph pool, which the tree manager then finds held by no output it knows of.
  struct DropScratch {
    std::vector<Tensor>& scratch;
    ~DropScratch() { scratch.clear(); }
  } drop_scratch{scratch_};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    env[static_cast<std::size_t>(graph_.inputs()[i])] = inputs[i];
  }
  // A core observer (a trace of a bigger function) must see every copy the graph makes.
  const bool writes_into_targets = has_writes_into_ && !thread_has_core_observers();
  std::vector<const Storage*> storages;
  if (has_writes_into_) copy_done_.assign(graph_.nodes().size(), false);  // read only then
  if (writes_into_targets) {
    for (const std::span<const Tensor> list : {inputs, statics}) {
      for (const Tensor& tensor : list) storages.push_back(tensor.storage().get());
    }
    std::sort(storages.begin(), storages.end());
  }
  for (std::size_t i = 0; i < statics.size(); ++i) {
    env[static_cast<std::size_t>(graph_.statics()[i])] = statics[i];
  }
  for (std::size_t i = 0; i < graph_.constants().size(); ++i) {
    if (constant_is_written_[i]) continue;  // cloned before its first reader
    env[static_cast<std::size_t>(graph_.constants()[i])] = graph_.constant_value(i);
  }
  for (std::size_t n = 0; n < graph_.nodes().size(); ++n) {
    const Node& node = graph_.nodes()[n];
    for (const std::size_t i : clone_before_[n]) {
      env[static_cast<std::size_t>(graph_.constants()[i])] = graph_.constant_value(i).clone();
    }
    switch (node.kind) {
      case NodeKind::Op: {
        scratch_.clear();
        for (std::size_t i = 0; i < node.inputs.size(); ++i) {
          Tensor& value = env[static_cast<std::size_t>(node.inputs[i])];
          if (last_use_[n][i]) {
            scratch_.push_back(std::move(value));
          } else {
            scratch_.push_back(value);
          }
        }
        // Note [Writing into the copy's target]: the targets this run may write into.
        std::array<Tensor, ops::OutputSpecs::kMaxOutputs> targets;
        std::size_t last_target = 0;  // one past the last output with a target
        if (writes_into_targets) {
          for (std::size_t o = 0; o < targets.size(); ++o) {
            const WriteInto& write = write_into_[n][o];
            if (write.target < 0) continue;
            const Tensor& target = env[static_cast<std::size_t>(write.target)];
            if (!may_write_into(target, storages)) continue;
            targets[o] = target;
            copy_done_[write.copy] = true;
            last_target = o + 1;
          }
        }
        const ops::OpOutputs outputs =
            last_target > 0
                ? ops::dispatch_into(*entries_[n], scratch_, node.attributes,
                                     std::span<const Tensor>(targets.data(), last_target))
                : ops::dispatch(*entries_[n], scratch_, node.attributes);
        scratch_.clear();  // the inputs read here for the last time die now
        for (std::size_t o = 0; o < node.outputs.size(); ++o) {
          env[static_cast<std::size_t>(node.outputs[o])] = outputs[o];
        }
        break;
      }
      case NodeKind::View:
        env[static_cast<std::size_t>(node.outputs[0])] = remake_view(
            node, env[static_cast<std::size_t>(node.inputs[0])], graph_.value(node.outputs[0]));
        break;
      case NodeKind::Copy: {
        Tensor& source = env[static_cast<std::size_t>(node.inputs[0])];
        Tensor& result = env[static_cast<std::size_t>(node.outputs[0])];
        if (copy_moves_[n] && source.is_contiguous() && source.storage_offset() == 0) {
          result = std::move(source);
        } else {
          result = remake_copy(source, graph_.value(node.outputs[0]));
        }
        break;
      }
      case NodeKind::Write: {
        const Tensor& target = env[static_cast<std::size_t>(node.inputs[0])];
        if (has_writes_into_ && copy_done_[n]) {
          // The producer wrote the target already (Note [Writing into the copy's target]).
        } else if (node.write == WriteKind::Copy) {
          target.copy_(env[static_cast<std::size_t>(node.inputs[1])]);
        } else {
          target.fill_(node.value);
        }
        env[static_cast<std::size_t>(node.outputs[0])] = target;
        break;
      }
    }
    for (const ValueId dead : release_after_[n]) env[static_cast<std::size_t>(dead)] = Tensor();
  }
  scratch_.clear();  // before the results are gathered, as the guard would only after
  std::vector<Tensor> results;
  results.reserve(graph_.outputs().size());
  for (const ValueId output : graph_.outputs()) {
    results.push_back(env[static_cast<std::size_t>(output)]);
  }
  return results;
}

}  // namespace grove::graphs
