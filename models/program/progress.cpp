// Progress lines (progress.h): composing one line from a step's figures, and the two ways of
// showing it (an updating terminal line, or plain lines every N steps).
//
// What it is not: a terminal library. The only control sequences used are carriage return (back
// to the start of the line) and ESC[K (erase to the end of the line), which every terminal
// emulator in use understands.
//
// Invariant: bar_open_ is true exactly when the last thing written is a bar without a newline.
#include "models/program/progress.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>

#include "core/error.h"

namespace grove::program {
namespace {

constexpr const char* kEraseToEndOfLine = "\033[K";

double steady_seconds() {
  using Seconds = std::chrono::duration<double>;
  return std::chrono::duration_cast<Seconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "0.1", "0.0003", "1e-05": enough digits for a schedule's values, none wasted.
std::string format_lr(double lr) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", lr);
  return text;
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0.0) return "?";
  const auto total = static_cast<std::int64_t>(std::llround(seconds));
  const std::int64_t hours = total / 3600;
  const std::int64_t minutes = (total % 3600) / 60;
  const std::int64_t rest = total % 60;
  char text[48];
  if (hours > 0) {
    std::snprintf(text, sizeof(text), "%" PRId64 ":%02" PRId64 ":%02" PRId64, hours, minutes, rest);
  } else {
    std::snprintf(text, sizeof(text), "%" PRId64 ":%02" PRId64, minutes, rest);
  }
  return text;
}

std::string format_thousands(double value) {
  if (!std::isfinite(value)) return std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf");
  const auto rounded = static_cast<std::int64_t>(std::llround(value));
  const std::string digits = std::to_string(rounded < 0 ? -rounded : rounded);
  std::string text = rounded < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
    text += digits[i];
  }
  return text;
}

std::string format_loss(double loss) {
  if (std::isnan(loss)) return "nan";
  if (std::isinf(loss)) return loss > 0 ? "inf" : "-inf";
  char text[40];
  const double magnitude = std::fabs(loss);
  // Four decimals read well for losses from 1e-3 to 1e5; outside that, scientific keeps the
  // significant digits visible (a tiny loss would otherwise show as 0.0000).
  if (loss == 0.0 || (magnitude >= 1e-3 && magnitude < 1e5)) {
    std::snprintf(text, sizeof(text), "%.4f", loss);
  } else {
    std::snprintf(text, sizeof(text), "%.3e", loss);
  }
  return text;
}

Progress::Progress(std::ostream& out, ProgressOptions options)
    : out_(out), options_(std::move(options)) {
  GROVE_CHECK(options_.total_steps > 0, "Progress: expected total_steps > 0, got ",
              options_.total_steps, "; pass the number of steps the run takes");
  GROVE_CHECK(options_.steps_per_epoch >= 0, "Progress: expected steps_per_epoch >= 0, got ",
              options_.steps_per_epoch, "; pass 0 for a run without epochs");
  GROVE_CHECK(options_.plain_every > 0, "Progress: expected plain_every > 0, got ",
              options_.plain_every, "; it is the number of steps between plain lines");
  GROVE_CHECK(options_.start_step >= 0 && options_.start_step <= options_.total_steps,
              "Progress: expected 0 <= start_step <= total_steps (", options_.total_steps,
              "), got ", options_.start_step, "; pass the steps a resumed run had already taken");
  GROVE_CHECK(options_.bar_width > 0, "Progress: expected bar_width > 0, got ", options_.bar_width);
  GROVE_CHECK(options_.redraw_interval_s >= 0.0, "Progress: expected redraw_interval_s >= 0, got ",
              options_.redraw_interval_s);
  if (!options_.clock) options_.clock = steady_seconds;
  terminal_mode_ = options_.is_terminal && !options_.force_plain;
  start_time_ = options_.clock();
}

Progress::~Progress() {
  // No redraw here: the destructor may run while an error unwinds, and the error's message
  // should start on a line of its own right after the bar as it was.
  if (bar_open_) {
    out_ << '\n';
    out_.flush();
  }
}

StepInfo Progress::filled(const StepInfo& info) const {
  StepInfo result = info;
  if (result.total_steps == 0) result.total_steps = options_.total_steps;
  const std::int64_t per_epoch = options_.steps_per_epoch;
  if (result.epochs == 0 && per_epoch > 0) {
    result.epochs = (result.total_steps + per_epoch - 1) / per_epoch;
  }
  if (result.epoch == 0 && per_epoch > 0 && result.step > 0) {
    result.epoch = (result.step - 1) / per_epoch + 1;
  }
  return result;
}

std::string Progress::line(const StepInfo& info, bool with_bar) const {
  std::string text;
  if (info.epochs > 0) {
    text += "epoch " + std::to_string(info.epoch) + "/" + std::to_string(info.epochs) + "  ";
  }
  text += "step " + std::to_string(info.step) + "/" + std::to_string(info.total_steps);
  // A step past the end (a miscounted total) shows a full bar, never more.
  const std::int64_t shown_step = std::min(std::max<std::int64_t>(info.step, 0), info.total_steps);
  const std::int64_t percent = shown_step * 100 / info.total_steps;
  if (with_bar) {
    const std::int64_t filled = shown_step * options_.bar_width / info.total_steps;
    text += " [" + std::string(static_cast<std::size_t>(filled), '#') +
            std::string(static_cast<std::size_t>(options_.bar_width - filled), '.') + "] " +
            std::to_string(percent) + "%";
  } else {
    text += " (" + std::to_string(percent) + "%)";
  }
  text += "  loss " + format_loss(info.loss);
  text += "  lr " + format_lr(info.lr);
  if (std::isfinite(info.samples_per_s) && info.samples_per_s > 0.0) {
    text += "  " + format_thousands(info.samples_per_s) + " samples/s";
  }
  const double elapsed = options_.clock() - start_time_;
  if (info.step >= info.total_steps) {
    text += "  elapsed " + format_duration(elapsed);
  } else {
    const std::int64_t steps_done = info.step - options_.start_step;
    const double seconds_left = steps_done > 0
                                    ? elapsed / static_cast<double>(steps_done) *
                                          static_cast<double>(info.total_steps - info.step)
                                    : NAN;
    text += "  ETA " + format_duration(seconds_left);
  }
  if (with_bar && options_.columns > 0 &&
      text.size() >= static_cast<std::size_t>(options_.columns)) {
    // A line as wide as the terminal would wrap, and the carriage return would then redraw only
    // its last part.
    text.resize(static_cast<std::size_t>(options_.columns - 1));
  }
  return text;
}

void Progress::draw_bar(double now) {
  out_ << '\r' << line(*latest_, /*with_bar=*/true) << kEraseToEndOfLine;
  out_.flush();
  bar_open_ = true;
  latest_shown_ = true;
  last_draw_time_ = now;
}

void Progress::clear_bar() {
  out_ << '\r' << kEraseToEndOfLine;
  bar_open_ = false;
}

void Progress::update(const StepInfo& info) {
  GROVE_CHECK(!latest_ || info.step >= latest_->step,
              "Progress::update: expected step >= ", latest_ ? latest_->step : 0,
              " (the last step shown), got ", info.step, "; steps must not go backwards");
  latest_ = filled(info);
  // The shown rate: the moving average of the time per sample (see the header).
  if (std::isfinite(info.samples_per_s) && info.samples_per_s > 0.0) {
    const double seconds = 1.0 / info.samples_per_s;
    seconds_per_sample_ =
        seconds_per_sample_ == 0.0
            ? seconds
            : kRateSmoothing * seconds + (1.0 - kRateSmoothing) * seconds_per_sample_;
  }
  latest_->samples_per_s = seconds_per_sample_ > 0.0 ? 1.0 / seconds_per_sample_ : 0.0;
  latest_shown_ = false;
  const bool last = latest_->step >= latest_->total_steps;
  if (terminal_mode_) {
    const double now = options_.clock();
    if (!bar_open_ || last || now - last_draw_time_ >= options_.redraw_interval_s) {
      draw_bar(now);
    }
    return;
  }
  if (last || latest_->step % options_.plain_every == 0) {
    out_ << line(*latest_, /*with_bar=*/false) << '\n';
    out_.flush();
    latest_shown_ = true;
  }
}

void Progress::message(const std::string& text) {
  const bool redraw = bar_open_;
  if (bar_open_) clear_bar();
  out_ << text;
  if (text.empty() || text.back() != '\n') out_ << '\n';
  if (redraw) {
    draw_bar(options_.clock());
  } else {
    out_.flush();
  }
}

void Progress::finish() {
  if (terminal_mode_) {
    if (!bar_open_) return;
    if (!latest_shown_) draw_bar(options_.clock());
    out_ << '\n';
    out_.flush();
    bar_open_ = false;
    return;
  }
  if (latest_ && !latest_shown_) {
    out_ << line(*latest_, /*with_bar=*/false) << '\n';
    out_.flush();
    latest_shown_ = true;
  }
}

}  // namespace grove::program
