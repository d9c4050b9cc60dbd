// Interpreter: runs a Graph by dispatching its nodes, without the C++ function it was traced
// from.
//
// Op nodes go back through the dispatch point by kind (ops::op_entry), so they are checked,
// launched on the current stream, recorded by autograd when their inputs require gradients,
// and captured when the stream captures, exactly as the eager op would be. Views, copies and
// writes call the same Tensor methods the traced function called. So a graph can run eagerly
// (debugging), inside a tree manager's warm-up, recording and replay, or nested in a bigger
// trace.
//
// Constants (graphs/ir/graph.h) are read in place unless the graph writes into them; those are
// cloned in each run just before their first reader, so every run starts from the traced
// values.
//
// Cost: one std::vector of tensor handles per run; no heap allocation per node for metadata
// (each node's OpEntry is looked up once, in the constructor; the op's outputs come back in a
// fixed-size OpOutputs; inputs are gathered into a reused buffer). A value's handle is moved,
// not copied, into the op that reads it last, or dropped after the view, copy or write that
// does, and a result nothing reads is dropped at once, so intermediate values die as soon as
// nothing needs them, as they would in the eager function. A copy of a value that nothing reads
// afterwards, through it or through a view of its memory, hands the value itself on instead of
// copying it (autograd clones a gradient it cannot adopt while a trace holds a handle on it; a
// replay need not). An op whose result is only copied into an input or static input writes
// into it directly (Note [Writing into the copy's target]). Not thread-safe: one run at a time
// per Interpreter (each thread has its own compiled functions, like its own tree manager).
//
// Note [Writing into the copy's target]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A whole training step copies each gradient it made into a buffer of its own
// (Note [Whole training steps] in graphs/compile/traced_function.h):
// `matmul -> g; ...; buffer.copy_(g)`.
// Run as traced, that is one copy kernel per parameter on every replay, work the eager step
// does not do. The interpreter instead runs the op that made g with `buffer` as its output
// (ops::dispatch_into), and the copy does nothing, when that gives the same values everywhere:
//   - the copy's target T is an input or a static input itself (not a view), so its memory
//     exists before the op runs; the source g is a contiguous result of an op that is not in
//     place, with T's sizes, dtype and device (any of its outputs: a layer norm's backward
//     writes its weight and bias gradients into two buffers);
//   - no node from that op up to the copy reads or writes T's memory (the op's own inputs
//     included): none can tell that T changed early;
//   - nothing reads g's memory after the copy (g's readers before it read T, which holds g);
//   - at run time: T is contiguous, needs no gradient, and shares memory with no other input
//     or static input (two parameters may be views of one flat buffer);
//   - no core observer listens on the thread (a trace of a bigger function that calls this
//     graph must see the copy, a write into T, as the graph does it).
// Otherwise the op allocates as usual and the copy runs. One difference remains when a run
// fails between the op and the copy (an out of memory in a warm-up): the target already holds
// the op's result, where the copy would not have run; as when an eager step fails halfway,
// some of the step's writes happened.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "graphs/ir/graph.h"
#include "ops/dispatch.h"

namespace grove::graphs {

class Interpreter {
 public:
  // `graph` must outlive the interpreter and be verified.
  explicit Interpreter(const Graph& graph);

  // The graph's outputs for `inputs` and `statics` (as many as the graph's inputs() and
  // statics(), with their sizes and dtypes; checked).
  std::vector<Tensor> run(std::span<const Tensor> inputs, std::span<const Tensor> statics);

  const Graph& graph() const { return graph_; }

 private:
  void plan_writes_into_targets(const std::vector<bool>& source_dead_after);
  static bool may_write_into(const Tensor& target, const std::vector<const Storage*>& storages);

  const Graph& graph_;
  std::vector<const ops::OpEntry*> entries_;  // per node; null for views, copies and writes
  // Per node, per input: whether this node is the value's last reader (and the value is not a
  // graph output), so its handle can be moved out of the environment.
  std::vector<std::vector<bool>> last_use_;
  // Per node: values to drop from the environment after it ran; those a view, copy or write
  // read last, and its results that nothing reads (an op's unused second result, say).
  std::vector<std::vector<ValueId>> release_after_;
  std::vector<bool> constant_is_written_;
  std::vector<std::vector<std::size_t>> clone_before_;  // per node: written constants to copy
  std::vector<bool> copy_moves_;  // per node: a Copy whose source is dead after it (see above)
  // Note [Writing into the copy's target]: per Op node and output, the target value it may write
  // into (-1: none) and the copy_ node that write replaces.
  struct WriteInto {
    ValueId target = -1;
    std::size_t copy = 0;
  };
  std::vector<std::array<WriteInto, ops::OutputSpecs::kMaxOutputs>> write_into_;
  std::vector<bool> copy_done_;  // per copy_ node, in a run: its producer wrote the target
  bool has_writes_into_ = false;  // some op may write into a copy's target
  std::vector<Tensor> scratch_;   // a node's inputs, reused from node to node
};

}  // namespace grove::graphs
