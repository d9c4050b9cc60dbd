// Tracer: records what a function does, on this thread, into a graphs::Graph.
//
// While a Tracer is active it is an op observer and a core observer of the calling thread only
// (Note [Op observers] in ops/dispatch.h, Note [Core observers] in core/core_observer.h), so
// every op the function dispatches becomes an Op node, and every view, copy and write core makes
// becomes a View, Copy or Write node. Other threads (a data loader) never leak into the trace.
//
// Note [What a trace sees]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor that reaches a node is one of:
//   - a graph input: the caller registered it with add_input();
//   - a value the trace defined (an op's output, a view, a copy, a written tensor);
//   - another handle on a traced value's memory that core did not report: detach() (autograd
//     saves its tensors detached), or a tensor made before the trace over a traced storage.
//     With the same layout it is that value (the newest one over that memory); otherwise an
//     as_strided view of it;
//   - a tensor the function found but was not given. If its memory existed before the trace
//     began (Storage::serial), it is a static input: a parameter, a buffer, a tensor held by
//     the closure, used in place on every replay. If the function made it during the trace
//     without an op (zeros, full, from_vector), it is a constant: the graph keeps a snapshot of
//     its values taken before anything in the trace changed it, so a replay starts from the
//     same values the trace did.
// A trace is a snapshot of the function's behaviour for these inputs: control flow that
// depends on values, and host-side state the function reads, are baked in (as in
// torch.jit.trace, JAX's jit and tinygrad's TinyJit). A host access of tensor memory during the
// trace (item(), to_vector(), printing, a device-to-host copy, a raw data_ptr()) cannot be
// replayed: core reports it to the active Tracer before it happens
// (Note [Host reads during a trace] in core/host_reads.h), and the Tracer stops: it stops
// observing, remembers why (stop_reason()), and lets the access and the rest of the function run as
// eager code, which compile() then treats as the call's eager run. With OnHostAccess::Throw it
// throws HostReadDuringTrace instead (CompileOptions::or_error).
//
// Usage: Tracer tracer(graph); add the inputs; call the function; finish(outputs). One Tracer
// per trace. It holds the tensors it saw, and their storages, by weak handles only: a value's
// memory is freed when the function drops its last handle, as it would be eagerly, so a trace
// needs no more memory than an eager call; the objects themselves outlive the trace, so a freed
// tensor's or storage's address is never mistaken for another's.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/core_observer.h"
#include "core/host_reads.h"
#include "graphs/ir/graph.h"
#include "ops/dispatch.h"

namespace grove::graphs {

class Tracer final : public ops::OpObserver, public CoreObserver, public HostAccessListener {
 public:
  enum class OnHostAccess : std::uint8_t { Stop, Throw };
  // Starts observing this thread. `graph` must be empty and outlive the Tracer.
  explicit Tracer(Graph& graph, OnHostAccess on_host_access = OnHostAccess::Stop);
  ~Tracer() override;
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // Registers a graph input (before the function runs).
  ValueId add_input(const Tensor& input, std::string name = {});
  // Sets the graph's outputs and stops observing. The function's outputs must be defined.
  // Not after stopped().
  void finish(const std::vector<Tensor>& outputs);

  // True once a host access stopped the trace (the graph is then incomplete); why, as the
  // fallback reason names it.
  bool stopped() const { return stop_reason_.has_value(); }
  const std::string& stop_reason() const { return *stop_reason_; }
  // Whether any tracer is recording on this thread (compile runs a compiled function called
  // inside a trace as part of that trace).
  static bool tracing_on_this_thread();

  // Strong handles on the memory of every value the trace saw that is alive now. Taken when
  // the function returns, they keep the values its backward will read (compile's first call
  // runs its backward graph on them: Note [Exactly one eager call's effects]).
  std::vector<StoragePtr> live_storages() const;
  // The storage under `value`, if the trace saw one (null for constants' snapshots).
  const Storage* storage_of(ValueId value) const;

  const Graph& graph() const { return graph_; }
  // The tensors behind the graph's static inputs, in order (what a replay passes as statics).
  const std::vector<Tensor>& static_tensors() const { return static_tensors_; }

  // The value `tensor` is, resolving unknown tensors as Note [What a trace sees] says.
  ValueId value_of(const Tensor& tensor);
  // Registers `tensor` as a static input whatever its age (compile's gradient buffers).
  ValueId add_static(const Tensor& tensor, std::string name);

  // After finish(): the values the function made during the trace that something outside the
  // trace still holds (an optimizer's state made on its first step, a gradient a leaf adopted
  // and kept, an intermediate cached in the closure), other than those over the memory of
  // `results` (what the caller of the trace holds on purpose). A replay could not update them:
  // the graph writes its own memory, not theirs. Described as the graph prints them.
  // `held` are the caller's own handles from live_storages(), which do not count as keeping.
  std::vector<std::string> values_kept_outside(const std::vector<Tensor>& results,
                                               const std::vector<StoragePtr>& held = {}) const;

  // --- observer callbacks ---
  void before_in_place(const ops::OpCall& call) override;
  void on_op(const ops::OpCall& call, const ops::OpOutputs& outputs) override;
  void on_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                  IntArrayRef args) override;
  void before_write(const CoreWrite& write) override;
  void on_write(const CoreWrite& write) override;
  void on_host_access(Device device, const char* what, const std::string& message) override;

 private:
  void stop_observing();
  void define(const Tensor& tensor, ValueId value);
  std::optional<ValueId> alias_of(const Tensor& tensor);

  Graph& graph_;
  std::uint64_t first_serial_;  // storages with a larger serial were made during the trace
  struct StorageValues {
    WeakIntrusivePtr<Storage> storage;  // keeps the object (not its memory) for the trace
    std::vector<ValueId> values;        // over this storage, in definition order
  };
  std::unordered_map<const TensorImpl*, ValueId> values_;
  std::unordered_map<const Storage*, StorageValues> by_storage_;
  std::vector<const Storage*> storage_order_;       // the keys of by_storage_, first seen first
  std::vector<WeakIntrusivePtr<TensorImpl>> seen_;  // the keys of values_ (see the file comment)
  std::vector<Tensor> static_tensors_;
  bool active_ = false;
  OnHostAccess on_host_access_;
  std::optional<std::string> stop_reason_;
  std::optional<HostAccessWatch> watch_;  // from the constructor to finish() or a stop
};

}  // namespace grove::graphs
