// Keeps the derivative table and the gradcheck tables complete as ops are added:
//   - every OpKind has an entry in the derivative table (autograd/derivatives.h);
//   - every op with a rule (Differentiability::Rule) runs, on an input that requires gradients,
//     in at least one gradcheck case of tests/autograd/gradcheck_<family>_test.cpp.
// The second list is not written by hand: each case's function runs once under an OpObserver
// that notes the ops it records, so a case counts for the ops it really differentiates.
#include <set>

#include "autograd/derivatives.h"
#include "gradcheck_cases.h"
#include "ops/dispatch.h"

namespace grove::autograd::testing {
namespace {

constexpr auto kNumOps = static_cast<std::size_t>(ops::OpKind::Count);

ops::OpKind op_kind(std::size_t i) {
  return static_cast<ops::OpKind>(i);
}

TEST(DerivativeTable, HasAnEntryForEveryOp) {
  for (std::size_t i = 0; i < kNumOps; ++i) {
    const ops::OpKind kind = op_kind(i);
    try {
      const DerivativeRule& rule = derivative_rule(kind);
      EXPECT_EQ(rule.kind, kind) << "the entry for " << kind << " names another op";
      EXPECT_EQ(rule.backward != nullptr, rule.differentiability == Differentiability::Rule)
          << kind;
    } catch (const Error& error) {
      ADD_FAILURE() << kind << ": " << error.what();
    }
  }
}

// Notes the kind of every op that has an input requiring gradients (the ops autograd records).
class RecordedOps final : public ops::OpObserver {
 public:
  void on_op(const ops::OpCall& call, const ops::OpOutputs& /*outputs*/) override {
    for (const Tensor& input : call.inputs) {
      if (input.requires_grad()) {
        kinds.insert(call.kind);
        return;
      }
    }
  }
  std::set<ops::OpKind> kinds;
};

TEST(GradcheckCoverage, EveryDifferentiableOpHasAGradcheckCase) {
  RecordedOps recorded;
  {
    const ops::OpObserverGuard guard(&recorded);
    for (const auto* family :
         {&elementwise_gradcheck_cases(), &inplace_gradcheck_cases(), &reduce_gradcheck_cases(),
          &linalg_gradcheck_cases(), &nn_gradcheck_cases(), &shape_gradcheck_cases()}) {
      for (const GradcheckCase& c : *family) {
        c.fn(make_inputs(c));
      }
    }
  }
  for (std::size_t i = 0; i < kNumOps; ++i) {
    const ops::OpKind kind = op_kind(i);
    if (derivative_rule(kind).differentiability != Differentiability::Rule) continue;
    EXPECT_TRUE(recorded.kinds.contains(kind))
        << kind << " has a derivative rule but no gradcheck case differentiates it; add one to "
        << "tests/autograd/gradcheck_<family>_test.cpp";
  }
}

}  // namespace
}  // namespace grove::autograd::testing
