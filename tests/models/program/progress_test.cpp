// Tests of the progress output (models/program/progress.h): the exact text written on a terminal
// (carriage returns, erase-to-end-of-line, the redraw limit, messages above the bar, finish) and
// in plain mode (a line every N steps and the last), with an injected clock; the ETA and its
// formatting, NaN losses, resumed runs, and option and step-order errors.
#include "models/program/progress.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>

#include "tests/models/program/program_test_util.h"

namespace grove::program {
namespace {

using testing::error_of;

constexpr const char* kErase = "\x1b[K";

// A clock the test sets by hand.
struct FakeClock {
  double now = 0.0;
  std::function<double()> function() {
    return [this] { return now; };
  }
};

// Returns what was written since the last call and forgets it.
std::string take(std::ostringstream& out) {
  std::string text = out.str();
  out.str("");
  return text;
}

TEST(ProgressTest, TerminalRedrawsOneLineAtMostTenTimesASecond) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(out, {.is_terminal = true,
                          .total_steps = 10,
                          .steps_per_epoch = 5,
                          .bar_width = 10,
                          .clock = clock.function()});
  ASSERT_TRUE(progress.terminal_mode());

  clock.now = 1.0;  // one step per second so far: 9 steps left, 9 seconds
  progress.update({.step = 1, .loss = 2.5, .lr = 0.1, .samples_per_s = 1234.4});
  EXPECT_EQ(take(out), std::string("\repoch 1/2  step 1/10 [#.........] 10%  loss 2.5000  lr 0.1  "
                                   "1,234 samples/s  ETA 0:09") +
                           kErase);

  clock.now = 1.05;  // 50 ms after the last drawing: skipped
  progress.update({.step = 2, .loss = 2.0, .lr = 0.1, .samples_per_s = 1234.4});
  EXPECT_EQ(take(out), "");

  clock.now = 1.2;  // 0.4 s per step, 7 left: 2.8 s, shown rounded
  progress.update({.step = 3, .loss = 1.25, .lr = 0.1, .samples_per_s = 1234.4});
  const std::string step3 =
      "epoch 1/2  step 3/10 [###.......] 30%  loss 1.2500  lr 0.1  1,234 samples/s  ETA 0:03";
  EXPECT_EQ(take(out), "\r" + step3 + kErase);

  clock.now = 1.3;  // a message clears the bar, prints above it, and draws the bar again
  progress.message("eval: accuracy 0.8100");
  EXPECT_EQ(take(out), std::string("\r") + kErase + "eval: accuracy 0.8100\n\r" + step3 + kErase);

  clock.now = 5.0;  // the last step is always drawn, with the elapsed time instead of the ETA
  progress.update({.step = 10, .loss = 0.5, .lr = 0.1, .samples_per_s = 1234.4});
  EXPECT_EQ(take(out), std::string("\repoch 2/2  step 10/10 [##########] 100%  loss 0.5000  "
                                   "lr 0.1  1,234 samples/s  elapsed 0:05") +
                           kErase);

  progress.finish();
  EXPECT_EQ(take(out), "\n");
  progress.finish();  // nothing left to end
  EXPECT_EQ(take(out), "");
}

TEST(ProgressTest, TerminalFinishDrawsASkippedStepFirst) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(
      out, {.is_terminal = true, .total_steps = 10, .bar_width = 10, .clock = clock.function()});
  clock.now = 0.5;
  progress.update({.step = 1, .loss = 1.0, .lr = 0.001});
  clock.now = 0.55;
  progress.update({.step = 2, .loss = 1.0, .lr = 0.001});  // within 0.1 s: not drawn yet
  take(out);
  clock.now = 0.6;  // 0.3 s per step, 8 left: 2.4 s
  progress.finish();
  // No epochs (steps_per_epoch 0) and no samples/s (0): neither is shown.
  EXPECT_EQ(
      take(out),
      std::string("\rstep 2/10 [##........] 20%  loss 1.0000  lr 0.001  ETA 0:02") + kErase + "\n");
}

TEST(ProgressTest, PlainLinesEveryNStepsAndTheLast) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(
      out, {.total_steps = 10, .steps_per_epoch = 5, .plain_every = 4, .clock = clock.function()});
  EXPECT_FALSE(progress.terminal_mode());
  for (int step = 1; step <= 10; ++step) {
    clock.now = step;  // one second per step
    progress.update({.step = step, .loss = step / 10.0, .lr = 0.1});
  }
  progress.finish();  // the last step was printed: nothing more
  EXPECT_EQ(out.str(),
            "epoch 1/2  step 4/10 (40%)  loss 0.4000  lr 0.1  ETA 0:06\n"
            "epoch 2/2  step 8/10 (80%)  loss 0.8000  lr 0.1  ETA 0:02\n"
            "epoch 2/2  step 10/10 (100%)  loss 1.0000  lr 0.1  elapsed 0:10\n");
}

TEST(ProgressTest, PlainFinishPrintsAStepNotYetPrinted) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(out, {.total_steps = 10, .plain_every = 4, .clock = clock.function()});
  for (int step = 1; step <= 6; ++step) {
    clock.now = step;
    progress.update({.step = step, .loss = 0.25, .lr = 0.1});
  }
  progress.message("stopped by Ctrl-C");
  progress.finish();  // a run stopped early still shows where it stopped
  EXPECT_EQ(out.str(),
            "step 4/10 (40%)  loss 0.2500  lr 0.1  ETA 0:06\n"
            "stopped by Ctrl-C\n"
            "step 6/10 (60%)  loss 0.2500  lr 0.1  ETA 0:04\n");
}

TEST(ProgressTest, ForcePlainWinsOverATerminal) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(out, {.is_terminal = true,
                          .force_plain = true,
                          .total_steps = 2,
                          .plain_every = 1,
                          .clock = clock.function()});
  EXPECT_FALSE(progress.terminal_mode());
  progress.update({.step = 1, .loss = 1.0, .lr = 0.1});
  progress.update({.step = 2, .loss = 1.0, .lr = 0.1});
  progress.finish();
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos);
  EXPECT_EQ(out.str(),
            "step 1/2 (50%)  loss 1.0000  lr 0.1  ETA 0:00\n"
            "step 2/2 (100%)  loss 1.0000  lr 0.1  elapsed 0:00\n");
}

TEST(ProgressTest, NanLossAndExplicitEpochs) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(
      out, {.total_steps = 4, .steps_per_epoch = 2, .plain_every = 1, .clock = clock.function()});
  progress.update({.step = 1, .loss = NAN, .lr = 3e-4});
  // Epoch fields set by the caller win over the ones derived from steps_per_epoch.
  progress.update({.step = 2, .epoch = 7, .epochs = 9, .loss = INFINITY, .lr = 1e-5});
  EXPECT_EQ(out.str(),
            "epoch 1/2  step 1/4 (25%)  loss nan  lr 0.0003  ETA 0:00\n"
            "epoch 7/9  step 2/4 (50%)  loss inf  lr 1e-05  ETA 0:00\n");
}

// Steps whose own rates jump between 1,000 and 100,000 samples/s: the line shows the rate of the
// moving average of the time per sample, which moves by a twentieth of each step's difference.
TEST(ProgressTest, ShowsASmoothedRate) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(
      out, {.force_plain = true, .total_steps = 100, .plain_every = 1, .clock = clock.function()});
  const auto shown_rate = [&] {
    const std::string line = take(out);
    const std::size_t end = line.find(" samples/s");
    EXPECT_NE(end, std::string::npos) << line;
    std::string digits;
    for (std::size_t i = line.rfind("  ", end) + 2; i < end; ++i) {
      if (line[i] != ',') digits += line[i];
    }
    return std::stod(digits);
  };
  progress.update({.step = 1, .loss = 1.0, .lr = 0.1, .samples_per_s = 1000.0});
  EXPECT_EQ(shown_rate(), 1000.0);  // the first step's own rate
  progress.update({.step = 2, .loss = 1.0, .lr = 0.1, .samples_per_s = 100000.0});
  // 1 / (0.05 * 1e-5 + 0.95 * 1e-3) = 1,052.08...
  EXPECT_EQ(shown_rate(), 1052.0);
  double low = 1e9, high = 0.0;
  for (std::int64_t step = 3; step <= 60; ++step) {
    progress.update(
        {.step = step, .loss = 1.0, .lr = 0.1, .samples_per_s = step % 2 ? 1000.0 : 100000.0});
    const double rate = shown_rate();
    if (step > 40) {
      low = std::min(low, rate);
      high = std::max(high, rate);
    }
  }
  // Near the harmonic mean of the two rates (1,980), moving by a few percent from step to step.
  EXPECT_GT(low, 1700.0);
  EXPECT_LT(high, 2300.0);
  // A step that reports no rate leaves the average as it was.
  progress.update({.step = 61, .loss = 1.0, .lr = 0.1});
  EXPECT_GT(shown_rate(), 1700.0);
}

TEST(ProgressTest, ResumedRunCountsTheEtaFromItsStartStep) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(
      out, {.total_steps = 200, .plain_every = 10, .start_step = 100, .clock = clock.function()});
  clock.now = 10.0;  // 10 steps in 10 s; 90 left
  progress.update({.step = 110, .loss = 0.5, .lr = 0.1});
  EXPECT_EQ(out.str(), "step 110/200 (55%)  loss 0.5000  lr 0.1  ETA 1:30\n");
}

TEST(ProgressTest, TerminalLinesAreCutToTheColumns) {
  FakeClock clock;
  std::ostringstream out;
  Progress progress(
      out, {.is_terminal = true, .total_steps = 10, .columns = 20, .clock = clock.function()});
  progress.update({.step = 1, .loss = 1.0, .lr = 0.1});
  // 19 characters: a line as wide as the terminal would wrap.
  EXPECT_EQ(out.str(), std::string("\rstep 1/10 [##......") + kErase);
}

TEST(ProgressTest, DestructorEndsAnOpenBar) {
  std::ostringstream out;
  {
    Progress progress(out, {.is_terminal = true, .total_steps = 10, .clock = [] { return 0.0; }});
    progress.update({.step = 1, .loss = 1.0, .lr = 0.1});
  }
  ASSERT_FALSE(out.str().empty());
  EXPECT_EQ(out.str().back(), '\n');
}

TEST(ProgressTest, RejectsBadOptionsAndStepsGoingBackwards) {
  std::ostringstream out;
  EXPECT_NE(error_of([&] { Progress progress(out, {.total_steps = 0}); }).find("total_steps > 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Progress progress(out, {.total_steps = 5, .plain_every = 0});
            }).find("plain_every > 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              Progress progress(out, {.total_steps = 5, .start_step = 6});
            }).find("start_step"),
            std::string::npos);
  Progress progress(out, {.total_steps = 10, .clock = [] { return 0.0; }});
  progress.update({.step = 5, .loss = 1.0, .lr = 0.1});
  const std::string message = error_of([&] { progress.update({.step = 4, .loss = 1.0}); });
  EXPECT_NE(message.find("got 4"), std::string::npos) << message;
  EXPECT_NE(message.find("must not go backwards"), std::string::npos) << message;
}

TEST(ProgressFormatTest, Durations) {
  EXPECT_EQ(format_duration(0.0), "0:00");
  EXPECT_EQ(format_duration(42.0), "0:42");
  EXPECT_EQ(format_duration(59.6), "1:00");  // rounded to the nearest second
  EXPECT_EQ(format_duration(725.0), "12:05");
  EXPECT_EQ(format_duration(3599.4), "59:59");
  EXPECT_EQ(format_duration(3723.0), "1:02:03");
  EXPECT_EQ(format_duration(360000.0), "100:00:00");
  EXPECT_EQ(format_duration(-1.0), "?");
  EXPECT_EQ(format_duration(NAN), "?");
  EXPECT_EQ(format_duration(INFINITY), "?");
}

TEST(ProgressFormatTest, ThousandsAndLosses) {
  EXPECT_EQ(format_thousands(0.0), "0");
  EXPECT_EQ(format_thousands(999.4), "999");
  EXPECT_EQ(format_thousands(9120.0), "9,120");
  EXPECT_EQ(format_thousands(123456.0), "123,456");
  EXPECT_EQ(format_thousands(1234567.4), "1,234,567");
  EXPECT_EQ(format_thousands(-1234.0), "-1,234");
  EXPECT_EQ(format_loss(0.41234), "0.4123");
  EXPECT_EQ(format_loss(0.0), "0.0000");
  EXPECT_EQ(format_loss(1.234e-5), "1.234e-05");  // would be 0.0000 with four decimals
  EXPECT_EQ(format_loss(NAN), "nan");
  EXPECT_EQ(format_loss(-INFINITY), "-inf");
}

}  // namespace
}  // namespace grove::program
