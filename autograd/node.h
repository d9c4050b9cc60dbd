// Node and Edge: the backward graph.
//
// Every differentiable op output carries a Node (its grad_fn). A node knows how to turn the
// gradients of the forward op's outputs into gradients of its inputs, and has one Edge per
// forward input saying where that input's gradient goes next: the grad_fn of the input (and
// which of that node's forward outputs the input was), the AccumulateGrad node of a leaf that
// requires gradients, or nowhere (the input does not require gradients).
//
//   x (leaf) --mul--> y --sum--> loss        loss.grad_fn = SumNode --edge--> MulNode
//                                            MulNode --edge 0--> AccumulateGrad(x)
//
// Nodes are reference counted: a tensor holds its grad_fn, a node holds the nodes its edges
// point to, so the graph lives exactly as long as some output that can reach it.
//
// Note [Nodes own nodes only through edges]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A node never holds another node except through its edges: saved tensors are detached (no
// grad_fn), and AccumulateGrad's leaf has none either. Two things rest on this:
//   - no cycles: a graph dies with the last output that can reach it (AccumulateGrad drops its
//     leaf when its last strong handle goes, since the leaf's meta still points at it weakly);
//   - no deep recursion when a long graph dies: release_resources() unlinks the chain with an
//     explicit stack instead of letting each node's destructor destroy the next.
//
// Naming: "forward outputs/inputs" are the op's; apply() receives the gradients of the forward
// outputs and returns the gradients of the forward inputs, in edge order.
//
// Not thread-safe: a graph is built and run on one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/intrusive_ptr.h"
#include "core/tensor.h"

namespace grove::autograd {

class Node;
using NodePtr = IntrusivePtr<Node>;

struct Edge {
  NodePtr node;                // null: no gradient flows this way
  std::uint32_t input_nr = 0;  // which forward output of `node` this gradient belongs to

  bool valid() const { return static_cast<bool>(node); }
};

// What a gradient must look like: the shape, dtype and device of the tensor it belongs to.
struct TensorMeta {
  DimVector sizes;
  DType dtype = DType::Float32;
  Device device = kCPU;

  static TensorMeta of(const Tensor& tensor) {
    return {DimVector(tensor.sizes()), tensor.dtype(), tensor.device()};
  }
};

// A tensor hook: sees the gradient of a tensor and may replace it (return it unchanged to only
// observe it).
using GradHook = std::function<Tensor(const Tensor&)>;
// Runs `hook` on a defined `grad` and keeps what it returns (checked to be a valid gradient).
void apply_grad_hook(const GradHook& hook, Tensor& grad);

class Node : public IntrusiveTarget {
 public:
  ~Node() override = default;

  // Gradients of the forward outputs (undefined where none reached them) -> gradients of the
  // forward inputs, one per edge (undefined where an edge is invalid or the gradient is zero).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  // A short name for messages and graph dumps: "MulBackward", "AccumulateGrad".
  virtual std::string name() const = 0;
  // Instead of apply(): adds the gradient of this node's only input into `slot`, the sum that
  // already reached that input (sole-owned and contiguous, of the input's sizes), and returns
  // true; or returns false, leaving `slot` alone, and the engine calls apply(). For gradients
  // that are zero outside a view of the input (slice, select), see
  // Note [Adding a view's gradient into the sum] in autograd/engine.cpp.
  virtual bool add_into(Tensor& /*slot*/, const std::vector<Tensor>& /*grad_outputs*/) {
    return false;
  }
  // Frees what the node saved for its backward (called after it runs, unless retain_graph).
  virtual void release_saved() {}
  // Runs the hooks registered on this node's forward outputs over `grads`, in place.
  virtual void run_pre_hooks(std::vector<Tensor>& grads);

  const std::vector<Edge>& next_edges() const { return next_edges_; }
  std::uint32_t num_outputs() const { return num_outputs_; }
  // Creation order on this thread; the engine runs later nodes first (see engine.cpp).
  std::uint64_t sequence_nr() const { return sequence_nr_; }

  void add_pre_hook(std::uint32_t output_nr, GradHook hook);
  // retain_grad(): runs after every pre-hook of that output, so it sees the final gradient.
  // take_retain_hook() removes and returns it (an in-place op moves it to its new node).
  void set_retain_hook(std::uint32_t output_nr, GradHook hook);
  GradHook take_retain_hook(std::uint32_t output_nr);

 protected:
  // See Note [Nodes own nodes only through edges]. Overrides must call this.
  void release_resources() override;

  Node(std::uint32_t num_outputs, std::vector<Edge> next_edges);
  // For AccumulateGrad, which the engine runs as soon as it is ready.
  Node(std::uint32_t num_outputs, std::vector<Edge> next_edges, std::uint64_t sequence_nr);

 private:
  std::vector<Edge> next_edges_;
  std::uint32_t num_outputs_;
  std::uint64_t sequence_nr_;
  std::vector<std::pair<std::uint32_t, GradHook>> pre_hooks_;
  std::vector<std::pair<std::uint32_t, GradHook>> retain_hooks_;
};

}  // namespace grove::autograd
