// Cases shared by the CPU and CUDA tests of sgd_ and adamw_ over lists of parameters
// (Note [One update over many parameters] in ops/optim.h): a call over many parameters must
// leave every parameter and state bit for bit where one call per parameter leaves them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ops/optim.h"
#include "tests/ops/op_test_util.h"

namespace grove::ops::testing {

// The parameters' shapes: odd sizes, an empty one between others, a scalar-like one, and
// `count` in all (more than one launch's 64 on the GPU when count > 64).
inline std::vector<DimVector> list_shapes(int count) {
  std::vector<DimVector> shapes = {{7, 5}, {0}, {1}, {130}, {3, 1, 4}};
  for (int i = static_cast<int>(shapes.size()); i < count; ++i) shapes.push_back({1 + i % 9});
  shapes.resize(static_cast<std::size_t>(count));
  return shapes;
}

// `count` tensors of `shapes` on `device`, random (seeded by `seed`) or zeros; with `strided`,
// tensor 3 is a non-contiguous view (the fused CUDA kernel then gives way to one per parameter).
inline std::vector<Tensor> list_of(const std::vector<DimVector>& shapes, DType dtype, Device device,
                                   unsigned seed, bool random, bool strided) {
  std::vector<Tensor> tensors;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    Tensor t = random ? random_tensor(shapes[i], dtype, -1, 1, seed + static_cast<unsigned>(i))
                      : zeros(shapes[i], TensorOptions(dtype));
    if (strided && i == 3) t = non_contiguous(t);
    tensors.push_back(device.is_cpu() ? t : t.to(device));
  }
  return tensors;
}

inline std::vector<Tensor> clones(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> copies;
  for (const Tensor& t : tensors) copies.push_back(t.clone());
  return copies;
}

inline void expect_lists_equal(const std::vector<Tensor>& actual,
                               const std::vector<Tensor>& expected, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_EQ(elements(actual[i].to(kCPU)), elements(expected[i].to(kCPU)))
        << what << ", tensor " << i;
  }
}

// Three steps of SGD (four option sets) and AdamW (fixed rate and lr tensor), float32 and
// float64, contiguous and with one strided parameter: one call over all parameters against one
// call per parameter, bit for bit, parameters and states. Every parameter's version goes up by
// one per call.
inline void expect_lists_equal_one_call_per_parameter(Device device, int count) {
  const std::vector<DimVector> shapes = list_shapes(count);
  const TensorOptions on_device = TensorOptions().device(device);
  for (const DType dtype : {DType::Float32, DType::Float64}) {
    for (const bool strided : {false, true}) {
      const std::string where = std::string(dtype_name(dtype)) + (strided ? " strided" : "");
      const SgdHyperparameters sgd_options[] = {
          {0.1, 0.0, 0.0, false}, {0.1, 0.9, 0.0, false}, {0.05, 0.9, 0.01, true}};
      for (const bool lr_tensor : {false, true}) {
        for (const SgdHyperparameters& o : sgd_options) {
          const std::vector<Tensor> start = list_of(shapes, dtype, device, 1, true, strided);
          std::vector<Tensor> params = clones(start);
          std::vector<Tensor> single = clones(start);
          std::vector<Tensor> velocity = list_of(shapes, dtype, device, 0, false, strided);
          std::vector<Tensor> single_velocity = clones(velocity);
          const Tensor lr = lr_tensor ? full({}, 0.07, on_device) : Tensor();
          for (unsigned step = 0; step < 3; ++step) {
            const std::vector<Tensor> grads =
                list_of(shapes, dtype, device, 100 * (step + 1), true, strided);
            const std::uint64_t version = params[0].version();
            sgd_(params, grads, o.momentum != 0 ? velocity : std::vector<Tensor>{}, lr, o);
            EXPECT_EQ(params[0].version(), version + 1) << where;
            EXPECT_EQ(params.back().version(), version + 1) << where;
            for (std::size_t i = 0; i < params.size(); ++i) {
              const Tensor v = o.momentum != 0 ? single_velocity[i] : Tensor();
              if (lr_tensor) {
                sgd_(single[i], grads[i], v, lr, o);
              } else {
                sgd_(single[i], grads[i], v, o);
              }
            }
          }
          const std::string what = where + " sgd momentum " + std::to_string(o.momentum) +
                                   (lr_tensor ? " lr tensor" : "");
          expect_lists_equal(params, single, what + " params");
          expect_lists_equal(velocity, single_velocity, what + " velocity");
        }
      }
      for (const bool lr_tensor : {false, true}) {
        const AdamwHyperparameters o{0.01, 0.9, 0.999, 1e-8, 0.1};
        const std::vector<Tensor> start = list_of(shapes, dtype, device, 2, true, strided);
        std::vector<Tensor> params = clones(start);
        std::vector<Tensor> single = clones(start);
        std::vector<Tensor> m = list_of(shapes, dtype, device, 0, false, strided);
        std::vector<Tensor> v = list_of(shapes, dtype, device, 0, false, strided);
        std::vector<Tensor> single_m = clones(m);
        std::vector<Tensor> single_v = clones(v);
        const Tensor lr = lr_tensor ? full({}, 0.02, on_device) : Tensor();
        const Tensor step_count = zeros({}, TensorOptions(DType::Int64).device(device));
        for (unsigned step = 0; step < 3; ++step) {
          step_count.fill_(step + 1);
          const std::vector<Tensor> grads =
              list_of(shapes, dtype, device, 200 * (step + 1), true, strided);
          adamw_(params, grads, m, v, step_count, lr, o);
          for (std::size_t i = 0; i < params.size(); ++i) {
            if (lr_tensor) {
              adamw_(single[i], grads[i], single_m[i], single_v[i], step_count, lr, o);
            } else {
              adamw_(single[i], grads[i], single_m[i], single_v[i], step_count, o);
            }
          }
        }
        const std::string what = where + " adamw" + (lr_tensor ? " lr tensor" : "");
        expect_lists_equal(params, single, what + " params");
        expect_lists_equal(m, single_m, what + " exp_avg");
        expect_lists_equal(v, single_v, what + " exp_avg_sq");
      }
    }
  }
}

}  // namespace grove::ops::testing
