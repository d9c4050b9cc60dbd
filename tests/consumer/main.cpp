// A user's program on grove::grove: a small model trained a few steps with autograd and an
// optimizer, in float32 and under bf16 autocast. Exits 0 when the loss fell and every parameter
// got a gradient (a program whose autograd did not register itself would have none).
#include <cstdio>

#include "core/tensor.h"
#include "models/nn/linear.h"
#include "models/optim/adamw.h"
#include "ops/autocast.h"
#include "ops/elementwise.h"
#include "ops/random.h"
#include "ops/reduce.h"

int main() {
  using namespace grove;
  manual_seed(0);
  nn::Linear layer(4, 1);
  optim::AdamW optimizer(layer.parameters(), {.lr = 0.05});
  const Tensor x = ops::randn({64, 4});
  const Tensor y = ops::sum(x, {1}, /*keepdim=*/true);  // learn the sum of the inputs
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 50; ++step) {
    optimizer.zero_grad();
    Tensor loss;
    {
      const AutocastGuard autocast(step % 2 == 0 ? std::optional<DType>(DType::BFloat16)
                                                 : std::nullopt);
      const Tensor error = ops::sub(layer(x), y);
      loss = ops::mean(ops::mul(error, error));
    }
    loss.backward();
    for (const Tensor& p : layer.parameters()) {
      if (!p.grad().defined()) {
        std::fprintf(stderr, "grove_consumer: a parameter has no gradient\n");
        return 1;
      }
    }
    optimizer.step();
    const double value = loss.item<double>();
    if (step == 0) first = value;
    last = value;
  }
  std::printf("grove_consumer: loss %.4f -> %.4f\n", first, last);
  return last < first / 4 ? 0 : 1;
}
