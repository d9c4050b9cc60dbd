// Tracer: the observer callbacks that turn ops, views, copies and writes into Graph nodes.
// See Note [What a trace sees] in tracer.h.
#include "graphs/trace/tracer.h"

#include <algorithm>
#include <unordered_set>

#include "core/error.h"
#include "core/storage.h"

namespace grove::graphs {

namespace {
thread_local int tracers_on_this_thread = 0;  // recording ones
}  // namespace

Tracer::Tracer(Graph& graph, OnHostAccess on_host_access)
    : graph_(graph), first_serial_(Storage::latest_serial()), on_host_access_(on_host_access) {
  GROVE_INTERNAL_ASSERT(graph.nodes().empty() && graph.values().empty(),
                        "a Tracer needs an empty graph");
  ops::add_op_observer(this);
  add_core_observer(this);
  active_ = true;
  ++tracers_on_this_thread;
  watch_.emplace(*this);
}

Tracer::~Tracer() {
  if (active_) stop_observing();
}

bool Tracer::tracing_on_this_thread() {
  return tracers_on_this_thread > 0;
}

void Tracer::stop_observing() {
  remove_core_observer(this);
  ops::remove_op_observer(this);
  watch_.reset();
  --tracers_on_this_thread;
  active_ = false;
}

void Tracer::on_host_access(Device, const char*, const std::string& message) {
  if (on_host_access_ == OnHostAccess::Throw)
    throw HostReadDuringTrace(message, __FILE__, __LINE__);
  stop_reason_ = message;
  stop_observing();  // the access, and what follows, run as eager code
}

ValueId Tracer::add_input(const Tensor& input, std::string name) {
  GROVE_CHECK(input.defined(), "trace of ", graph_.name(), ": input ", graph_.inputs().size(),
              " is undefined");
  // The same tensor passed twice: the later input is the one its uses refer to (the two are
  // one value for every call of this signature: Note [The signature of a compiled call]).
  const ValueId id = graph_.add_input(input, std::move(name));
  define(input, id);
  return id;
}

void Tracer::finish(const std::vector<Tensor>& outputs) {
  GROVE_INTERNAL_ASSERT(active_, "Tracer::finish called twice, or after a stop");
  std::vector<ValueId> ids;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    GROVE_CHECK(outputs[i].defined(), "trace of ", graph_.name(), ": output ", i,
                " is undefined; a compiled function returns defined tensors");
    ids.push_back(value_of(outputs[i]));
  }
  graph_.set_outputs(std::move(ids));
  stop_observing();
}

std::vector<StoragePtr> Tracer::live_storages() const {
  std::vector<StoragePtr> live;
  for (const Storage* key : storage_order_) {
    if (StoragePtr storage = by_storage_.at(key).storage.lock()) live.push_back(std::move(storage));
  }
  return live;
}

const Storage* Tracer::storage_of(ValueId value) const {
  for (const auto& [storage, entry] : by_storage_) {
    if (std::find(entry.values.begin(), entry.values.end(), value) != entry.values.end()) {
      return storage;
    }
  }
  return nullptr;
}

std::vector<std::string> Tracer::values_kept_outside(const std::vector<Tensor>& results,
                                                     const std::vector<StoragePtr>& held) const {
  GROVE_INTERNAL_ASSERT(!active_, "values_kept_outside before finish()");
  // The tracer holds no strong handle: a storage made during the trace that is still alive is
  // held by somebody, through a tensor the trace saw or another handle on its memory (beyond
  // the one handle of `held` on it).
  std::unordered_set<const Storage*> allowed, held_once;
  for (const Tensor& result : results) {
    if (result.defined()) allowed.insert(result.storage().get());
  }
  for (const Tensor& tensor : static_tensors_) allowed.insert(tensor.storage().get());
  for (const StoragePtr& storage : held) held_once.insert(storage.get());
  std::vector<std::string> kept;
  for (const Storage* key : storage_order_) {
    const StorageValues& entry = by_storage_.at(key);
    const std::uint32_t ours = held_once.contains(key) ? 1 : 0;
    if (entry.storage.use_count() <= ours || key->serial() <= first_serial_ ||
        allowed.contains(key)) {
      continue;
    }
    kept.push_back(graph_.describe_value(entry.values.front()));
  }
  return kept;
}

void Tracer::define(const Tensor& tensor, ValueId value) {
  if (values_.insert_or_assign(tensor.impl(), value).second) {
    seen_.emplace_back(IntrusivePtr<TensorImpl>(tensor.impl()));
  }
  const Storage* storage = tensor.storage().get();
  auto [entry, added] = by_storage_.try_emplace(storage);
  if (added) {
    entry->second.storage = WeakIntrusivePtr<Storage>(tensor.storage());
    storage_order_.push_back(storage);
  }
  entry->second.values.push_back(value);
}

std::optional<ValueId> Tracer::alias_of(const Tensor& tensor) {
  const auto found = by_storage_.find(tensor.storage().get());
  if (found == by_storage_.end()) return std::nullopt;
  const std::vector<ValueId>& over_storage = found->second.values;
  for (auto it = over_storage.rbegin(); it != over_storage.rend(); ++it) {
    const Value& v = graph_.value(*it);
    if (IntArrayRef(v.sizes) == tensor.sizes() && IntArrayRef(v.strides) == tensor.strides() &&
        v.storage_offset == tensor.storage_offset() && v.dtype == tensor.dtype()) {
      return *it;
    }
  }
  // Another layout over traced memory: an as_strided view of the newest value there.
  Node node;
  node.kind = NodeKind::View;
  node.derived = DerivedKind::AsStrided;
  node.args = {tensor.storage_offset()};
  node.inputs = {over_storage.back()};
  const std::int32_t index = graph_.add_node(std::move(node), std::span<const Tensor>(&tensor, 1));
  return graph_.nodes()[static_cast<std::size_t>(index)].outputs[0];
}

ValueId Tracer::value_of(const Tensor& tensor) {
  if (auto found = values_.find(tensor.impl()); found != values_.end()) return found->second;
  ValueId id;
  if (const std::optional<ValueId> alias = alias_of(tensor)) {
    id = *alias;
  } else if (tensor.storage()->serial() > first_serial_) {
    // Made during the trace without an op: keep its values as they are now, before any node
    // of the trace changes them (see the Note).
    Tensor snapshot;
    {
      const SuspendCoreObservers quiet;
      snapshot = tensor.detach().clone();
    }
    id = graph_.add_constant(std::move(snapshot));
  } else {
    std::string name = "p";  // a parameter, usually
    name += std::to_string(graph_.statics().size());
    return add_static(tensor, std::move(name));
  }
  define(tensor, id);
  return id;
}

ValueId Tracer::add_static(const Tensor& tensor, std::string name) {
  GROVE_INTERNAL_ASSERT(!values_.contains(tensor.impl()), "add_static: the trace knows it already");
  const ValueId id = graph_.add_static(tensor, std::move(name));
  static_tensors_.push_back(tensor);
  define(tensor, id);
  return id;
}

void Tracer::before_in_place(const ops::OpCall& call) {
  // Resolve every input now: a constant's snapshot must hold its values before the write.
  for (const Tensor& input : call.inputs) value_of(input);
}

void Tracer::on_op(const ops::OpCall& call, const ops::OpOutputs& outputs) {
  Node node;
  node.kind = NodeKind::Op;
  node.op = call.kind;
  node.attributes = call.attributes;
  node.in_place =
      outputs.size() == 1 && !call.inputs.empty() && outputs[0].impl() == call.inputs[0].impl();
  node.inputs.reserve(call.inputs.size());
  for (const Tensor& input : call.inputs) node.inputs.push_back(value_of(input));
  const std::int32_t index = graph_.add_node(std::move(node), outputs.span());
  const Node& added = graph_.nodes()[static_cast<std::size_t>(index)];
  for (std::size_t i = 0; i < outputs.size(); ++i) define(outputs[i], added.outputs[i]);
}

void Tracer::on_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                        IntArrayRef args) {
  Node node;
  node.kind = kind == DerivedKind::Copy ? NodeKind::Copy : NodeKind::View;
  node.derived = kind;
  node.args = args;
  node.inputs = {value_of(source)};
  const std::int32_t index = graph_.add_node(std::move(node), std::span<const Tensor>(&result, 1));
  define(result, graph_.nodes()[static_cast<std::size_t>(index)].outputs[0]);
}

void Tracer::before_write(const CoreWrite& write) {
  value_of(write.target);
  if (write.source != nullptr) value_of(*write.source);
}

void Tracer::on_write(const CoreWrite& write) {
  Node node;
  node.kind = NodeKind::Write;
  node.write = write.kind;
  node.value = write.value;
  node.in_place = true;
  node.inputs = {value_of(write.target)};
  if (write.source != nullptr) node.inputs.push_back(value_of(*write.source));
  const std::int32_t index =
      graph_.add_node(std::move(node), std::span<const Tensor>(&write.target, 1));
  define(write.target, graph_.nodes()[static_cast<std::size_t>(index)].outputs[0]);
}

}  // namespace grove::graphs
