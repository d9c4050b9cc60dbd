// Collectives as ops: all_reduce_, broadcast_ and all_gather across the processes of a group.
//
// They go through dispatch like every op, so autograd's observer, compile's tracer and graph
// capture see them: on CUDA the engine (NCCL) enqueues on the current stream and is captured
// into a step graph like any kernel; on the CPU the engine (Gloo) runs as a CPU-stream kernel, so
// a CPU graph replays it too. The engines themselves live in dist/ (dist/process_group.h), which
// registers them here per group and device type; ops only know the CollectiveEngine interface,
// so the op layer needs neither Gloo nor NCCL.
//
// Semantics (every rank of the group must make the same calls in the same order, with tensors of
// the same dtype and sizes; a rank that calls something else waits until the group's timeout and
// fails with an error naming the ranks that went away, if any):
//   op                      tensor x on each rank            result
//   all_reduce_(x, op)      x: any sizes, contiguous         x (in place): the op over all ranks'
//                                                            x; kMean divides the sum by the
//                                                            world size (floating dtypes only)
//   broadcast_(x, root)     x: any sizes, contiguous         x (in place): root's x
//   all_gather(x)           x: (d0, d1, ...) contiguous      new (world * d0, d1, ...): rank r's x
//                                                            in rows [r * d0, (r + 1) * d0)
// Dtypes: float32, float64, int64, int32 and bool (bool: kSum is "any", kMax "any", kMin "all").
// Collectives have no derivative rule: gradients are reduced explicitly (DistributedDataParallel,
// models/nn/distributed.h) under no_grad.
#pragma once

#include <cstdint>
#include <string>

#include "core/stream.h"
#include "core/tensor.h"

namespace grove::ops {

enum class ReduceOp : std::uint8_t { kSum, kMean, kMax, kMin };
std::string_view reduce_op_name(ReduceOp op);

// One group's engine for one device type (Gloo for the CPU, NCCL for CUDA). Each call works on
// contiguous memory of `count` elements and is issued on `stream`: a CUDA engine enqueues there
// (capturable), a CPU engine launches a CPU-stream kernel there (recorded while it captures).
// Errors (a peer gone, the timeout passed) are grove::Error naming the ranks; an engine never
// hangs past its group's timeout.
class CollectiveEngine {
 public:
  virtual ~CollectiveEngine() = default;
  virtual void all_reduce(void* data, std::int64_t count, DType dtype, ReduceOp op,
                          Stream stream) = 0;
  virtual void broadcast(void* data, std::int64_t count, DType dtype, int root,
                         Stream stream) = 0;
  // `input` holds `count` elements, `output` world_size() * count.
  virtual void all_gather(const void* input, void* output, std::int64_t count, DType dtype,
                          Stream stream) = 0;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string name() const = 0;  // "gloo", "nccl"
};

// The registry the kernels look engines up in. `group` is the id a ProcessGroup got from
// new_collective_group(); the registering code keeps the engine alive until it unregisters it.
// Thread safety: registering and looking up may happen from any thread (a mutex).
int new_collective_group();
void register_collective_engine(int group, DeviceType device_type, CollectiveEngine* engine);
void unregister_collective_engine(int group, DeviceType device_type);
// The default group's id (set by dist::init_process_group), or -1 when there is none.
int default_collective_group();
void set_default_collective_group(int group);

// The collectives. `group` -1 means the default group. All block only as their engine does:
// NCCL returns once the work is enqueued; Gloo runs when the CPU stream runs the kernel.
const Tensor& all_reduce_(const Tensor& x, ReduceOp op = ReduceOp::kSum, int group = -1);
const Tensor& broadcast_(const Tensor& x, int root, int group = -1);
Tensor all_gather(const Tensor& x, int group = -1);

}  // namespace grove::ops
