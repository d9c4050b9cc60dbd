// CPU kernels for the random family and the uniform/normal fills shared with uniform_ and
// normal_. Each kernel reserves its Philox counters on the host, then launches a lambda that
// resolves seed and offset when it runs (so replays of a captured graph draw fresh numbers) and
// walks its output in row-major order with a running flat index.
#include "ops/cpu/random.h"

#include "core/strided_loop.h"
#include "ops/attributes.h"
#include "ops/random.h"

namespace grove::ops::cpu {
namespace {

std::uint64_t ceil_div(std::int64_t n, std::int64_t d) {
  return static_cast<std::uint64_t>((n + d - 1) / d);
}

// Calls body(flat_index, offset) for each element of `out` in row-major order.
template <typename Body>
void for_each_element(const StridedLoop<1>& loop, Body body) {
  std::uint64_t flat = 0;
  const std::int64_t stride = loop.strides[0][loop.ndim - 1];
  for_each_run<1>(loop, [&](const std::int64_t* offset, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) body(flat++, offset[0] + j * stride);
  });
}

StridedLoop<1> loop_over(const Tensor& out, const char* name) {
  const IntArrayRef strides[1] = {out.strides()};
  return make_loop<1>(out.sizes(), strides, name);
}

}  // namespace

void launch_uniform(const Tensor& out, double low, double high, PhiloxArgs args) {
  if (out.numel() == 0) return;
  const StridedLoop<1> loop = loop_over(out, "uniform");
  void* data = out.data_ptr();
  dispatch_floating(out.dtype(), "uniform", [&]<typename T>() {
    T* o = static_cast<T*>(data);
    launch_cpu(current_stream(out.device()), [=] {
      const auto [seed, offset] = args.resolve();
      PhiloxWords words(seed, offset);
      const double range = high - low;
      for_each_element(loop, [&](std::uint64_t i, std::int64_t at) {
        o[at] = static_cast<T>(low + range * static_cast<double>(uniform_at<T>(words, i)));
      });
    });
  });
}

void launch_normal(const Tensor& out, double mean, double std, PhiloxArgs args) {
  if (out.numel() == 0) return;
  const StridedLoop<1> loop = loop_over(out, "normal");
  void* data = out.data_ptr();
  dispatch_floating(out.dtype(), "normal", [&]<typename T>() {
    T* o = static_cast<T*>(data);
    launch_cpu(current_stream(out.device()), [=] {
      const auto [seed, offset] = args.resolve();
      PhiloxWords words(seed, offset);
      for_each_element(loop, [&](std::uint64_t i, std::int64_t at) {
        o[at] = static_cast<T>(mean + std * static_cast<double>(normal_at<T>(words, i)));
      });
    });
  });
}

void rand(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::uint64_t counters = counters_for_uniform(out.dtype(), out.numel());
  launch_uniform(out, 0.0, 1.0, detail::reserve_philox(call, out.device(), counters));
}

void randn(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const std::uint64_t counters = counters_for_normal(out.dtype(), out.numel());
  launch_normal(out, 0.0, 1.0, detail::reserve_philox(call, out.device(), counters));
}

void randint(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& out = outputs[0];
  const RandintAttributes attributes = RandintAttributes::from(call.attributes);
  const std::int64_t low = attributes.low;
  const std::uint64_t range = attributes.range();
  const PhiloxArgs args = detail::reserve_philox(call, out.device(), ceil_div(out.numel(), 2));
  if (out.numel() == 0) return;
  const StridedLoop<1> loop = loop_over(out, "randint");
  std::int64_t* o = out.data<std::int64_t>();
  launch_cpu(current_stream(out.device()), [=] {
    const auto [seed, offset] = args.resolve();
    PhiloxWords words(seed, offset);
    for_each_element(loop, [&](std::uint64_t i, std::int64_t at) {
      o[at] =
          static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + bits64_at(words, i) % range);
    });
  });
}

// output = keep ? x / (1 - p) : 0, keep = (U[0, 1) >= p) with U from 24 bits (float32 words).
void dropout(const OpCall& call, const OpOutputs& outputs) {
  const Tensor& x = call.input(0);
  const Tensor& out = outputs[0];
  const Tensor& mask = outputs[1];
  const double p = DropoutAttributes::from(call.attributes).p;
  const PhiloxArgs args = detail::reserve_philox(call, x.device(), ceil_div(x.numel(), 4));
  if (x.numel() == 0) return;
  const IntArrayRef strides[3] = {out.strides(), mask.strides(), x.strides()};
  const StridedLoop<3> loop = make_loop<3>(x.sizes(), strides, "dropout");
  bool* keep = mask.data<bool>();
  dispatch_floating(x.dtype(), "dropout", [&]<typename T>() {
    const T* in = static_cast<const T*>(x.data_ptr());
    T* o = static_cast<T*>(out.data_ptr());
    const T scale = static_cast<T>(1.0 / (1.0 - p));
    const float threshold = static_cast<float>(p);
    launch_cpu(current_stream(x.device()), [=] {
      const auto [seed, offset] = args.resolve();
      PhiloxWords words(seed, offset);
      std::uint64_t flat = 0;
      const int last = loop.ndim - 1;
      for_each_run<3>(loop, [&](const std::int64_t* at, std::int64_t n) {
        for (std::int64_t j = 0; j < n; ++j, ++flat) {
          const bool kept = uniform_at<float>(words, flat) >= threshold;
          keep[at[1] + j * loop.strides[1][last]] = kept;
          o[at[0] + j * loop.strides[0][last]] =
              kept ? in[at[2] + j * loop.strides[2][last]] * scale : T(0);
        }
      });
    });
  });
}

}  // namespace grove::ops::cpu
