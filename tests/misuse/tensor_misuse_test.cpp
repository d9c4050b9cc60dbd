// Misuse of core's tensor API: factories with sizes that are negative or whose product overflows
// (they must be refused before anything is allocated), views with dims and indices out of range
// or sizes that overflow, fills and host reads of values the dtype cannot hold, calls on
// undefined tensors not already covered by tests/core/errors_test.cpp, and device indices,
// streams and device graphs used wrongly.
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/device_graph.h"
#include "core/stream.h"
#include "core/tensor.h"
#include "tests/misuse/misuse_case.h"

namespace grove::misuse {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t k2Pow32 = std::int64_t{1} << 32;
constexpr std::int64_t k2Pow62 = std::int64_t{1} << 62;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

const char* const kTooBig = "more elements than any device can hold";

std::vector<MisuseCase> factory_cases() {
  return {
      // Products that overflow int64 (and size_t, counted in bytes) are refused up front.
      {"EmptyProductOverflowsInt64",
       [] {
         empty({k2Pow32, k2Pow32});
       },
       {"empty", kTooBig}},
      {"EmptyOfInt64MaxElements", [] { empty({kMax}); }, {"empty", kTooBig}},
      {"ZerosProductOverflowsBytes", [] { zeros({k2Pow62}); }, {"zeros", kTooBig}},
      {"OnesThreeWayOverflow",
       [] {
         ones({1 << 22, 1 << 22, 1 << 22});
       },
       {"ones", kTooBig}},
      {"FullOverflow",
       [] {
         full({k2Pow32, k2Pow32}, 1.0);
       },
       {"full", kTooBig}},
      {"EmptyNegativeWithAZeroSize",
       [] {
         empty({0, -1});
       },
       {"empty", "non-negative", "[0, -1]"}},
      {"EmptyInt64MinSize", [] { empty({kMin}); }, {"empty", "non-negative"}},
      {"EmptyStridedOverflow",
       [] {
         empty_strided({k2Pow32, k2Pow32}, {1, 1});
       },
       {"empty_strided", kTooBig}},
      {"EmptyStridedNegativeStride",
       [] {
         empty_strided({2, 2}, {-1, 1});
       },
       {"empty_strided", "non-negative", "[-1, 1]"}},
      {"EmptyStridedSizeStrideCountMismatch",
       [] {
         empty_strided({2, 2}, {1});
       },
       {"empty_strided", "2 sizes", "1 strides"}},
      // The extent (1 + sum (size - 1) * stride) overflows although the element count is small.
      {"EmptyStridedExtentOverflows",
       [] { empty_strided({3}, {k2Pow62}); },
       {"empty_strided", "[3]", "strides"}},
      {"EmptyStridedExtentOverflowsAcrossDims",
       [] {
         empty_strided({2, 2}, {kMax, kMax});
       },
       {"empty_strided", "[2, 2]", "strides"}},
      // arange: ranges with more elements than can be held, and non-finite bounds.
      {"ArangeTooManyElements", [] { arange(0.0, 1e300, 1.0); }, {"arange", kTooBig}},
      {"ArangeCountOverflowsInt64", [] { arange(0.0, 1.0, 1e-300); }, {"arange", kTooBig}},
      {"ArangeNaNEnd", [] { arange(kNaN); }, {"arange", "finite", "nan"}},
      {"ArangeInfiniteStep", [] { arange(0.0, 5.0, kInf); }, {"arange", "finite", "inf"}},
      {"ArangeOfBoolDtype", [] { arange(0.0, 5.0, 1.0, DType::Bool); }, {"arange", "bool"}},
      // Factories that ask for gradients on integer dtypes.
      {"ZerosInt64RequiresGrad",
       [] { zeros({2}, TensorOptions(DType::Int64).requires_grad(true)); },
       {"requires_grad", "int64"}},
      {"FullBoolRequiresGrad",
       [] { full({2}, true, TensorOptions().requires_grad(true)); },
       {"requires_grad", "bool"}},
      // from_vector: sizes that overflow, and a count that does not match.
      {"FromVectorSizesOverflow",
       [] {
         from_vector<float>({1, 2}, {k2Pow32, k2Pow32});
       },
       {"from_vector", kTooBig}},
      {"FromVectorTooManyValuesForShape",
       [] {
         from_vector<double>({1, 2, 3}, {2});
       },
       {"from_vector", "[2]", "3 values"}},
      // Values a dtype cannot hold.
      {"FullInt32WithAnOverflowingValue",
       [] { full({2}, k2Pow32, DType::Int32); },
       {"4294967296", "int32"}},
      {"FullInt64WithNaN", [] { full({2}, kNaN, DType::Int64); }, {"nan", "int64"}},
      {"FillInt32WithAnOverflowingValue",
       [] { zeros({3}, DType::Int32).fill_(std::int64_t{1} << 40); },
       {"fill_", "int32"}},
      {"FillInt64WithInfinity",
       [] { zeros({3}, DType::Int64).fill_(kInf); },
       {"fill_", "inf", "int64"}},
      {"ZeroDimFillInt32WithNaN",
       [] { zeros({}, DType::Int32).fill_(kNaN); },
       {"fill_", "nan", "int32"}},
      // Tensors from undefined or wrongly typed sources.
      {"ZerosLikeUndefined", [] { zeros_like(Tensor()); }, {"undefined"}},
      {"ToDtypeOfUndefined", [] { Tensor().to(DType::Float64); }, {"undefined"}},
      {"DetachOfUndefined", [] { Tensor().detach(); }, {"undefined"}},
      {"ContiguousOfUndefined", [] { Tensor().contiguous(); }, {"undefined"}},
      {"ToVectorOfUndefined", [] { Tensor().to_vector<float>(); }, {"undefined"}},
      {"SelectOfUndefined", [] { Tensor().select(0, 0); }, {"undefined"}},
  };
}

std::vector<MisuseCase> view_cases() {
  return {
      // Dims at the extremes of int64 (no wrap-around into range).
      {"SizeOfInt64MinDim",
       [] {
         zeros({2, 3}).size(kMin);
       },
       {"size", "out of range", "[-2, 1]"}},
      {"SelectInt64MinDim",
       [] {
         zeros({2, 3}).select(kMin, 0);
       },
       {"select", "out of range"}},
      {"SelectInt64MinIndex",
       [] {
         zeros({2, 3}).select(0, kMin);
       },
       {"select", "size 2"}},
      {"SelectInt64MaxIndex",
       [] {
         zeros({2, 3}).select(1, kMax);
       },
       {"select", "size 3"}},
      {"UnsqueezeInt64Max", [] { zeros({2}).unsqueeze(kMax); }, {"unsqueeze", "[-2, 1]"}},
      {"UnsqueezeInt64Min", [] { zeros({2}).unsqueeze(kMin); }, {"unsqueeze", "[-2, 1]"}},
      {"TransposeInt64Min",
       [] {
         zeros({2, 3}).transpose(kMin, 0);
       },
       {"transpose", "[-2, 1]"}},
      {"SqueezeDimOutOfRangeOfZeroDim", [] { zeros({}).squeeze(1); }, {"squeeze", "dimension 1"}},
      {"SliceInt64MinDim", [] { zeros({4}).slice(kMin, 0, 1); }, {"slice", "out of range"}},
      {"SliceOfZeroDim", [] { zeros({}).slice(0, 0, 1); }, {"slice", "0-dimensional"}},
      {"NarrowOfZeroDim", [] { zeros({}).narrow(0, 0, 1); }, {"narrow", "0-dimensional"}},
      {"NarrowInt64MinStart", [] { zeros({4}).narrow(0, kMin, 1); }, {"narrow", "size 4"}},
      {"NarrowInt64MaxStartAndLength", [] { zeros({4}).narrow(0, kMax, kMax); }, {"narrow"}},
      {"PermuteTooFewDims",
       [] {
         zeros({2, 3, 4}).permute({0, 1});
       },
       {"permute", "3", "[0, 1]"}},
      {"PermuteTooManyDims",
       [] {
         zeros({2, 3}).permute({0, 1, 2});
       },
       {"permute", "2"}},
      {"PermuteInt64MinDim",
       [] {
         zeros({2, 3}).permute({kMin, 0});
       },
       {"permute"}},
      // Sizes whose product overflows: a view would claim more elements than its storage.
      {"ViewProductWrapsToZero",
       [] {
         zeros({0}).view({k2Pow32, k2Pow32});
       },
       {"view", "[4294967296, 4294967296]"}},
      {"ViewProductWrapsToNumel",
       [] {
         zeros({0}).view({std::int64_t{1} << 40, std::int64_t{1} << 40, 0, -1});
       },
       {"view"}},
      {"ViewMinusOneWithZeroSize",
       [] {
         zeros({0}).view({0, -1});
       },
       {"view", "[0, -1]", "0 elements"}},
      {"ReshapeMinusOneWithZeroSize",
       [] {
         zeros({0, 4}).reshape({-1, 0});
       },
       {"reshape", "[-1, 0]"}},
      {"ViewMinusTwo",
       [] {
         zeros({4}).view({-2, -2});
       },
       {"view", "non-negative", "[-2, -2]"}},
      {"ExpandProductOverflows",
       [] {
         zeros({1, 1}).expand({k2Pow32, k2Pow32});
       },
       {"expand", kTooBig}},
      {"ExpandLeadingDimsOverflow",
       [] {
         zeros({4}).expand({k2Pow62, 4});
       },
       {"expand", kTooBig}},
      {"AsStridedExtentOverflows",
       [] { zeros({4}).as_strided({3}, {k2Pow62}, 0); },
       {"as_strided", "[3]", "beyond the storage"}},
      {"AsStridedOffsetPlusExtentOverflows",
       [] { zeros({4}).as_strided({2}, {kMax}, 1); },
       {"as_strided", "beyond the storage"}},
      {"AsStridedSizesOverflow",
       [] {
         zeros({4}).as_strided({k2Pow32, k2Pow32}, {0, 0}, 0);
       },
       {"as_strided", kTooBig}},
      {"AsStridedNegativeSize",
       [] { zeros({4}).as_strided({-1}, {1}, 0); },
       {"as_strided", "non-negative"}},
      {"AsStridedBeyondAViewsStorage",
       [] { zeros({4}).slice(0, 2, 4).as_strided({5}, {1}, 0); },
       {"as_strided", "beyond the storage", "4 elements"}},
      // Host reads.
      {"ItemOfAnEmptyTensor",
       [] {
         zeros({2, 0}).item<double>();
       },
       {"item()", "[2, 0]"}},
      {"ItemNaNAsInt64", [] { full({}, kNaN).item<std::int64_t>(); }, {"item()", "nan"}},
      {"ItemHugeAsInt32", [] { full({}, 1e20).item<std::int32_t>(); }, {"item()", "int32"}},
      {"DataOfTheWrongDtype",
       [] { zeros({2}, DType::Float64).data<std::int32_t>(); },
       {"int32", "float64"}},
  };
}

// Devices, streams and device graphs.
std::vector<MisuseCase> runtime_cases() {
  return {
      {"CudaDeviceIndexTooLarge", [] { cuda(300); }, {"device index", "[0, 127]", "300"}},
      {"CudaDeviceIndexThatWouldWrapToZero", [] { cuda(256); }, {"device index", "256"}},
      {"NegativeDeviceIndex", [] { Device(DeviceType::CUDA, -1); }, {"device index", "-1"}},
      {"ParseDeviceIndexTooLarge", [] { Device::parse("cuda:128"); }, {"'cuda:128'"}},
      {"StreamGuardOfAStreamIdPastTheCpuStreams",
       [] {
         StreamGuard guard(Stream{kCPU, 64});
       },
       {"64"}},
      {"WaitStreamAcrossDevices",
       [] {
         wait_stream(Stream{kCPU, 0}, Stream{cuda(0), 0});
       },
       {"wait_stream", "cpu", "cuda:0"}},
      {"ReleaseTheDefaultStream", [] { release_stream(default_stream(kCPU)); }, {"release_stream"}},
      {"CaptureOnAnotherDevicesStream",
       [] {
         DeviceGraph graph(kCPU);
         graph.begin_capture(Stream{cuda(0), 1});
       },
       {"begin_capture", "cpu", "cuda:0"}},
  };
}

GROVE_MISUSE_SUITE(TensorFactories, factory_cases)
GROVE_MISUSE_SUITE(TensorViews, view_cases)
GROVE_MISUSE_SUITE(DevicesAndStreams, runtime_cases)

}  // namespace
}  // namespace grove::misuse
