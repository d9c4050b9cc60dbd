// Every op on bfloat16 and float16 tensors, on the CPU: each op's sample call
// (tests/misuse/op_samples.h) replayed with its float32 inputs narrowed must give exactly the
// float32 op's result on the same (rounded) values, rounded once, in the 16-bit dtype
// (Note [Reduced-precision compute] in ops/reduced_compute.h). The CUDA kernels that take 16-bit
// tensors as they are have rows in tests/ops/cuda_parity_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/rng.h"
#include "ops/random.h"
#include "tests/misuse/op_samples.h"

namespace grove {
namespace {

using ops::OpKind;

// The ops whose float inputs are master state kept in float32 or float64 (the optimizers refuse
// 16-bit parameters: ops/optim.h).
const std::set<OpKind> kFloat32Only = {OpKind::SgdStep, OpKind::AdamwStep};

// Whether input i of `entry` holds values that narrow with the op's dtype: not counts and flags
// (adamw_'s step, the loss scaler's found_inf and scale) or saved statistics (float32 for
// 16-bit values: compute_dtype).
bool narrows(const ops::OpEntry& entry, std::size_t i) {
  const ops::InputDTypes dtypes = entry.input(i).dtypes;
  return dtypes != ops::InputDTypes::Count && dtypes != ops::InputDTypes::Statistics;
}

// A copy of each input (in-place ops write theirs), its float32 values narrowed to `dtype`
// (narrow) or rounded through it and widened back (reference).
std::vector<Tensor> inputs_through(const ops::OpEntry& entry, const std::vector<Tensor>& inputs,
                                   DType dtype, bool narrow) {
  std::vector<Tensor> result;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    if (input.dtype() != DType::Float32 || !narrows(entry, i)) {
      result.push_back(input.clone());
    } else {
      result.push_back(narrow ? input.to(dtype) : input.to(dtype).to(DType::Float32));
    }
  }
  return result;
}

// `got` (the 16-bit run) equals `want` (the float32 run) rounded to got's dtype, bit for bit
// but for NaN, which must be NaN in both.
void expect_rounded_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  if (!is_floating_point(want.dtype())) {
    ASSERT_EQ(got.dtype(), want.dtype()) << what;
    EXPECT_EQ(got.to(DType::Float64).to_vector<double>(),
              want.to(DType::Float64).to_vector<double>())
        << what;
    return;
  }
  const std::vector<float> g = got.to(DType::Float32).to_vector<float>();
  const std::vector<float> w = want.to(got.dtype()).to(DType::Float32).to_vector<float>();
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " element " << i;
    } else {
      ASSERT_EQ(g[i], w[i]) << what << " element " << i;
    }
  }
}

class ReducedPrecisionOps : public ::testing::TestWithParam<DType> {};

TEST_P(ReducedPrecisionOps, EveryOpEqualsTheFloat32OpRoundedOnce) {
  const DType dtype = GetParam();
  for (std::size_t k = 0; k < misuse::kNumOps; ++k) {
    const auto kind = static_cast<OpKind>(k);
    SCOPED_TRACE(std::string(ops::op_name(kind)));
    const misuse::Sample sample = misuse::sample_of(kind);
    const ops::OpEntry& entry = ops::op_entry(kind);
    std::vector<Tensor> narrow = inputs_through(entry, sample.inputs, dtype, true);
    if (kFloat32Only.contains(kind)) {
      EXPECT_THROW(ops::dispatch(entry, narrow, sample.attributes), Error);
      continue;
    }
    std::vector<Tensor> reference = inputs_through(entry, sample.inputs, dtype, false);
    manual_seed(k);  // the random ops draw the same numbers in both runs
    const ops::OpOutputs want = ops::dispatch(entry, reference, sample.attributes);
    manual_seed(k);
    const ops::OpOutputs got = ops::dispatch(entry, narrow, sample.attributes);
    ASSERT_EQ(got.size(), want.size());
    bool narrowed = false;
    for (std::size_t i = 0; i < sample.inputs.size(); ++i) {
      narrowed |= sample.inputs[i].dtype() == DType::Float32 && narrows(entry, i);
    }
    for (std::size_t i = 0; i < got.size(); ++i) {
      // Outputs follow the inputs' dtype, but for the statistics a forward saves and the losses
      // (float32: Note [A loss is in the compute dtype] in ops/softmax.cpp).
      const bool statistics =
          kind == OpKind::CrossEntropy || kind == OpKind::NllLoss ||
          (kind == OpKind::LayerNorm && i >= 1) ||
          (kind == OpKind::RmsNorm && i == 1) || (kind == OpKind::Attention && i == 1);
      if (narrowed && want[i].dtype() == DType::Float32) {
        EXPECT_EQ(got[i].dtype(), statistics ? DType::Float32 : dtype)
            << "output " << i << " follows its inputs' dtype";
      }
      expect_rounded_equal(got[i], want[i], "output " + std::to_string(i));
    }
    const bool in_place = !narrow.empty() && got[0].impl() == narrow[0].impl();
    for (std::size_t w = 0; in_place && w < entry.writes(sample.attributes); ++w) {
      expect_rounded_equal(narrow[w], reference[w], "written input " + std::to_string(w));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, ReducedPrecisionOps,
                         ::testing::Values(DType::BFloat16, DType::Float16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(ReducedPrecisionOps, FactoriesAndRandomOpsMake16BitTensors) {
  Generator a(7), b(7);
  const Tensor wide = ops::randn({64}, TensorOptions(DType::Float32), &a);
  const Tensor narrow = ops::randn({64}, TensorOptions(DType::BFloat16), &b);
  EXPECT_EQ(narrow.dtype(), DType::BFloat16);
  expect_rounded_equal(narrow, wide, "randn");
  const Tensor u = ops::rand({1000}, TensorOptions(DType::Float16));
  EXPECT_EQ(u.dtype(), DType::Float16);
  const std::vector<float> values = u.to_vector<float>();
  for (const float v : values) {
    EXPECT_GE(v, 0.0f);
    EXPECT_LE(v, 1.0f);  // rounding may reach 1
  }
  EXPECT_EQ(zeros({3}, DType::Float16).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(full({2}, 0.5, DType::BFloat16).to_vector<float>(), std::vector<float>(2, 0.5f));
}

TEST(ReducedPrecisionOps, MixingDTypesIsRefusedWithAMessage) {
  const Tensor a = ops::rand({2, 3}).to(DType::BFloat16);
  const Tensor b = ops::rand({2, 3});
  try {
    (void)ops::add(a, b);
    FAIL() << "add of bfloat16 and float32 should be refused";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("bfloat16"), std::string::npos) << message;
    EXPECT_NE(message.find("to(dtype)"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace grove
