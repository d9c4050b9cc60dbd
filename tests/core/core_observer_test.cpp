// Core observers (Note [Core observers]): a thread observer sees every view, copy and write core
// makes on its thread, with the kind and arguments that make it again, on tensors that do not
// require gradients; it sees nothing of other threads, nothing while reports are suspended, and
// nothing from factories and host reads. This binary links only grove_core, so autograd's slot
// is empty and everything seen here comes from the thread's own list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/core_observer.h"
#include "core/tensor.h"

namespace grove {
namespace {

using ::testing::HasSubstr;

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// Remembers every event as a line of text and the tensors involved.
class RecordingObserver final : public CoreObserver {
 public:
  struct Derived {
    DerivedKind kind;
    Tensor source;
    Tensor result;
    std::vector<std::int64_t> args;
  };
  struct Write {
    bool before;  // before_write (true) or on_write (false)
    WriteKind kind;
    Tensor target;
    Tensor source;  // undefined for fills
    double value;
    bool non_blocking;
  };

  void on_derived(const Tensor& source, const Tensor& result, DerivedKind kind,
                  IntArrayRef args) override {
    derived.push_back({kind, source, result, {args.begin(), args.end()}});
  }
  void before_write(const CoreWrite& write) override { writes.push_back(record(true, write)); }
  void on_write(const CoreWrite& write) override { writes.push_back(record(false, write)); }

  std::size_t events() const { return derived.size() + writes.size(); }

  std::vector<Derived> derived;
  std::vector<Write> writes;

 private:
  static Write record(bool before, const CoreWrite& write) {
    return {before,
            write.kind,
            write.target,
            write.source != nullptr ? *write.source : Tensor(),
            write.value.to<double>(),
            write.non_blocking};
  }
};

bool same(const Tensor& a, const Tensor& b) {
  return a.impl() == b.impl();
}

// One view of a tensor that does not require gradients, and what the observer must see.
struct ViewCase {
  const char* name;
  std::function<Tensor(const Tensor&)> make;
  DerivedKind kind;
  std::vector<std::int64_t> args;
};

TEST(CoreObserver, SeesEveryViewWithItsKindAndArgs) {
  const Tensor x = arange(24).view({2, 3, 4});
  ASSERT_FALSE(x.requires_grad());
  const std::vector<ViewCase> cases = {
      {"view",
       [](const Tensor& t) {
         return t.view({6, -1});
       },
       DerivedKind::Reshape,
       {}},
      {"reshape",
       [](const Tensor& t) {
         return t.reshape({4, 6});
       },
       DerivedKind::Reshape,
       {}},
      {"squeeze",
       [](const Tensor& t) { return t.narrow(0, 0, 1).squeeze(); },
       DerivedKind::Reshape,
       {}},
      {"squeeze(dim)",
       [](const Tensor& t) { return t.narrow(0, 0, 1).squeeze(0); },
       DerivedKind::Reshape,
       {}},
      {"unsqueeze", [](const Tensor& t) { return t.unsqueeze(1); }, DerivedKind::Reshape, {}},
      {"transpose",
       [](const Tensor& t) { return t.transpose(0, 2); },
       DerivedKind::Permute,
       {2, 1, 0}},
      {"t", [](const Tensor& t) { return t.select(0, 0).t(); }, DerivedKind::Permute, {1, 0}},
      {"permute",
       [](const Tensor& t) {
         return t.permute({1, 2, 0});
       },
       DerivedKind::Permute,
       {1, 2, 0}},
      {"slice",
       [](const Tensor& t) { return t.slice(2, -3, 4, 2); },
       DerivedKind::Slice,
       {2, 1, 2}},
      {"narrow", [](const Tensor& t) { return t.narrow(1, 1, 2); }, DerivedKind::Slice, {1, 1, 1}},
      {"select", [](const Tensor& t) { return t.select(1, -1); }, DerivedKind::Select, {1, 2}},
      {"expand",
       [](const Tensor& t) {
         return t.narrow(0, 0, 1).expand({5, 3, 4});
       },
       DerivedKind::Expand,
       {}},
      {"as_strided",
       [](const Tensor& t) {
         return t.as_strided({2, 2}, {1, 4}, 3);
       },
       DerivedKind::AsStrided,
       {3}},
  };
  for (const ViewCase& c : cases) {
    RecordingObserver observer;
    Tensor result;
    {
      const CoreObserverGuard guard(&observer);
      result = c.make(x);
    }
    ASSERT_FALSE(observer.derived.empty()) << c.name;
    // The last event is the view itself (some cases make a first view to get a suitable shape).
    const RecordingObserver::Derived& seen = observer.derived.back();
    EXPECT_EQ(seen.kind, c.kind) << c.name;
    EXPECT_EQ(seen.args, c.args) << c.name;
    EXPECT_TRUE(same(seen.result, result)) << c.name;
    EXPECT_TRUE(seen.source.is_alias_of(x)) << c.name;
    if (observer.derived.size() == 1) {
      EXPECT_TRUE(same(seen.source, x)) << c.name;
    }
    EXPECT_TRUE(observer.writes.empty()) << c.name;
  }
}

// The tensors handed to the observer are the real source and result, so a tracer can map them
// to its values: here a chain of three views, each the source of the next.
TEST(CoreObserver, AChainOfViewsIsSeenLinkByLink) {
  const Tensor x = zeros({4, 6});
  RecordingObserver observer;
  Tensor y;
  {
    const CoreObserverGuard guard(&observer);
    y = x.t().narrow(0, 2, 3).unsqueeze(0);
  }
  ASSERT_EQ(observer.derived.size(), 3u);
  EXPECT_TRUE(same(observer.derived[0].source, x));
  EXPECT_TRUE(same(observer.derived[1].source, observer.derived[0].result));
  EXPECT_TRUE(same(observer.derived[2].source, observer.derived[1].result));
  EXPECT_TRUE(same(observer.derived[2].result, y));
  EXPECT_EQ(observer.derived[1].result.sizes(), IntArrayRef({3, 4}));
}

TEST(CoreObserver, SeesEveryCopyAsOneEventWithTheResultsDtype) {
  const Tensor transposed = arange(6).view({2, 3}).t();
  RecordingObserver observer;
  Tensor contiguous, cloned, converted;
  {
    const CoreObserverGuard guard(&observer);
    contiguous = transposed.contiguous();
    cloned = contiguous.clone();
    converted = cloned.to(DType::Float64);
  }
  ASSERT_EQ(observer.events(), 3u);
  const Tensor* results[] = {&contiguous, &cloned, &converted};
  const Tensor* sources[] = {&transposed, &contiguous, &cloned};
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(observer.derived[i].kind, DerivedKind::Copy) << i;
    EXPECT_TRUE(observer.derived[i].args.empty()) << i;
    EXPECT_TRUE(same(observer.derived[i].source, *sources[i])) << i;
    EXPECT_TRUE(same(observer.derived[i].result, *results[i])) << i;
  }
  EXPECT_EQ(observer.derived[2].result.dtype(), DType::Float64);
  EXPECT_EQ(converted.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

// Calls that return the tensor they were called on made nothing, and say nothing.
TEST(CoreObserver, CallsThatReturnTheirOwnTensorAreNotReported) {
  const Tensor x = zeros({2, 3});
  const Tensor row = zeros({3});
  RecordingObserver observer;
  {
    const CoreObserverGuard guard(&observer);
    EXPECT_TRUE(same(x.contiguous(), x));
    EXPECT_TRUE(same(x.to(DType::Float32), x));
    EXPECT_TRUE(same(x.to(kCPU), x));
    EXPECT_TRUE(same(row.t(), row));
    EXPECT_TRUE(same(x.squeeze(0), x));
    (void)x.detach();
  }
  EXPECT_EQ(observer.events(), 0u);
}

// reshape() of a tensor that cannot be viewed copies and then views the copy: two events.
TEST(CoreObserver, AReshapeThatCopiesIsACopyThenAView) {
  const Tensor transposed = arange(6).view({2, 3}).t();
  RecordingObserver observer;
  Tensor flat;
  {
    const CoreObserverGuard guard(&observer);
    flat = transposed.reshape({6});
  }
  ASSERT_EQ(observer.derived.size(), 2u);
  EXPECT_EQ(observer.derived[0].kind, DerivedKind::Copy);
  EXPECT_TRUE(same(observer.derived[0].source, transposed));
  EXPECT_EQ(observer.derived[1].kind, DerivedKind::Reshape);
  EXPECT_TRUE(same(observer.derived[1].source, observer.derived[0].result));
  EXPECT_TRUE(same(observer.derived[1].result, flat));
}

TEST(CoreObserver, SeesCopiesAndFillsBeforeAndAfterTheWrite) {
  const Tensor target = zeros({2, 3});
  const Tensor row = arange(3);  // broadcast along dim 0
  RecordingObserver observer;
  {
    const CoreObserverGuard guard(&observer);
    target.copy_(row, true);
    target.narrow(0, 1, 1).fill_(7.5);
  }
  // The broadcasting expand inside copy_ is a step of the write, not a view of its own; the
  // narrow is a view the caller made.
  ASSERT_EQ(observer.derived.size(), 1u);
  EXPECT_EQ(observer.derived[0].kind, DerivedKind::Slice);
  ASSERT_EQ(observer.writes.size(), 4u);
  const auto& before_copy = observer.writes[0];
  const auto& after_copy = observer.writes[1];
  EXPECT_TRUE(before_copy.before);
  EXPECT_FALSE(after_copy.before);
  for (const auto* copy : {&before_copy, &after_copy}) {
    EXPECT_EQ(copy->kind, WriteKind::Copy);
    EXPECT_TRUE(same(copy->target, target));
    EXPECT_TRUE(same(copy->source, row));
    EXPECT_TRUE(copy->non_blocking);
  }
  const auto& before_fill = observer.writes[2];
  const auto& after_fill = observer.writes[3];
  EXPECT_TRUE(before_fill.before);
  EXPECT_FALSE(after_fill.before);
  for (const auto* fill : {&before_fill, &after_fill}) {
    EXPECT_EQ(fill->kind, WriteKind::Fill);
    EXPECT_TRUE(same(fill->target, observer.derived[0].result));
    EXPECT_FALSE(fill->source.defined());
    EXPECT_EQ(fill->value, 7.5);
    EXPECT_FALSE(fill->non_blocking);
  }
  EXPECT_EQ(target.to_vector<float>(), (std::vector<float>{0, 1, 2, 7.5, 7.5, 7.5}));
}

// before_write may refuse: the write does not happen and on_write is not called.
TEST(CoreObserver, BeforeWriteMayRefuseTheWrite) {
  struct Refuser final : CoreObserver {
    void on_derived(const Tensor&, const Tensor&, DerivedKind, IntArrayRef) override {}
    void before_write(const CoreWrite& write) override {
      GROVE_CHECK(false, "refused ", write.name());
    }
    void on_write(const CoreWrite&) override { ++writes; }
    int writes = 0;
  } refuser;
  const Tensor target = zeros({2});
  const std::uint64_t version = target.version();
  {
    const CoreObserverGuard guard(&refuser);
    EXPECT_THAT(error_of([&] { target.fill_(1); }), HasSubstr("refused fill_"));
    EXPECT_THAT(error_of([&] { target.copy_(ones({2})); }), HasSubstr("refused copy_"));
  }
  EXPECT_EQ(refuser.writes, 0);
  EXPECT_EQ(target.version(), version);
  EXPECT_EQ(target.to_vector<float>(), (std::vector<float>{0, 0}));
}

// A factory's tensor is new (its fill is part of making it) and host reads copy only to read:
// neither is reported.
TEST(CoreObserver, FactoriesAndHostReadsAreNotReported) {
  const Tensor transposed = arange(6).view({2, 3}).t();
  RecordingObserver observer;
  {
    const CoreObserverGuard guard(&observer);
    (void)zeros({2, 2});
    (void)ones({2}, DType::Float64);
    (void)full({3}, 4);
    (void)arange(1, 7, 2, DType::Float64);
    (void)from_vector<float>({1, 2, 3});
    (void)zeros_like(transposed);
    (void)transposed.to_vector<double>();
    (void)transposed.select(0, 1).select(0, 1).item<float>();
    std::ostringstream printed;
    printed << transposed;
  }
  // Only the two selects before item() are the caller's views.
  ASSERT_EQ(observer.events(), 2u);
  EXPECT_EQ(observer.derived[0].kind, DerivedKind::Select);
  EXPECT_EQ(observer.derived[1].kind, DerivedKind::Select);
}

TEST(CoreObserver, NothingIsReportedWhileSuspended) {
  const Tensor x = zeros({2, 3});
  RecordingObserver observer;
  const CoreObserverGuard guard(&observer);
  {
    const SuspendCoreObservers suspend;
    (void)x.t().contiguous();
    x.fill_(1);
    { const SuspendCoreObservers nested; }
    (void)x.view({6});  // still suspended after the nested guard ends
  }
  EXPECT_EQ(observer.events(), 0u);
  (void)x.view({6});
  EXPECT_EQ(observer.events(), 1u);
}

// Observers belong to the thread that registered them.
TEST(CoreObserver, AnObserverSeesOnlyItsOwnThread) {
  const Tensor x = arange(6).view({2, 3});
  RecordingObserver main_observer;
  RecordingObserver worker_observer;
  const CoreObserverGuard guard(&main_observer);
  std::thread worker([&] {
    (void)x.t().contiguous();  // before the worker registers: seen by nobody
    const Tensor y = zeros({3});
    y.copy_(x.select(0, 1));
    {
      const CoreObserverGuard worker_guard(&worker_observer);
      (void)x.view({6});
    }
  });
  worker.join();
  EXPECT_EQ(main_observer.events(), 0u);
  ASSERT_EQ(worker_observer.events(), 1u);
  EXPECT_EQ(worker_observer.derived[0].kind, DerivedKind::Reshape);
  (void)x.narrow(1, 0, 2);
  ASSERT_EQ(main_observer.events(), 1u);
  EXPECT_EQ(main_observer.derived[0].kind, DerivedKind::Slice);
}

TEST(CoreObserver, SeveralObserversRunInRegistrationOrder) {
  std::vector<int> order;
  struct Tagger final : CoreObserver {
    Tagger(std::vector<int>& order, int tag) : order(order), tag(tag) {}
    void on_derived(const Tensor&, const Tensor&, DerivedKind, IntArrayRef) override {
      order.push_back(tag);
    }
    std::vector<int>& order;
    int tag;
  };
  Tagger first(order, 1), second(order, 2);
  const CoreObserverGuard guard_first(&first);
  const CoreObserverGuard guard_second(&second);
  (void)zeros({2, 2}).t();
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

// An observer that makes views while it is told about one sees them too (see the Note); one
// that adds an observer from a callback affects the next event only.
TEST(CoreObserver, CallbacksMayMakeViewsAndRegisterObservers) {
  RecordingObserver late;
  struct Reentrant final : CoreObserver {
    explicit Reentrant(CoreObserver* late) : late(late) {}
    void on_derived(const Tensor&, const Tensor& result, DerivedKind, IntArrayRef) override {
      ++calls;
      if (calls == 1) {
        (void)result.unsqueeze(0);  // reported to this observer again: calls == 2
        add_core_observer(late);
      }
    }
    CoreObserver* late;
    int calls = 0;
  } reentrant(&late);
  {
    const CoreObserverGuard guard(&reentrant);
    (void)zeros({2, 2}).t();
    EXPECT_EQ(reentrant.calls, 2);
    EXPECT_EQ(late.events(), 0u);
    (void)zeros({2, 2}).t();
    EXPECT_EQ(reentrant.calls, 3);
    EXPECT_EQ(late.events(), 1u);
    remove_core_observer(&late);
  }
}

TEST(CoreObserver, RegistrationErrorsAreClear) {
  RecordingObserver observer;
  EXPECT_THAT(error_of([&] { remove_core_observer(&observer); }),
              HasSubstr("remove_core_observer: that observer is not registered on this thread"));
  EXPECT_THAT(error_of([&] { add_core_observer(nullptr); }),
              HasSubstr("add_core_observer: the observer is null"));
  const CoreObserverGuard guard(&observer);
  std::string from_another_thread;
  std::thread([&] {
    from_another_thread = error_of([&] { remove_core_observer(&observer); });
  }).join();
  EXPECT_THAT(from_another_thread, HasSubstr("remove it on the thread that added it"));
  std::vector<RecordingObserver> more(kMaxThreadObservers);
  for (int i = 0; i < kMaxThreadObservers - 1; ++i) add_core_observer(&more[i]);
  EXPECT_THAT(error_of([&] { add_core_observer(&more.back()); }),
              HasSubstr("already has 8 observers registered"));
  for (int i = 0; i < kMaxThreadObservers - 1; ++i) remove_core_observer(&more[i]);
}

}  // namespace
}  // namespace grove
