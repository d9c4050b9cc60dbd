// The SVG plot of a metrics file (plot.h): round ticks, the panel geometry, and the SVG text.
//
// What it is not: a layout engine. The margins are fixed in pixels and sized for the labels
// this plot has (tick labels of up to ~10 characters, one title line, one note line).
//
// Invariant: every value drawn is finite; the data-to-pixel maps never divide by zero, because
// nice_ticks always returns an axis of positive width.
#include "models/program/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.h"
#include "models/program/progress.h"

namespace grove::program {
namespace {

constexpr int kTickTarget = 6;  // about this many ticks per axis
constexpr double kLeftMargin = 84.0;
constexpr double kRightMargin = 24.0;
constexpr double kTopMargin = 62.0;
constexpr double kBottomMargin = 48.0;
constexpr double kPanelGap = 44.0;   // between the panels: the loss panel's step labels
constexpr double kLossShare = 0.64;  // of the panels' height, when the lr panel is shown
constexpr const char* kLossColour = "#9ecae1";
constexpr const char* kAverageColour = "#08519c";
constexpr const char* kLrColour = "#d95f02";
constexpr const char* kEvalColour = "#e7298a";
constexpr const char* kEpochColour = "#999999";
constexpr const char* kGridColour = "#e5e5e5";

std::string escape_xml(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    switch (c) {
      case '&':
        escaped += "&amp;";
        break;
      case '<':
        escaped += "&lt;";
        break;
      case '>':
        escaped += "&gt;";
        break;
      case '"':
        escaped += "&quot;";
        break;
      case '\'':
        escaped += "&apos;";
        break;
      default:
        escaped += c;
    }
  }
  return escaped;
}

// Pixel coordinates with one decimal: sub-pixel enough, and short.
std::string pixels(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", value);
  return text;
}

// A rectangle of the image and the data range it shows.
struct Panel {
  double left = 0, top = 0, width = 0, height = 0;
  std::vector<double> x_ticks, y_ticks;
  bool log_y = false;  // y values (and ticks) are log10 of the data; labels show the data

  double x_of(double x) const {
    return left + (x - x_ticks.front()) / (x_ticks.back() - x_ticks.front()) * width;
  }
  double y_of(double y) const {
    return top + (y_ticks.back() - y) / (y_ticks.back() - y_ticks.front()) * height;
  }
};

// Frame, grid lines, tick labels and the y axis's name.
void draw_axes(std::string& svg, const Panel& panel, const std::string& y_name,
               const std::string& id) {
  svg += "<g id=\"" + id + "-axes\">\n";
  const double bottom = panel.top + panel.height;
  const double x_spacing = panel.x_ticks[1] - panel.x_ticks[0];
  for (const double tick : panel.x_ticks) {
    const std::string x = pixels(panel.x_of(tick));
    svg += "<line x1=\"" + x + "\" y1=\"" + pixels(panel.top) + "\" x2=\"" + x + "\" y2=\"" +
           pixels(bottom) + "\" stroke=\"" + kGridColour + "\"/>\n";
    svg += "<text class=\"tick\" x=\"" + x + "\" y=\"" + pixels(bottom + 16) +
           "\" text-anchor=\"middle\">" + escape_xml(format_tick(tick, x_spacing)) + "</text>\n";
  }
  const double y_spacing = panel.y_ticks[1] - panel.y_ticks[0];
  for (const double tick : panel.y_ticks) {
    const std::string y = pixels(panel.y_of(tick));
    svg += "<line x1=\"" + pixels(panel.left) + "\" y1=\"" + y + "\" x2=\"" +
           pixels(panel.left + panel.width) + "\" y2=\"" + y + "\" stroke=\"" + kGridColour +
           "\"/>\n";
    std::string label = format_tick(tick, y_spacing);
    if (panel.log_y) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.3g", std::pow(10.0, tick));
      label = text;
    }
    svg += "<text class=\"tick\" x=\"" + pixels(panel.left - 6) + "\" y=\"" + y +
           "\" dy=\"4\" text-anchor=\"end\">" + escape_xml(label) + "</text>\n";
  }
  svg += "<rect x=\"" + pixels(panel.left) + "\" y=\"" + pixels(panel.top) + "\" width=\"" +
         pixels(panel.width) + "\" height=\"" + pixels(panel.height) +
         "\" fill=\"none\" stroke=\"#444444\"/>\n";
  const std::string name_x = pixels(panel.left - 66);
  const std::string name_y = pixels(panel.top + panel.height / 2);
  svg += "<text x=\"" + name_x + "\" y=\"" + name_y +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 " + name_x + " " + name_y + ")\">" +
         escape_xml(y_name) + "</text>\n";
  svg += "</g>\n";
}

// A line through (x[i], y[i]); a single point is drawn as a dot, which a polyline would not show.
void draw_line(std::string& svg, const Panel& panel, const std::vector<double>& xs,
               const std::vector<double>& ys, const std::string& id, const char* colour,
               double stroke_width) {
  svg += "<polyline id=\"" + id + "\" fill=\"none\" stroke=\"" + colour + "\" stroke-width=\"" +
         pixels(stroke_width) + "\" stroke-linejoin=\"round\" points=\"";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    if (i > 0) svg += ' ';
    svg += pixels(panel.x_of(xs[i])) + "," + pixels(panel.y_of(ys[i]));
  }
  svg += "\"/>\n";
  if (xs.size() == 1) {
    svg += "<circle cx=\"" + pixels(panel.x_of(xs[0])) + "\" cy=\"" + pixels(panel.y_of(ys[0])) +
           "\" r=\"3\" fill=\"" + colour + "\"/>\n";
  }
}

// Dots at (x[i], y[i]).
void draw_dots(std::string& svg, const Panel& panel, const std::vector<double>& xs,
               const std::vector<double>& ys, const std::string& id, const char* colour) {
  svg += "<g id=\"" + id + "\" fill=\"" + colour + "\">\n";
  for (std::size_t i = 0; i < xs.size(); ++i) {
    svg += "<circle cx=\"" + pixels(panel.x_of(xs[i])) + "\" cy=\"" + pixels(panel.y_of(ys[i])) +
           "\" r=\"3.5\"/>\n";
  }
  svg += "</g>\n";
}

// Dashed vertical lines across the panel at the steps xs (the epochs' starts).
void draw_epoch_lines(std::string& svg, const Panel& panel, const std::vector<double>& xs,
                      const std::string& id) {
  svg += "<g id=\"" + id + "\" stroke=\"" + std::string(kEpochColour) +
         "\" stroke-dasharray=\"4 3\">\n";
  for (const double x : xs) {
    const std::string at = pixels(panel.x_of(x));
    svg += "<line x1=\"" + at + "\" y1=\"" + pixels(panel.top) + "\" x2=\"" + at + "\" y2=\"" +
           pixels(panel.top + panel.height) + "\"/>\n";
  }
  svg += "</g>\n";
}

// The loss axis's ticks for log10 values in [low, high]: whole powers of ten when they span two
// or more, else round values of the logarithm.
std::vector<double> log_ticks(double low, double high) {
  if (std::ceil(high) - std::floor(low) >= 2.0) {
    std::vector<double> ticks;
    for (double k = std::floor(low); k <= std::ceil(high); k += 1.0) ticks.push_back(k);
    return ticks;
  }
  return nice_ticks(low, high, kTickTarget);
}

void draw_legend_entry(std::string& svg, double x, double y, const char* colour, double width,
                       const std::string& label) {
  svg += "<line x1=\"" + pixels(x) + "\" y1=\"" + pixels(y) + "\" x2=\"" + pixels(x + 24) +
         "\" y2=\"" + pixels(y) + "\" stroke=\"" + colour + "\" stroke-width=\"" + pixels(width) +
         "\"/>\n";
  svg += "<text x=\"" + pixels(x + 30) + "\" y=\"" + pixels(y) + "\" dy=\"4\">" +
         escape_xml(label) + "</text>\n";
}

std::string format_smoothing(double smoothing) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", smoothing);
  return text;
}

}  // namespace

std::vector<double> nice_ticks(double low, double high, int target_count) {
  GROVE_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high,
              "nice_ticks: expected finite low <= high, got [", low, ", ", high, "]");
  GROVE_CHECK(target_count >= 2, "nice_ticks: expected target_count >= 2, got ", target_count);
  if (low == high) {
    // A flat line: widen by 10% of its value (or to [0, 1] at zero) so it has an axis.
    const double pad = low == 0.0 ? 0.5 : std::fabs(low) * 0.1;
    low = low == 0.0 ? 0.0 : low - pad;
    high = high + pad;
  }
  const double rough = (high - low) / (target_count - 1);
  const int exponent = static_cast<int>(std::floor(std::log10(rough)));
  const double fraction = rough / std::pow(10.0, exponent);
  const double factor = fraction <= 1.0   ? 1.0
                        : fraction <= 2.0 ? 2.0
                        : fraction <= 5.0 ? 5.0
                                          : 10.0;
  // Ticks are k * factor * 10^exponent; a negative power is divided by, so 0.3 is the double
  // nearest to 0.3 and not 3 * 0.1 (0.30000000000000004).
  const double power = std::pow(10.0, std::abs(exponent));
  const auto value_of = [&](double k) {
    return exponent >= 0 ? k * factor * power : k * factor / power;
  };
  const double spacing = value_of(1.0);
  // The small slack keeps a bound that is a tick up to rounding from adding one more tick.
  const double first = std::floor(low / spacing + 1e-9);
  const double last = std::ceil(high / spacing - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last; k += 1.0) ticks.push_back(value_of(k));
  if (ticks.size() < 2) ticks.push_back(value_of(last + 1.0));
  return ticks;
}

std::string format_tick(double value, double spacing) {
  if (std::fabs(value) < std::fabs(spacing) * 1e-9) return "0";
  if (spacing >= 1.0) return format_thousands(value);
  const int decimals = static_cast<int>(std::ceil(-std::log10(spacing) - 1e-9));
  char text[48];
  if (decimals <= 4) {
    std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  } else {
    // Enough mantissa digits to tell this tick from its neighbours.
    const int value_exponent = static_cast<int>(std::floor(std::log10(std::fabs(value)) + 1e-9));
    const int spacing_exponent = static_cast<int>(std::floor(std::log10(spacing) + 1e-9));
    std::snprintf(text, sizeof(text), "%.*e", std::max(0, value_exponent - spacing_exponent),
                  value);
  }
  return text;
}

std::string plot_svg(const std::vector<MetricsRow>& rows, const PlotOptions& options) {
  GROVE_CHECK(!rows.empty(),
              "plot_svg: expected at least one metrics row, got none; hint: let "
              "the run take a step before plotting");
  GROVE_CHECK(options.width >= 200 && options.height >= 200,
              "plot_svg: expected width and height of at least 200 pixels, got ", options.width,
              " x ", options.height);
  GROVE_CHECK(options.smoothing >= 0.0 && options.smoothing < 1.0,
              "plot_svg: expected smoothing in [0, 1), got ", options.smoothing,
              "; 0.9 weighs the past as TensorBoard's default smoothing does, 0 turns it off");

  // The series: finite losses and their moving average; finite learning rates; the evaluations'
  // finite losses; the steps where a new epoch begins. On a log axis the losses are log10'd
  // (the average is taken of the losses themselves).
  std::vector<double> loss_steps, losses, averages, lr_steps, lrs, eval_steps, eval_losses;
  std::vector<double> epoch_starts;
  const auto plotted = [&](double loss) { return options.log_loss ? std::log10(loss) : loss; };
  const auto drawable = [&](double loss) {
    return std::isfinite(loss) && (!options.log_loss || loss > 0.0);
  };
  std::int64_t non_finite = 0;
  std::int64_t first_non_finite_step = 0;
  double average = NAN;
  double step_low = std::numeric_limits<double>::infinity();
  double step_high = -step_low;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const MetricsRow& row = rows[r];
    const auto step = static_cast<double>(row.step);
    step_low = std::min(step_low, step);
    step_high = std::max(step_high, step);
    if (r > 0 && row.epoch > rows[r - 1].epoch) epoch_starts.push_back(step - 0.5);
    for (const double eval : {row.val_loss, row.test_loss}) {
      if (!drawable(eval)) continue;
      eval_steps.push_back(step);
      eval_losses.push_back(plotted(eval));
    }
    if (std::isfinite(row.lr)) {
      lr_steps.push_back(step);
      lrs.push_back(row.lr);
    }
    if (!drawable(row.loss)) {
      if (non_finite++ == 0) first_non_finite_step = row.step;
      continue;
    }
    average = std::isnan(average)
                  ? row.loss
                  : options.smoothing * average + (1.0 - options.smoothing) * row.loss;
    loss_steps.push_back(step);
    losses.push_back(plotted(row.loss));
    averages.push_back(plotted(average));
  }
  // Steps are whole numbers: a short run gets an axis of at least kTickTarget whole steps, not
  // ticks at 0.2-step spacings.
  step_high = std::max(step_high, step_low + (kTickTarget - 1));
  double loss_low = 0.0, loss_high = 1.0;  // an empty panel when no loss is finite
  if (!losses.empty() || !eval_losses.empty()) {
    loss_low = std::numeric_limits<double>::infinity();
    loss_high = -loss_low;
    for (const std::vector<double>* series : {&losses, &eval_losses}) {
      for (const double value : *series) {
        loss_low = std::min(loss_low, value);
        loss_high = std::max(loss_high, value);
      }
    }
  }
  double lr_low = 0.0, lr_high = 0.0;  // the rate's axis starts at zero
  for (const double lr : lrs) {
    lr_low = std::min(lr_low, lr);
    lr_high = std::max(lr_high, lr);
  }

  // Geometry: the loss panel on top, the lr panel under it, sharing the step axis.
  const double panels_height = options.height - kTopMargin - kBottomMargin;
  Panel loss_panel;
  loss_panel.left = kLeftMargin;
  loss_panel.top = kTopMargin;
  loss_panel.width = options.width - kLeftMargin - kRightMargin;
  loss_panel.height = options.show_lr ? (panels_height - kPanelGap) * kLossShare : panels_height;
  loss_panel.x_ticks = nice_ticks(step_low, step_high, kTickTarget);
  loss_panel.y_ticks = options.log_loss ? log_ticks(loss_low, loss_high)
                                        : nice_ticks(loss_low, loss_high, kTickTarget);
  loss_panel.log_y = options.log_loss;
  Panel lr_panel = loss_panel;
  lr_panel.top = loss_panel.top + loss_panel.height + kPanelGap;
  lr_panel.height = panels_height - kPanelGap - loss_panel.height;
  lr_panel.y_ticks = nice_ticks(lr_low, lr_high, 4);
  lr_panel.log_y = false;

  const std::string title = options.title.empty() ? "training loss" : options.title;
  const std::string width = std::to_string(options.width);
  const std::string height = std::to_string(options.height);
  std::string svg;
  svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + width + "\" height=\"" + height +
         "\" viewBox=\"0 0 " + width + " " + height +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<title>" + escape_xml(title) + "</title>\n";
  svg +=
      "<rect x=\"0\" y=\"0\" width=\"" + width + "\" height=\"" + height + "\" fill=\"white\"/>\n";
  svg += "<text id=\"title\" x=\"" + pixels(options.width / 2.0) +
         "\" y=\"26\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">" +
         escape_xml(title) + "</text>\n";
  if (non_finite > 0) {
    svg += "<text id=\"note\" x=\"" + pixels(options.width / 2.0) +
           "\" y=\"46\" text-anchor=\"middle\" fill=\"#b00020\">" +
           escape_xml(str(non_finite, " of ", rows.size(), " losses are NaN or infinite",
                          options.log_loss ? " or not above 0 (the log axis)" : "",
                          " and not drawn (the first at step ", first_non_finite_step, ")")) +
           "</text>\n";
  }

  draw_axes(svg, loss_panel, options.log_loss ? "loss (log scale)" : "loss", "loss");
  if (!epoch_starts.empty()) draw_epoch_lines(svg, loss_panel, epoch_starts, "epochs");
  draw_line(svg, loss_panel, loss_steps, losses, "loss", kLossColour, 1.0);
  const bool show_average = options.smoothing > 0.0;
  if (show_average)
    draw_line(svg, loss_panel, loss_steps, averages, "loss-average", kAverageColour, 2.0);
  const bool show_evals = !eval_steps.empty();
  if (show_evals) draw_dots(svg, loss_panel, eval_steps, eval_losses, "eval-loss", kEvalColour);
  // Legend, in the loss panel's top right corner.
  const double legend_x = loss_panel.left + loss_panel.width - 190;
  const double legend_y = loss_panel.top + 8;
  const int entries = 1 + (show_average ? 1 : 0) + (show_evals ? 1 : 0);
  svg += "<g id=\"legend\">\n<rect x=\"" + pixels(legend_x) + "\" y=\"" + pixels(legend_y) +
         "\" width=\"182\" height=\"" + std::to_string(4 + 20 * entries) +
         "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#cccccc\"/>\n";
  double entry_y = legend_y + 12;
  draw_legend_entry(svg, legend_x + 8, entry_y, kLossColour, 1.0, "loss per step");
  if (show_average) {
    entry_y += 20;
    draw_legend_entry(svg, legend_x + 8, entry_y, kAverageColour, 2.0,
                      "moving average (" + format_smoothing(options.smoothing) + ")");
  }
  if (show_evals) {
    entry_y += 20;
    svg += "<circle cx=\"" + pixels(legend_x + 20) + "\" cy=\"" + pixels(entry_y) +
           "\" r=\"3.5\" fill=\"" + kEvalColour + "\"/>\n";
    svg += "<text x=\"" + pixels(legend_x + 38) + "\" y=\"" + pixels(entry_y) +
           "\" dy=\"4\">evaluation loss</text>\n";
  }
  svg += "</g>\n";

  const Panel& bottom_panel = options.show_lr ? lr_panel : loss_panel;
  if (options.show_lr) {
    draw_axes(svg, lr_panel, "learning rate", "lr");
    if (!epoch_starts.empty()) draw_epoch_lines(svg, lr_panel, epoch_starts, "lr-epochs");
    draw_line(svg, lr_panel, lr_steps, lrs, "lr", kLrColour, 1.5);
  }
  svg += "<text x=\"" + pixels(bottom_panel.left + bottom_panel.width / 2) + "\" y=\"" +
         pixels(options.height - 10.0) + "\" text-anchor=\"middle\">step</text>\n";
  svg += "</svg>\n";
  return svg;
}

void write_plot(const std::filesystem::path& csv_path, const std::filesystem::path& svg_path,
                PlotOptions options) {
  const std::vector<MetricsRow> rows = read_metrics(csv_path);
  GROVE_CHECK(!rows.empty(), "metrics file ", csv_path,
              " has a header but no rows: nothing to plot; hint: plot it after the run's first "
              "step");
  if (options.title.empty()) options.title = "training loss: " + csv_path.filename().string();
  write_file_atomically(svg_path, plot_svg(rows, options));
}

}  // namespace grove::program
