// The program's thread choice (models/program/threads.h, Note [Threads on a shared machine]):
// /proc/stat's cpu line, the idle cores between two samples, and the order in which a flag and
// the variables decide.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.h"
#include "models/program/threads.h"

namespace grove::program {
namespace {

TEST(Threads, ParsesTheCpuLineOfProcStat) {
  const auto times = parse_cpu_line("cpu  100 5 50 800 20 1 2 3 7 0");
  ASSERT_TRUE(times.has_value());
  EXPECT_EQ(times->idle, 820u);  // idle + iowait
  EXPECT_EQ(times->total, 981u);  // user .. steal; guest (7) is inside user already
  EXPECT_FALSE(parse_cpu_line("cpu0 1 2 3 4").has_value());
  EXPECT_FALSE(parse_cpu_line("intr 12345").has_value());
  EXPECT_FALSE(parse_cpu_line("cpu  0 0 0 0").has_value());
}

TEST(Threads, UsesTheIdleCoresSplitBetweenRanks) {
  const CpuTimes before{1000, 2000};
  EXPECT_EQ(idle_threads(before, {1200, 2200}, 2, 1), 2);  // all idle
  EXPECT_EQ(idle_threads(before, {1100, 2200}, 2, 1), 1);  // one core busy
  EXPECT_EQ(idle_threads(before, {1000, 2200}, 2, 1), 1);  // all busy: still one
  EXPECT_EQ(idle_threads(before, {1200, 2200}, 16, 4), 4);  // 16 idle cores, 4 ranks
  EXPECT_EQ(idle_threads(before, before, 8, 1), 8);         // no time passed: as idle
}

// Restores an environment variable when it goes.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedVariable() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(Threads, AFlagThenTheVariablesDecideBeforeTheLoad) {
  const ScopedVariable grove("GROVE_NUM_THREADS", "3");
  const ScopedVariable omp("OMP_NUM_THREADS", "5");
  EXPECT_EQ(choose_threads(2).threads, 2);
  EXPECT_EQ(choose_threads(2).source, "--threads");
  EXPECT_EQ(choose_threads(std::nullopt).threads, 3);
  EXPECT_EQ(choose_threads(std::nullopt).source, "GROVE_NUM_THREADS");
  {
    const ScopedVariable unset("GROVE_NUM_THREADS", nullptr);
    EXPECT_EQ(choose_threads(std::nullopt).threads, 5);
    const ScopedVariable also_unset("OMP_NUM_THREADS", nullptr);
    const ThreadChoice automatic = choose_threads(std::nullopt);
    EXPECT_GE(automatic.threads, 1);
    EXPECT_EQ(automatic.source.rfind("auto: ", 0), 0u) << automatic.source;
  }
  const ScopedVariable bad("GROVE_NUM_THREADS", "many");
  try {
    (void)choose_threads(std::nullopt);
    FAIL() << "GROVE_NUM_THREADS=many should be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GROVE_NUM_THREADS"), std::string::npos) << e.what();
  }
  EXPECT_NE(choose_threads(1).describe().find("1 thread (--threads)"), std::string::npos);
}

}  // namespace
}  // namespace grove::program
