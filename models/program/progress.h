// Progress of a training run as the `grove train` program shows it: one updating line on a
// terminal, or plain lines every N steps when the output is a file or a pipe (logs, CI).
//
//   terminal:  epoch 2/5  step 812/2345 [######..............] 34%  loss 0.4123  lr 0.1
//              9,120 samples/s  ETA 0:42          (one line, redrawn in place)
//   plain:     epoch 2/5  step 800/2345 (34%)  loss 0.4123  lr 0.1  9,120 samples/s  ETA 0:43
//
// What it is not: it does not decide whether the output is a terminal (the caller asks isatty and
// says so), does not read the terminal's width (the caller may pass `columns`), and does not
// stop a run whose loss is NaN (it shows "nan"; the program decides what to do).
//
// Invariants: on a terminal, the bar is the last thing on the screen and has no newline after it
// until finish(); anything printed through message() goes above the bar. The ETA is the mean
// step time so far (wall time on the injected clock since construction, over the steps taken
// since `start_step`) times the steps left. The samples/s shown is smoothed: one step's rate
// jumps by orders of magnitude (a step that waits for data or an evaluation, a replayed graph
// after a recorded one), so the line shows the rate of an exponential moving average of the
// time per sample, each step weighing kRateSmoothing (about the last 20 steps).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace grove::program {

// What one step reports. Fields left at 0 are filled from the Progress's options: total_steps
// from ProgressOptions::total_steps, and epoch / epochs from steps_per_epoch (epoch 1 is steps
// 1 .. steps_per_epoch). epochs == 0 after that (no steps_per_epoch, as for gpt): no epoch shown.
struct StepInfo {
  std::int64_t step = 0;  // 1-based count of steps taken in the run
  std::int64_t total_steps = 0;
  std::int64_t epoch = 0;   // 1-based, as shown
  std::int64_t epochs = 0;  // number of epochs in the run
  double loss = 0.0;        // NaN and inf are shown as "nan", "inf"
  double lr = 0.0;
  double samples_per_s = 0.0;  // this step's; <= 0 or not finite: not shown (nor averaged)
};

// The weight of each step's time per sample in the shown rate's moving average.
inline constexpr double kRateSmoothing = 0.05;

struct ProgressOptions {
  bool is_terminal = false;  // the caller's isatty() answer for the stream
  bool force_plain = false;  // plain lines even on a terminal (--plain)
  std::int64_t total_steps = 0;
  std::int64_t steps_per_epoch = 0;    // 0: the run has no epochs
  std::int64_t plain_every = 100;      // plain mode: a line every this many steps, and the last
  std::int64_t start_step = 0;         // steps done before this run (a resumed run), for the ETA
  double redraw_interval_s = 0.1;      // terminal: at most one redraw per this many seconds
  int bar_width = 20;                  // characters between [ and ]
  int columns = 0;                     // > 0: terminal lines are cut to columns - 1 characters
  std::function<double()> clock = {};  // monotonic seconds; empty: std::chrono::steady_clock
};

// Writes progress to a stream it does not own (which must outlive it). Not thread-safe: call it
// from one thread. Blocks only on writes to the stream; flushes after each line it writes.
class Progress {
 public:
  // Checks the options (total_steps > 0, plain_every > 0, bar_width > 0, ...): grove::Error.
  Progress(std::ostream& out, ProgressOptions options);
  // Ends an open bar with a newline, without redrawing a skipped step (it may run while an
  // error unwinds; the error's message then starts on a line of its own). Call finish() first.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Terminal: redraws the line unless it was drawn less than redraw_interval_s ago (the first and
  // the last step are always drawn). Plain: a line when step is a multiple of plain_every or the
  // last step. Steps must not go backwards (grove::Error).
  void update(const StepInfo& info);
  // Prints `text` (one or more lines) above the bar: clears the bar, prints, redraws it.
  void message(const std::string& text);
  // Ends the bar with a newline (terminal: after drawing the latest step if a redraw was skipped;
  // plain: prints the latest step if its line was not printed). Later calls do nothing until the
  // next update(), which starts a new bar.
  void finish();

  // Whether output is one updating line (is_terminal and not force_plain).
  bool terminal_mode() const { return terminal_mode_; }

 private:
  StepInfo filled(const StepInfo& info) const;
  std::string line(const StepInfo& info, bool with_bar) const;
  void draw_bar(double now);
  void clear_bar();

  std::ostream& out_;
  ProgressOptions options_;
  bool terminal_mode_ = false;
  double start_time_ = 0.0;
  std::optional<StepInfo> latest_;  // the last update, filled
  bool latest_shown_ = false;       // whether latest_ is what the screen or log shows
  bool bar_open_ = false;           // terminal: a bar without a newline is on the screen
  double last_draw_time_ = 0.0;
  double seconds_per_sample_ = 0.0;  // the moving average; 0 until a step reports a rate
};

// "0:42", "12:05", "1:02:03" (h:mm:ss from one hour up; seconds rounded to the nearest; negative
// or not finite: "?").
std::string format_duration(double seconds);
// "9,120", "1,234,567": a count rounded to the nearest integer, with thousands separators.
std::string format_thousands(double value);
// A loss as the progress lines show it: "0.4123", "1.234e-05", "nan", "inf", "-inf".
std::string format_loss(double loss);

}  // namespace grove::program
