// Optimizer: the base of grove's optimizers (SGD, AdamW). It holds the parameters, the learning
// rate, the step count and the named state that a checkpoint saves, and runs one update of every
// parameter that has a gradient per step().
//
// It is not a module and owns no model: it holds handles to parameters that a model also holds,
// and updates them in place. There are no parameter groups: every parameter gets the same
// hyperparameters.
//
// Invariants: see Note [Optimizer state lives on the device].
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace grove::optim {

// Note [Optimizer state lives on the device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An optimizer's step() must work inside a compiled whole training step (forward, backward,
// update, zero_grad traced and replayed as one graph; Note [Whole training steps] in
// graphs/compile/traced_function.h), where its C++ runs only when the step is traced. So:
//   - every state tensor (the learning rate, the step count, momentum buffers, moments) is made
//     in the constructor on the parameters' device, and is only ever written in place: a trace
//     finds them as static inputs, and replays read and write the same memory;
//   - step() never reads a tensor on the host and never branches on a value; the only host
//     branch is on whether a parameter's grad() is defined, which a trace bakes in;
//   - the learning rate lives in a one-element float32 tensor that the fused updates read when
//     their kernels run (ops/optim.h), so set_lr() between steps changes what a replay does
//     without a new trace; lr() is a host mirror of what set_lr() was last given;
//   - the step count is an int64 tensor advanced on the device at the start of every step():
//     a host counter would stop counting when the step is replayed instead of run.

class Optimizer {
 public:
  // A named state tensor, as state() returns and load_state() takes.
  using NamedState = std::vector<std::pair<std::string, Tensor>>;

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  Optimizer(Optimizer&&) = default;
  Optimizer& operator=(Optimizer&&) = default;

  // The parameters, in the order given to the constructor (state names use these indices).
  const std::vector<Tensor>& params() const { return params_; }
  Device device() const { return params_.front().device(); }

  // The learning rate: lr() is the host mirror (no synchronisation), lr_tensor() the 0-d
  // float32 tensor on the parameters' device that the updates read when they run.
  double lr() const { return lr_; }
  const Tensor& lr_tensor() const { return lr_tensor_; }
  // Writes `lr` (finite, >= 0) into lr_tensor() with fill_ (a kernel on the device's current
  // stream; it never waits for the device) and into the host mirror. Call it between steps,
  // never inside a compiled step (a trace would bake the value in).
  void set_lr(double lr);

  // The number of step() calls so far: a 0-d int64 tensor on the parameters' device, advanced
  // by step() on the device (read it with item(), which waits for the device).
  const Tensor& step_tensor() const { return step_; }

  // Forgets every parameter's gradient. With set_to_none (the default, as PyTorch), each grad()
  // becomes undefined (the next backward allocates it again); otherwise each defined grad() is
  // zeroed in place (zero_(): the memory stays, which a compiled step that adds into it needs).
  void zero_grad(bool set_to_none = true);

  // One update of every parameter whose grad() is defined (those without one are skipped and
  // keep their state, as in PyTorch), with grad mode off. First advances step_tensor() by one
  // (also when no parameter has a gradient). Launches kernels on the device's current stream
  // and returns without waiting; reads nothing on the host, so it may run in a compiled step.
  // With `found_inf` (GradScaler's flag: a one-element float32 tensor on the device, 0 or 1),
  // a step whose flag is 1 changes nothing, the step count included, decided on the device when
  // the kernels run (Note [Loss scaling on the device] in ops/optim.h).
  void step(const Tensor& found_inf = Tensor());

  // The state a checkpoint saves: {"lr", lr_tensor()}, {"step", step_tensor()}, then the
  // optimizer's buffers as "<buffer>.<parameter index>" ("velocity.3", "exp_avg.0",
  // "exp_avg_sq.0"). The tensors are the live state (not copies): copy them to save them.
  NamedState state() const;
  // Copies every entry of `state` into the state of the same name (copy_: any device, dtype
  // converted), and sets the host mirror lr() from "lr". `state` must name each entry of
  // state() exactly once, with its sizes; "lr" must hold a finite rate >= 0 and "step" an
  // integer >= 0. Everything is checked before anything is copied, so on an error (which names
  // the entry) the optimizer is unchanged. Blocks: it reads "lr" and "step" on the host.
  void load_state(const NamedState& state);

 protected:
  // Checks the parameters (at least one; each defined, a float32 or float64 leaf that requires
  // grad, all on one device, none given twice; errors name the index) and makes the learning
  // rate and step tensors on their device.
  Optimizer(std::vector<Tensor> params, double lr);

  // Updates parameters params()[indices[i]] from their gradients grads[i] (defined), in one op
  // (Note [One update over many parameters] in ops/optim.h): a step is one kernel on a GPU, not
  // one per parameter. Called by step() with grad mode off, after step_tensor() was advanced,
  // once for each dtype among the parameters that have gradients (indices ascending); must read
  // nothing on the host, and must hand `found_inf` (undefined, or step()'s) to the fused op.
  virtual void update(std::span<const std::size_t> indices, std::span<const Tensor> grads,
                      const Tensor& found_inf) = 0;

  // Adds a buffer to state() under "<name>.<index>". Subclasses call it in their constructor.
  void register_buffer(const std::string& name, std::size_t index, Tensor buffer);

 private:
  std::vector<Tensor> params_;
  double lr_ = 0.0;
  Tensor lr_tensor_;  // 0-d float32 on device()
  Tensor step_;       // 0-d int64 on device()
  Tensor one_;        // 0-d int64 1 on device(), added to step_ by step()
  NamedState buffers_;
};

}  // namespace grove::optim
