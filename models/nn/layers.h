// The parameter-free layers: ReLU, GELU, Dropout, MaxPool2d and Flatten, each a thin module over
// its op (ops/elementwise.h, ops/random.h, ops/pool.h, ops/shape.h) so that it can sit in a
// Sequential and print in a module tree.
//
// None has parameters or buffers. Only Dropout depends on the mode: in training it zeroes each
// element with probability p and scales the rest by 1 / (1 - p), drawing from the default
// generator of the input's device; in eval mode it returns its input itself (no copy).
// Contract: as nn::Module (not thread-safe); forward allocates its output (except as noted).
#pragma once

#include <cstdint>
#include <optional>

#include "models/nn/module.h"

namespace grove::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;  // max(x, 0), any shape
};

// 0.5 x (1 + erf(x / sqrt 2)) (exact, PyTorch's default), or the tanh approximation.
class GELU : public Module {
 public:
  explicit GELU(bool approximate = false) : Module("GELU"), approximate_(approximate) {}
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  bool approximate_;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);  // p in [0, 1)
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;
  double p() const { return p_; }

 private:
  double p_;
};

// Max over kernel x kernel windows moved by stride (default: the kernel), no padding.
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(std::int64_t kernel_size, std::optional<std::int64_t> stride = std::nullopt);
  // x: (N, C, H, W) -> (N, C, Ho, Wo), Ho = (H - kernel) / stride + 1.
  Tensor forward(const Tensor& input) override;
  std::string extra_repr() const override;

 private:
  std::int64_t kernel_size_;
  std::int64_t stride_;
};

// Merges dims start_dim..end_dim (default: all but the batch dim), a view when strides allow.
class Flatten : public Module {
 public:
  explicit Flatten(std::int64_t start_dim = 1, std::int64_t end_dim = -1)
      : Module("Flatten"), start_dim_(start_dim), end_dim_(end_dim) {}
  Tensor forward(const Tensor& input) override;  // (N, C, H, W) -> (N, C H W)
  std::string extra_repr() const override;

 private:
  std::int64_t start_dim_;
  std::int64_t end_dim_;
};

}  // namespace grove::nn
