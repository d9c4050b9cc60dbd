// OpKind: every op grove has, in one list. The list is the table of contents of ops/: each entry
// names the op as users spell it, and the family file that declares, checks and runs it.
//
// Recipe for adding an op (see also dispatch.h and op_table.h):
//   1. add it to GROVE_OPS below, in its family;
//   2. declare the user function in ops/<family>.h and write it in ops/<family>.cpp: build the
//      OpAttributes, call dispatch() with the family's OpEntry for the op;
//   3. write its argument check and output shapes (the entry's `infer`) in ops/<family>.cpp, its
//      CPU kernel in ops/cpu/<family>.cpp and its CUDA kernel in ops/cuda/<family>.cu (or list
//      the op in tests/ops/op_table_test.cpp as one without a CUDA kernel);
//   4. add the OpEntry to the family's entry list (<family>_entries() at the end of
//      ops/<family>.cpp), which the op table (op_entry(kind), ops/op_table.h) gathers, and its
//      number of tensor inputs to ops/input_counts.cpp (dispatch checks it);
//   5. its derivative rule in the matching autograd/rules_*.cpp, headed by its math, and a
//      gradcheck case in tests/autograd/gradcheck_<family>_test.cpp (or Differentiability::Never
//      or NoRule in the rule list); tests/autograd/gradcheck_coverage_test.cpp checks both;
//   6. a test entry in tests/ops/<family>_test.cpp against a naive double reference, and a
//      parity test of the CUDA kernel against the CPU kernel in
//      tests/ops/cuda_<family>_test.cpp;
//   7. a benchmark in bench/ if it is hot.
#pragma once

#include <cstdint>
#include <ostream>
#include <string_view>

namespace grove::ops {

// X(Kind, "name")
// clang-format off
#define GROVE_OPS(X)                                                                        \
  /* elementwise.h: binary arithmetic with broadcasting (tensor or scalar right operand) */ \
  X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div") X(Maximum, "maximum")             \
  X(Minimum, "minimum")                                                                     \
  /* elementwise.h: comparisons (bool results) and selection */                            \
  X(Eq, "eq") X(Ne, "ne") X(Lt, "lt") X(Le, "le") X(Gt, "gt") X(Ge, "ge")                   \
  X(Where, "where") X(MaskedFill, "masked_fill") X(Clamp, "clamp")                          \
  /* elementwise.h: unary */                                                                \
  X(Neg, "neg") X(Exp, "exp") X(Log, "log") X(Sqrt, "sqrt") X(Rsqrt, "rsqrt")               \
  X(Pow, "pow") X(Abs, "abs") X(Tanh, "tanh") X(Sigmoid, "sigmoid") X(Relu, "relu")         \
  X(Gelu, "gelu")                                                                           \
  /* elementwise.h: derivatives of unary ops */                                             \
  X(GeluBackward, "gelu_backward")                                                          \
  X(ReluBackward, "relu_backward")                                                          \
  /* inplace.h: in-place updates for optimizers and initialisers */                         \
  X(AddInplace, "add_") X(MulInplace, "mul_") X(Addcmul, "addcmul_")                        \
  X(Addcdiv, "addcdiv_") X(Lerp, "lerp_") X(Fill, "fill_") X(Copy, "copy_")                \
  X(Uniform, "uniform_") X(Normal, "normal_")                                               \
  /* optim.h: fused optimizer updates */                                                    \
  X(SgdStep, "sgd_") X(AdamwStep, "adamw_")                                                 \
  /* reduce.h */                                                                            \
  X(Sum, "sum") X(Mean, "mean") X(Max, "max") X(Argmax, "argmax") X(Var, "var")             \
  /* linalg.h */                                                                            \
  X(Matmul, "matmul") X(Linear, "linear") X(Bmm, "bmm")                                     \
  /* softmax.h */                                                                           \
  X(Softmax, "softmax") X(LogSoftmax, "log_softmax") X(CrossEntropy, "cross_entropy")       \
  X(NllLoss, "nll_loss")                                                                    \
  X(CrossEntropyBackward, "cross_entropy_backward") X(NllLossBackward, "nll_loss_backward") \
  /* layer_norm.h, embedding.h */                                                           \
  X(LayerNorm, "layer_norm") X(Embedding, "embedding")                                      \
  X(LayerNormBackward, "layer_norm_backward") X(EmbeddingBackward, "embedding_backward")    \
  X(Attention, "attention") X(AttentionBackward, "attention_backward")                      \
  /* conv.h, pool.h */                                                                      \
  X(Conv2d, "conv2d") X(MaxPool2d, "max_pool2d") X(AvgPool2d, "avg_pool2d")                 \
  X(Conv2dBackwardInput, "conv2d_backward_input")                                           \
  X(Conv2dBackwardWeight, "conv2d_backward_weight")                                         \
  X(MaxPool2dBackward, "max_pool2d_backward") X(AvgPool2dBackward, "avg_pool2d_backward")   \
  /* shape.h: shape ops that copy */                                                        \
  X(Cat, "cat") X(Tril, "tril") X(Triu, "triu") X(OneHot, "one_hot")                        \
  /* random.h */                                                                            \
  X(Rand, "rand") X(Randn, "randn") X(Randint, "randint") X(Dropout, "dropout")           \
  /* collective.h: across the processes of a group */                                       \
  X(AllReduce, "all_reduce_") X(Broadcast, "broadcast_") X(AllGather, "all_gather")
// clang-format on

enum class OpKind : std::uint16_t {
#define GROVE_OP_ENUM(kind, name) kind,
  GROVE_OPS(GROVE_OP_ENUM)
#undef GROVE_OP_ENUM
      Count
};

std::string_view op_name(OpKind kind);
std::ostream& operator<<(std::ostream& out, OpKind kind);

}  // namespace grove::ops
