// OpKind: every op grove has, in one list. The list is the table of contents of ops/: each entry
// names the op as users spell it, and the family file that declares, checks and runs it.
//
// Recipe for adding an op. Everything about it is reachable from its OpEntry (ops/dispatch.h)
// or found by its kind, and a test fails when a piece is missing. The files it touches:
//   1. ops/op_kind.h: the op in GROVE_OPS below, in its family;
//   2. ops/<family>.h: the user function, its math and shapes in the comment;
//   3. ops/<family>.cpp: its `infer` (the op's own checks, then its outputs), its OpEntry (the
//      named inputs and the dtypes each takes, infer, kernels, the attribute printer, an input
//      count when attributes decide it), the user function (build the OpAttributes, dispatch
//      with the entry), and the entry in <family>_entries() at the end of the file; attributes
//      beyond one scalar get a typed struct in ops/attributes.h and .cpp;
//   4. ops/cpu/<family>.h and .cpp: the CPU kernel, the readable reference;
//   5. ops/cuda/<family>.h and .cu: the CUDA kernel, and its row in the parity table
//      tests/ops/cuda_parity_test.cpp (CudaParityCoverageTest fails without it); or, with no
//      CUDA kernel yet, the op in the list of tests/ops/op_table_test.cpp;
//   6. autograd/rules_<family>.cpp: its derivative rule, headed by its math (or
//      Differentiability::Never or NoRule), and a gradcheck case in
//      tests/autograd/gradcheck_<family>_test.cpp (gradcheck_coverage_test.cpp checks both);
//   7. tests/misuse/op_samples.h: a valid call, which the misuse suite breaks one way at a time
//      (op_table_misuse_test.cpp fails for an op without one, or with attributes and no printer);
//   8. tests/ops/<family>_test.cpp: values against a naive double reference;
//   9. bench/ if it is hot; models/nn/ if users want it as a layer.
// A new family also adds <family>_entries() to ops/op_table.h and ops/op_table.cpp (build files
// pick up ops/<family>.cpp, its kernels and tests/ops/<family>_test.cpp by name). Dispatch, the
// IR, tracing, compile and the printers need nothing: they read the entry. rms_norm is the
// worked example: a new family (ops/rms_norm.*, its kernels, its rule in rules_nn.cpp, its
// tests) and its layer, nn::RMSNorm.
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
  X(UnscaleGrads, "unscale_grads_") X(UpdateScale, "update_scale_")                         \
  /* reduce.h */                                                                            \
  X(Sum, "sum") X(Mean, "mean") X(Max, "max") X(Argmax, "argmax") X(Var, "var")             \
  /* linalg.h */                                                                            \
  X(Matmul, "matmul") X(Linear, "linear") X(Bmm, "bmm")                                     \
  X(LinearWeightGrad, "linear_weight_grad")                                                 \
  /* softmax.h */                                                                           \
  X(Softmax, "softmax") X(LogSoftmax, "log_softmax") X(CrossEntropy, "cross_entropy")       \
  X(NllLoss, "nll_loss")                                                                    \
  X(CrossEntropyBackward, "cross_entropy_backward") X(NllLossBackward, "nll_loss_backward") \
  /* layer_norm.h, embedding.h */                                                           \
  X(LayerNorm, "layer_norm") X(Embedding, "embedding")                                      \
  X(LayerNormBackward, "layer_norm_backward") X(EmbeddingBackward, "embedding_backward")    \
  X(Attention, "attention") X(AttentionBackward, "attention_backward")                      \
  /* rms_norm.h */                                                                          \
  X(RmsNorm, "rms_norm") X(RmsNormBackward, "rms_norm_backward")                            \
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
