// A printed tour of the core layer, run by `grove demo`. Every step checks its result, so the
// demo fails loudly (non-zero exit) if the core misbehaves.
#include "models/program/core_demo.h"

#include "core/caching_allocator.h"
#include "core/device_graph.h"
#include "core/format.h"
#include "core/tensor.h"

namespace grove::models {
namespace {

void expect(bool ok, const char* what) {
  GROVE_CHECK(ok, "demo step failed: ", what);
}

}  // namespace

int run_core_demo(std::ostream& out) {
  CachingAllocator& allocator = allocator_for(kCPU);

  out << "== 1. Allocate: a 2x3 tensor from the caching allocator\n";
  Tensor x = arange(6).view({2, 3});
  out << x << "\n";

  out << "\n== 2. Views share storage: transpose, slice, expand (no copies)\n";
  Tensor xt = x.t();
  Tensor column = x.select(1, 2);
  Tensor wide = x.slice(1, 0, 1).expand({2, 4});
  out << "x.t() = " << xt << "\n";
  out << "x[:, 2] = " << column << "\n";
  out << "x[:, 0:1].expand(2, 4) = " << wide << "\n";
  expect(xt.is_alias_of(x) && column.is_alias_of(x) && wide.is_alias_of(x), "views alias x");
  column.fill_(-1);
  out << "after x[:, 2].fill_(-1): x = " << x << " (version " << x.version() << ")\n";
  expect(x.to_vector<float>()[2] == -1.0f, "a write through a view is seen by its base");

  out << "\n== 3. Capture on the CPU stream: kernels are recorded, not run\n";
  Tensor input = zeros({4});
  Tensor output;
  DeviceGraph graph(kCPU);
  Stream stream = new_stream(kCPU);
  {
    StreamGuard guard(stream);
    graph.begin_capture(stream);
    output = input.clone();  // allocated in the graph's private pool; copy recorded
    output.slice(0, 0, 2).fill_(7);
    graph.end_capture();
  }
  out << "captured " << graph.num_nodes() << " kernels into " << graph.pool() << "\n";

  out << "\n== 4. Replay with new input values written into the same buffer\n";
  for (float value : {1.0f, 2.0f}) {
    input.fill_(value);
    graph.replay();
    out << "input filled with " << value << " -> output " << output << "\n";
    expect(output.to_vector<float>() == std::vector<float>{7, 7, value, value},
           "replay reproduces the eager result");
  }

  AllocatorStats stats = allocator.stats();
  out << "\n== 5. Allocator: " << format_bytes(stats.allocated_bytes) << " allocated, "
      << format_bytes(stats.reserved_bytes) << " reserved ("
      << format_bytes(stats.private_pool_bytes) << " in private pools), " << stats.num_allocations
      << " allocations, " << stats.cache_hits << " cache hits\n";
  out << "\ndemo finished: all checks passed\n";
  return 0;
}

}  // namespace grove::models
