// Typed attributes (ops/attributes.h): each struct reads back what it writes, keeps the
// positional layout the kernels were written against, and prints itself; describe_attributes()
// prints the calls the user functions really make, for every OpKind.
#include "ops/attributes.h"
#include "ops/op_table.h"

#include <limits>
#include <vector>

#include "op_test_util.h"
#include "ops/attention.h"
#include "ops/collective.h"
#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/embedding.h"
#include "ops/inplace.h"
#include "ops/layer_norm.h"
#include "ops/linalg.h"
#include "ops/optim.h"
#include "ops/pool.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace grove::ops {
namespace {

using testing::random_integers;
using testing::random_tensor;

// ---- writing and reading back ------------------------------------------------------------------

TEST(Attributes, ConvWritesTheLayoutTheKernelsRead) {
  Conv2dAttributes conv;
  conv.stride = {2, 3};
  conv.padding = {1, 0};
  conv.dilation = {1, 2};
  conv.groups = 4;
  const OpAttributes forward = conv.to_attributes();
  EXPECT_EQ(IntArrayRef(forward.ints), IntArrayRef(DimVector{2, 3, 1, 0, 1, 2, 4}));
  conv.sizes = DimVector{8, 16, 5, 5};
  const OpAttributes backward = conv.to_attributes();
  EXPECT_EQ(IntArrayRef(backward.ints), IntArrayRef(DimVector{8, 16, 5, 5, 2, 3, 1, 0, 1, 2, 4}));

  for (const OpAttributes* written : {&forward, &backward}) {
    const Conv2dAttributes read = Conv2dAttributes::from(*written);
    EXPECT_EQ(read.stride, (Pair{2, 3}));
    EXPECT_EQ(read.padding, (Pair{1, 0}));
    EXPECT_EQ(read.dilation, (Pair{1, 2}));
    EXPECT_EQ(read.groups, 4);
  }
  EXPECT_TRUE(Conv2dAttributes::from(forward).sizes.empty());
  EXPECT_EQ(IntArrayRef(Conv2dAttributes::from(backward).sizes),
            IntArrayRef(DimVector{8, 16, 5, 5}));
}

TEST(Attributes, PoolWritesTheLayoutTheKernelsRead) {
  Pool2dAttributes pool;
  pool.kernel = {3, 2};
  pool.stride = {2, 1};
  pool.padding = {1, 0};
  EXPECT_EQ(IntArrayRef(pool.to_attributes().ints), IntArrayRef(DimVector{3, 2, 2, 1, 1, 0}));
  pool.input_sizes = DimVector{4, 7, 9};
  const Pool2dAttributes read = Pool2dAttributes::from(pool.to_attributes());
  EXPECT_EQ(read.kernel, (Pair{3, 2}));
  EXPECT_EQ(read.stride, (Pair{2, 1}));
  EXPECT_EQ(read.padding, (Pair{1, 0}));
  EXPECT_EQ(IntArrayRef(read.input_sizes), IntArrayRef(DimVector{4, 7, 9}));
}

TEST(Attributes, FactoriesCarryTheDevice) {
  Generator generator(7);
  const FactoryAttributes factory{Device(DeviceType::CUDA, 1), DimVector{2, 3}, DType::Float64,
                                  &generator};
  const FactoryAttributes read = FactoryAttributes::from(factory.to_attributes());
  EXPECT_EQ(read.device, Device(DeviceType::CUDA, 1));
  EXPECT_EQ(IntArrayRef(read.sizes), IntArrayRef(DimVector{2, 3}));
  EXPECT_EQ(read.dtype, DType::Float64);
  EXPECT_EQ(read.generator, &generator);

  const RandintAttributes randint{kCPU, -5, 9, DimVector{4}, nullptr};
  const RandintAttributes read_randint = RandintAttributes::from(randint.to_attributes());
  EXPECT_EQ(read_randint.low, -5);
  EXPECT_EQ(read_randint.high, 9);
  EXPECT_EQ(IntArrayRef(read_randint.sizes), IntArrayRef(DimVector{4}));
  EXPECT_EQ(randint.to_attributes().dtype, DType::Int64);
}

// A struct read back from what it wrote prints the same: every field survives the trip.
template <typename Attributes>
void expect_round_trip(const Attributes& attributes) {
  EXPECT_EQ(Attributes::from(attributes.to_attributes()).describe(), attributes.describe());
}

TEST(Attributes, EveryStructReadsBackWhatItWrites) {
  expect_round_trip(Pool2dAttributes{{2, 2}, {1, 2}, {1, 1}, DimVector{1, 3, 8, 8}});
  expect_round_trip(MaxPool2dBackwardAttributes{DimVector{3, 8, 8}});
  expect_round_trip(SoftmaxAttributes{-2});
  expect_round_trip(LossAttributes{7});
  expect_round_trip(ClampAttributes{-0.5, std::numeric_limits<double>::infinity()});
  expect_round_trip(PowAttributes{2.5});
  expect_round_trip(GeluAttributes{true});
  expect_round_trip(UniformAttributes{-1.0, 3.0, nullptr});
  expect_round_trip(NormalAttributes{0.5, 2.0, nullptr});
  expect_round_trip(SgdAttributes{0.1, 0.9, 1e-4, true});
  expect_round_trip(AdamwAttributes{1e-3, 0.9, 0.999, 1e-8, 0.01});
  expect_round_trip(FactoryAttributes{kCPU, DimVector{2, 0, 3}, DType::Float32, nullptr});
  expect_round_trip(RandintAttributes{kCPU, 3, 10, DimVector{5}, nullptr});
  expect_round_trip(DropoutAttributes{0.25, nullptr});
  expect_round_trip(CatAttributes{-1});
  expect_round_trip(TriangleAttributes{-3});
  expect_round_trip(OneHotAttributes{10});
  expect_round_trip(EmbeddingBackwardAttributes{50000});
  // The structs whose printing depends on the op.
  const Conv2dAttributes conv{{2, 1}, {0, 3}, {2, 2}, 3, DimVector{6, 4, 3, 3}};
  EXPECT_EQ(Conv2dAttributes::from(conv.to_attributes()).describe("weight_sizes"),
            conv.describe("weight_sizes"));
  const LayerNormAttributes norm{DimVector{4, 8}, 1e-6, true};
  EXPECT_EQ(LayerNormAttributes::from(norm.to_attributes()).describe(true), norm.describe(true));
  const ReduceAttributes reduce{DimVector{0, -1}, true, 1.0};
  EXPECT_EQ(ReduceAttributes::from(reduce.to_attributes()).describe(true), reduce.describe(true));
}

// ---- printing --------------------------------------------------------------------------------

TEST(Attributes, PrintReadably) {
  Conv2dAttributes conv;
  conv.padding = {1, 1};
  EXPECT_EQ(conv.describe(), "stride=[1,1] padding=[1,1] dilation=[1,1] groups=1");
  conv.sizes = DimVector{2, 3, 8, 8};
  EXPECT_EQ(conv.describe("input_sizes"),
            "input_sizes=[2,3,8,8] stride=[1,1] padding=[1,1] dilation=[1,1] groups=1");
  EXPECT_EQ((Pool2dAttributes{{2, 2}, {2, 2}, {0, 0}, {}}.describe()),
            "kernel=[2,2] stride=[2,2] padding=[0,0]");
  EXPECT_EQ((LayerNormAttributes{DimVector{64}, 1e-5, true}.describe(true)),
            "normalized_shape=[64] eps=1e-05 weight=true");
  EXPECT_EQ((ReduceAttributes{DimVector{}, false, 1.0}.describe(true)),
            "dims=[] keepdim=false correction=1");
  EXPECT_EQ((ClampAttributes{0.0, std::numeric_limits<double>::infinity()}.describe()),
            "low=0 high=inf");
  EXPECT_EQ((AdamwAttributes{1e-3, 0.9, 0.999, 1e-8, 0.1}.describe()),
            "lr=0.001 beta1=0.9 beta2=0.999 eps=1e-08 weight_decay=0.1");
  // Doubles print as the shortest text that reads back as the same value.
  EXPECT_EQ(PowAttributes{0.1}.describe(), "exponent=0.1");
}

// What describe_attributes() prints for the calls the user functions make.
class Described final : public OpObserver {
 public:
  void on_op(const OpCall& call, const OpOutputs& /*outputs*/) override {
    printed.emplace_back(call.kind, describe_attributes(call));
  }
  std::vector<std::pair<OpKind, std::string>> printed;
};

// Runs `body` and returns the printed attributes of its one op call.
std::string described(const std::function<void()>& body) {
  Described observer;
  {
    const OpObserverGuard guard(&observer);
    body();
  }
  EXPECT_EQ(observer.printed.size(), 1u);
  return observer.printed.empty() ? "" : observer.printed.back().second;
}

TEST(Attributes, DescribeTheCallsOfTheUserFunctions) {
  const Tensor image = random_tensor({1, 2, 6, 6});
  const Tensor weight = random_tensor({4, 2, 3, 3});
  EXPECT_EQ(described([&] {
              conv2d(image, weight, {}, {2}, {1, 0}, {1, 2});
            }),
            "stride=[2,2] padding=[1,0] dilation=[1,2] groups=1");
  const Tensor grad = random_tensor({1, 4, 4, 4});
  EXPECT_EQ(described([&] {
              conv2d_backward_input(grad, weight, {1, 2, 6, 6}, {1}, {0});
            }),
            "input_sizes=[1,2,6,6] stride=[1,1] padding=[0,0] dilation=[1,1] groups=1");
  EXPECT_EQ(described([&] {
              conv2d_backward_weight(grad, image, {4, 2, 3, 3});
            }),
            "weight_sizes=[4,2,3,3] stride=[1,1] padding=[0,0] dilation=[1,1] groups=1");
  EXPECT_EQ(described([&] { max_pool2d(image, {2}); }), "kernel=[2,2] stride=[2,2] padding=[0,0]");
  EXPECT_EQ(described([&] {
              avg_pool2d_backward(random_tensor({1, 2, 3, 3}), {1, 2, 6, 6}, {2});
            }),
            "input_sizes=[1,2,6,6] kernel=[2,2] stride=[2,2] padding=[0,0]");
  EXPECT_EQ(described([&] { layer_norm(image, {6}, {}, {}, 1e-5); }),
            "normalized_shape=[6] eps=1e-05 weight=false");
  EXPECT_EQ(described([&] {
              var(image, {1, -1}, /*unbiased=*/true, /*keepdim=*/true);
            }),
            "dims=[1,-1] keepdim=true correction=1");
  EXPECT_EQ(described([&] { sum(image); }), "dims=[] keepdim=false");
  EXPECT_EQ(described([&] { add(image, 2); }), "scalar=2");
  EXPECT_EQ(described([&] { add(image, image); }), "");
  EXPECT_EQ(described([&] { matmul(weight, weight); }), "");
  EXPECT_EQ(described([&] { clamp(image, -1.0, 0.5); }), "low=-1 high=0.5");
  EXPECT_EQ(described([&] { cat({image, image}, -3); }), "dim=-3");
  EXPECT_EQ(described([&] { randint(0, 10, {3}); }),
            "low=0 high=10 sizes=[3] device=cpu generator=default");
  const Tensor scores = random_tensor({3, 5});
  EXPECT_EQ(described([&] { cross_entropy(scores, random_integers({3}, 0, 5), 2); }),
            "ignore_index=2");
}

}  // namespace
}  // namespace grove::ops
