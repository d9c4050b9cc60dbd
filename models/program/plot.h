// `grove plot`: a training run's metrics file (metrics.h) drawn as a standalone SVG image, written
// by grove itself (no plotting library). Two panels share the step axis:
//   top:    the loss of every step (a thin line) and its exponential moving average (a thick
//           line), the evaluations' losses (validation or test: dots at their steps), with a
//           legend; optionally on a logarithmic axis;
//   bottom: the learning rate of every step.
// Both axes of both panels have tick marks, grid lines and labels at round values (1, 2 or 5
// times a power of ten: nice_ticks), dashed lines mark where each epoch after the first begins,
// and the image has a title.
//
// What it is not: a general charting library, and not interactive. Points are not thinned: the
// loss line has one point per finite loss (a 100,000-step run makes a ~1.5 MB file).
//
// Invariants of the SVG: one <svg> root with xmlns, width, height and viewBox; every element is
// closed; text is XML-escaped. NaN and infinite losses are not drawn (the line joins the finite
// neighbours) and not counted in the axis range or the average; a note under the title says how
// many there were and the first step with one.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "models/program/metrics.h"

namespace grove::program {

struct PlotOptions {
  std::string title = {};  // empty: "training loss" (write_plot: "training loss: <file name>")
  int width = 900;         // pixels
  int height = 600;
  // Weight of the past in the moving average: average = smoothing * average + (1 - smoothing)
  // * loss, starting at the first finite loss. In [0, 1); 0 draws no average.
  double smoothing = 0.9;
  bool show_lr = true;  // false: the loss panel takes the whole height
  // The loss axis logarithmic (ticks at powers of ten, or round values of the logarithm over a
  // range under a factor of 100); losses <= 0 are then not drawn and counted in the note.
  bool log_loss = false;
};

// Round tick values covering [low, high]: about `target_count` of them, spaced by 1, 2 or 5
// times a power of ten, the first at or below low and the last at or above high. A range of
// zero width is widened around its value. low and high must be finite with low <= high.
std::vector<double> nice_ticks(double low, double high, int target_count);

// The label of a tick value given the spacing of its axis: "2,500" for whole numbers, "0.25",
// "5.0e-05" for small spacings; "0" for zero.
std::string format_tick(double value, double spacing);

// The SVG of a run's rows (in step order as read). Throws grove::Error for no rows or bad
// options. Pure: no I/O; thread-safe.
std::string plot_svg(const std::vector<MetricsRow>& rows, const PlotOptions& options = {});

// Reads the metrics file at csv_path (read_metrics: its errors), refuses a file without rows
// (grove::Error naming it), and writes the SVG to svg_path atomically (write_file_atomically).
// Blocks on file I/O.
void write_plot(const std::filesystem::path& csv_path, const std::filesystem::path& svg_path,
                PlotOptions options = {});

}  // namespace grove::program
