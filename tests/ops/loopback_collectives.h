// A collective engine for one process (world size 1) that op tests (tests/ops) and the misuse
// suite register as their own group, so that all_reduce_, broadcast_ and all_gather can be
// called, and misused, without starting a process group (tests/dist tests the real engines,
// Gloo and NCCL, across processes).
#pragma once

#include <cstring>

#include "ops/collective.h"

namespace grove::test_engines {

class LoopbackCollectives final : public ops::CollectiveEngine {
 public:
  // With one rank, reducing and broadcasting leave the data as it is.
  void all_reduce(void*, std::int64_t, DType, ops::ReduceOp, Stream) override {}
  void broadcast(void*, std::int64_t, DType, int, Stream) override {}
  void all_gather(const void* input, void* output, std::int64_t count, DType dtype,
                  Stream) override {
    std::memcpy(output, input, static_cast<std::size_t>(count) * element_size(dtype));
  }
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  std::string name() const override { return "loopback"; }
};

// The group id of a loopback engine for CPU tensors, registered on first use for the program's
// lifetime.
inline int loopback_group() {
  static LoopbackCollectives engine;
  static const int group = [] {
    const int id = ops::new_collective_group();
    ops::register_collective_engine(id, DeviceType::CPU, &engine);
    return id;
  }();
  return group;
}

}  // namespace grove::test_engines
