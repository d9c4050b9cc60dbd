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
// replay need not). Not thread-safe: one run at a time per
// Interpreter (each thread has its own compiled functions, like its own tree manager).
#pragma once

#include <span>
#include <vector>

#include "graphs/ir/graph.h"

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
  std::vector<Tensor> scratch_;   // a node's inputs, reused from node to node
};

}  // namespace grove::graphs
