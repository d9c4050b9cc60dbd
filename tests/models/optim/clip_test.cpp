// clip_grad_norm_: the returned norm, scaled gradients when above the maximum, untouched ones
// below it, parameters without gradients, mixed dtypes, and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "models/optim/clip.h"
#include "optim_test_util.h"

namespace grove::optim {
namespace {

using namespace testing;

TEST(ClipGradNorm, ScalesEveryGradientToTheMaximum) {
  // Gradients (3, 4) and (12): total norm sqrt(9 + 16 + 144) = 13.
  const Tensor a = parameter({0.0, 0.0});
  const Tensor b = parameter({0.0});
  set_grad(a, {3.0, 4.0});
  set_grad(b, {12.0});
  const Tensor total = clip_grad_norm_({a, b}, 6.5);
  EXPECT_EQ(total.dim(), 0);
  EXPECT_EQ(total.dtype(), DType::Float64);
  EXPECT_EQ(total.item<double>(), 13.0);
  const double scale = 6.5 / (13.0 + 1e-6);
  // The scale is one division and each gradient one multiplication in double: an ulp or so.
  expect_close({3.0 * scale, 4.0 * scale}, a.grad(), 1e-14, "a.grad");
  expect_close({12.0 * scale}, b.grad(), 1e-14, "b.grad");
  // The clipped gradients' norm is max_norm, up to the 1e-6 PyTorch adds to the norm.
  const std::vector<double> ga = values_of(a.grad()), gb = values_of(b.grad());
  EXPECT_NEAR(std::sqrt(ga[0] * ga[0] + ga[1] * ga[1] + gb[0] * gb[0]), 6.5, 1e-6);
}

TEST(ClipGradNorm, LeavesGradientsBelowTheMaximumAlone) {
  const Tensor a = parameter({0.0, 0.0});
  set_grad(a, {0.3, -0.4});
  const Tensor total = clip_grad_norm_({a}, 1.0);
  // sqrt of a sum rounded in double: an ulp of 0.5.
  EXPECT_NEAR(total.item<double>(), 0.5, 1e-16);
  EXPECT_EQ(values_of(a.grad()), (std::vector<double>{0.3, -0.4}));  // scaled by exactly 1
}

TEST(ClipGradNorm, SkipsParametersWithoutAGradient) {
  const Tensor a = parameter({0.0, 0.0});
  const Tensor without = parameter({5.0});
  set_grad(a, {6.0, 8.0});
  const Tensor total = clip_grad_norm_({without, a}, 5.0);
  EXPECT_EQ(total.item<double>(), 10.0);
  EXPECT_FALSE(without.grad().defined());
  expect_close({3.0, 4.0}, a.grad(), 1e-6, "a.grad");  // halved, up to the 1e-6 in the scale
}

TEST(ClipGradNorm, NoGradientsGiveAZeroNorm) {
  const Tensor a = parameter({1.0});
  const Tensor total = clip_grad_norm_({a}, 1.0);
  EXPECT_EQ(total.dim(), 0);
  EXPECT_EQ(total.item<double>(), 0.0);
  EXPECT_EQ(clip_grad_norm_({}, 1.0).item<double>(), 0.0);
}

TEST(ClipGradNorm, Float32GradientsStayFloat32) {
  const Tensor a = parameter({0.0, 0.0}, DType::Float32);
  const Tensor b = parameter({0.0}, DType::Float64);
  set_grad(a, {3.0, 4.0});
  const Tensor total32 = clip_grad_norm_({a}, 1.0);
  EXPECT_EQ(total32.dtype(), DType::Float32);
  EXPECT_EQ(total32.item<float>(), 5.0f);
  // float32: the scale 1 / (5 + 1e-6) and the products round to float, 1e-7 relative.
  expect_close({0.6, 0.8}, a.grad(), 1e-6, "float32 grad");
  // With a float64 gradient among them the norm accumulates in float64.
  set_grad(a, {3.0, 4.0});
  set_grad(b, {12.0});
  const Tensor total = clip_grad_norm_({a, b}, 100.0);
  EXPECT_EQ(total.dtype(), DType::Float64);
  EXPECT_EQ(total.item<double>(), 13.0);
  EXPECT_EQ(a.grad().dtype(), DType::Float32);
  EXPECT_EQ(values_of(a.grad()), (std::vector<double>{3.0, 4.0}));
}

TEST(ClipGradNorm, RefusesABadMaximum) {
  const Tensor a = parameter({0.0});
  EXPECT_NE(error_of([&] { clip_grad_norm_({a}, 0.0); }).find("max_norm finite and > 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { clip_grad_norm_({a}, -1.0); }).find("max_norm"), std::string::npos);
  EXPECT_NE(error_of([&] { clip_grad_norm_({a}, INFINITY); }).find("max_norm"), std::string::npos);
}

}  // namespace
}  // namespace grove::optim
