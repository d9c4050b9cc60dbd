// Misuse of the tree manager and compile(): calls from another thread, after the manager is
// gone, of empty handles; input indices and dynamic dims that do not exist; outputs used after
// their step or their manager ended; compiled functions given the wrong number of inputs or
// returning nothing. Each case runs on a fresh thread, since managers and generations belong to
// a thread (the cases must not see each other's steps).
#include <exception>
#include <optional>
#include <thread>

#include "core/device.h"
#include "graphs/compile/compile.h"
#include "graphs/tree/generation.h"
#include "graphs/tree/tree_manager.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "tests/fresh_thread.h"
#include "tests/misuse/misuse_case.h"

namespace grove::misuse {
namespace {

using graphs::TensorList;

using grove::testing::on_fresh_thread;

MisuseCase fresh(std::string name, std::function<void()> body, std::vector<std::string> facts) {
  return {std::move(name), [body = std::move(body)] { on_fresh_thread(body); }, std::move(facts)};
}

graphs::TreeOptions quiet() {
  graphs::TreeOptions options;
  options.print_warnings = false;
  return options;
}

graphs::WrappedFunction doubling(std::string name = "double") {
  graphs::WrappedFunction function;
  function.callable = [](const TensorList& in) { return TensorList{ops::mul(in[0], 2.0)}; };
  function.name = std::move(name);
  return function;
}

graphs::CompileOptions quiet_compile() {
  graphs::CompileOptions options;
  options.print_warnings = false;
  return options;
}

std::vector<MisuseCase> tree_manager_cases() {
  return {
      fresh("CallFromAnotherThread",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              const graphs::ManagedFunction f = manager.add_function(doubling());
              f({ones({2})});
              on_fresh_thread([&] { f({ones({2})}); });
            },
            {"thread"}),
      fresh("CallAfterTheManagerIsGone",
            [] {
              graphs::ManagedFunction f;
              {
                graphs::TreeManager manager(kCPU, quiet());
                f = manager.add_function(doubling());
                f({ones({2})});
              }
              f({ones({2})});
            },
            {"tree manager no longer exists"}),
      fresh("CallOfAnEmptyManagedFunction", [] { graphs::ManagedFunction()({ones({2})}); },
            {"empty", "add_function"}),
      fresh("AddFunctionWithoutCallable",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              graphs::WrappedFunction function;
              function.name = "nothing";
              manager.add_function(function);
            },
            {"add_function", "nothing", "callable"}),
      fresh("StaticInputIndexPastTheInputs",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              graphs::WrappedFunction function = doubling();
              function.static_input_indices = {3};
              manager.add_function(function)({ones({2})});
            },
            {"input index 3", "static_input_indices", "1 inputs"}),
      fresh("NegativeMutatedInputIndex",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              graphs::WrappedFunction function = doubling();
              function.mutated_input_indices = {-1};
              manager.add_function(function)({ones({2})});
            },
            {"input index -1", "mutated_input_indices"}),
      fresh("CaptureSizesOfTheWrongLength",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              graphs::WrappedFunction function = doubling();
              function.dynamic_dims = {{0, 0}};
              function.capture_sizes = {{2, 3}};
              manager.add_function(function);
            },
            {"capture_sizes", "2 sizes", "1 dynamic_dims"}),
      fresh("DynamicDimOfAMissingInput",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              graphs::WrappedFunction function = doubling();
              function.dynamic_dims = {{4, 0}};
              function.capture_sizes = {{2}};
              manager.add_function(function)({ones({2})});
            },
            {"dynamic dim 0", "input 4"}),
      fresh("DynamicDimPastTheInputsRank",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              graphs::WrappedFunction function = doubling();
              function.dynamic_dims = {{0, 1}};
              function.capture_sizes = {{2}};
              manager.add_function(function)({ones({2})});
            },
            {"dynamic dim 1", "input 0"}),
      fresh("OutputReadAfterItsStepEnded",
            [] {
              graphs::TreeManager manager(kCPU, quiet());
              const graphs::ManagedFunction f = manager.add_function(doubling("doubler"));
              Tensor kept;
              for (int step = 0; step < 3; ++step) {
                graphs::mark_step_begin();
                kept = f({ones({2})})[0];
              }
              const Tensor old = kept;
              graphs::mark_step_begin();
              f({ones({2})});
              old.to_vector<float>();
            },
            {"doubler"}),
      fresh("OutputReadAfterTheManagerIsGone",
            [] {
              Tensor kept;
              {
                graphs::TreeManager manager(kCPU, quiet());
                const graphs::ManagedFunction f = manager.add_function(doubling("doubler"));
                for (int step = 0; step < 3; ++step) {
                  graphs::mark_step_begin();
                  kept = f({ones({2})})[0];
                }
              }
              ops::add(kept, 1.0);
            },
            {"doubler"}),
  };
}

std::vector<MisuseCase> compile_cases() {
  return {
      fresh("CallOfAnEmptyCompiledFunction", [] { graphs::CompiledFunction()({ones({2})}); },
            {"empty CompiledFunction", "compile()"}),
      fresh("CompileAnEmptyFunction",
            [] { graphs::compile(std::function<TensorList(const TensorList&)>()); },
            {"compile", "empty"}),
      fresh("OneTensorFunctionGivenTwo",
            [] {
              const graphs::CompiledFunction f =
                  graphs::compile([](const Tensor& x) { return ops::exp(x); }, quiet_compile());
              f(TensorList{ones({2}), ones({2})});
            },
            {"one tensor", "2"}),
      fresh("OneTensorFunctionGivenNone",
            [] {
              const graphs::CompiledFunction f =
                  graphs::compile([](const Tensor& x) { return ops::exp(x); }, quiet_compile());
              f(TensorList{});
            },
            {"one tensor", "0"}),
      fresh("FunctionReturningNothing",
            [] {
              const graphs::CompiledFunction f =
                  graphs::compile([](const TensorList&) { return TensorList{}; }, quiet_compile());
              f({ones({2})});
            },
            {"compiled"}),
      fresh("UndefinedInput",
            [] {
              const graphs::CompiledFunction f =
                  graphs::compile([](const TensorList& in) { return TensorList{ops::exp(in[0])}; },
                                  quiet_compile());
              f({Tensor()});
            },
            {"input 0", "undefined"}),
      fresh("HostReadUnderOrError",
            [] {
              graphs::CompileOptions options = quiet_compile();
              options.or_error = true;
              options.name = "reads_host";
              const graphs::CompiledFunction f = graphs::compile(
                  [](const TensorList& in) {
                    const double scale = ops::sum(in[0]).item<double>();
                    return TensorList{ops::mul(in[0], scale)};
                  },
                  options);
              for (int i = 0; i < 3; ++i) f({ones({2})});
            },
            {"reads_host"}),
      fresh("OutputReadAfterItsStepEnded",
            [] {
              graphs::CompileOptions options = quiet_compile();
              options.name = "exp_step";
              const graphs::CompiledFunction f =
                  graphs::compile([](const Tensor& x) { return ops::exp(x); }, options);
              Tensor kept;
              for (int step = 0; step < 3; ++step) {
                graphs::mark_step_begin();
                kept = f(ones({2}));
              }
              const Tensor old = kept;
              graphs::mark_step_begin();
              f(ones({2}));
              old.to_vector<float>();
            },
            {"exp_step"}),
      fresh("CallFromAnotherThread",
            [] {
              const graphs::CompiledFunction f =
                  graphs::compile([](const Tensor& x) { return ops::exp(x); }, quiet_compile());
              f(ones({2}));
              on_fresh_thread([&] { f(ones({2})); });
            },
            {"thread"}),
  };
}

TEST(TreeManagerMisuseExtra, ManagerOnACudaDeviceWithoutOneIsAnError) {
  if (cuda_is_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_TRUE(fails_with_grove_error(
      fresh("ManagerOnCuda", [] { graphs::TreeManager manager(cuda(0), quiet()); }, {"cuda:0"})));
}

GROVE_MISUSE_SUITE(TreeManagerMisuse, tree_manager_cases)
GROVE_MISUSE_SUITE(CompileMisuse, compile_cases)

}  // namespace
}  // namespace grove::misuse
