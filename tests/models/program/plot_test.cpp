// Tests of the SVG plot (models/program/plot.h): round ticks and their labels, the structure of
// the SVG (one root with its size and viewBox, balanced tags, escaped text), one polyline point
// per row, NaN losses left out with a note, and write_plot's errors and atomic write.
#include "models/program/plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/models/program/program_test_util.h"

namespace grove::program {
namespace {

using testing::error_of;
using testing::names_in;
using testing::read_text;
using testing::TempDir;
using testing::write_text;

std::vector<MetricsRow> rows_up_to(std::int64_t steps) {
  std::vector<MetricsRow> rows;
  for (std::int64_t step = 1; step <= steps; ++step) {
    rows.push_back({.step = step,
                    .epoch = 0,
                    .loss = 2.0 / std::sqrt(static_cast<double>(step)),
                    .lr = step <= 50 ? 0.1 : 0.01,
                    .step_time_ms = 3.0,
                    .samples_per_s = 40000.0});
  }
  return rows;
}

// Checks that every tag is closed in order (a small XML well-formedness check: enough for what
// plot_svg writes, which has no CDATA and no comments) and returns the element names in order.
std::vector<std::string> check_tags(const std::string& svg) {
  std::vector<std::string> open;
  std::vector<std::string> names;
  std::size_t position = 0;
  while ((position = svg.find('<', position)) != std::string::npos) {
    const std::size_t end = svg.find('>', position);
    EXPECT_NE(end, std::string::npos) << "unclosed '<' at " << position;
    if (end == std::string::npos) break;
    const std::string tag = svg.substr(position + 1, end - position - 1);
    position = end + 1;
    if (tag.front() == '?') continue;  // the XML declaration
    if (tag.front() == '/') {
      EXPECT_FALSE(open.empty()) << "closing </" << tag << "> with nothing open";
      if (open.empty()) break;
      EXPECT_EQ(tag.substr(1), open.back());
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \n/"));
    names.push_back(name);
    if (tag.back() != '/') open.push_back(name);
    // Attribute values are quoted and hold no raw '<' (it would have split the tag).
    EXPECT_EQ(std::count(tag.begin(), tag.end(), '"') % 2, 0) << tag;
  }
  EXPECT_TRUE(open.empty()) << "unclosed <" << (open.empty() ? "" : open.back()) << ">";
  return names;
}

// The points attribute of the polyline with this id ("" and a failure if there is none).
std::string points_of(const std::string& svg, const std::string& id) {
  const std::size_t start = svg.find("<polyline id=\"" + id + "\"");
  EXPECT_NE(start, std::string::npos) << id;
  if (start == std::string::npos) return "";
  const std::size_t points = svg.find("points=\"", start) + 8;
  return svg.substr(points, svg.find('"', points) - points);
}

// The number of "x,y" pairs in the points of the polyline with this id (-1: no such polyline).
int point_count(const std::string& svg, const std::string& id) {
  if (svg.find("<polyline id=\"" + id + "\"") == std::string::npos) return -1;
  const std::string text = points_of(svg, id);
  // Nothing but pixel coordinates: no "nan" or "inf" slipped in.
  EXPECT_EQ(text.find_first_not_of("0123456789.,- "), std::string::npos) << text;
  const std::regex pair(R"(-?[0-9]+\.[0-9],-?[0-9]+\.[0-9])");
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), pair), std::sregex_iterator()));
}

bool has_tick_label(const std::string& svg, const std::string& label) {
  return svg.find("\">" + label + "</text>") != std::string::npos;
}

TEST(PlotTest, NiceTicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(nice_ticks(1, 2345, 6), (std::vector<double>{0, 500, 1000, 1500, 2000, 2500}));
  EXPECT_EQ(nice_ticks(0, 100, 6), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  // Each tick is the double nearest its decimal value (0.6, not 3 * 0.2 = 0.6000000000000001).
  EXPECT_EQ(nice_ticks(0.0, 1.0, 6), (std::vector<double>{0.0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(nice_ticks(0.0, 3e-4, 4), (std::vector<double>{0.0, 1e-4, 2e-4, 3e-4}));
  EXPECT_EQ(nice_ticks(0.31, 2.29, 6), (std::vector<double>{0.0, 0.5, 1.0, 1.5, 2.0, 2.5}));
  EXPECT_EQ(nice_ticks(-3, 7, 6), (std::vector<double>{-4, -2, 0, 2, 4, 6, 8}));
  // A flat series still gets an axis of positive width around it.
  const std::vector<double> flat = nice_ticks(0.1, 0.1, 6);
  ASSERT_GE(flat.size(), 2u);
  EXPECT_LT(flat.front(), 0.1);
  EXPECT_GT(flat.back(), 0.1);
  EXPECT_EQ(nice_ticks(0, 0, 6).front(), 0.0);
  EXPECT_NE(error_of([] { nice_ticks(NAN, 1, 6); }).find("finite"), std::string::npos);
}

TEST(PlotTest, TickLabels) {
  EXPECT_EQ(format_tick(2500, 500), "2,500");
  EXPECT_EQ(format_tick(0, 500), "0");
  EXPECT_EQ(format_tick(0.25, 0.05), "0.25");
  EXPECT_EQ(format_tick(1.5, 0.5), "1.5");
  EXPECT_EQ(format_tick(3e-4, 1e-4), "0.0003");
  EXPECT_EQ(format_tick(5e-5, 5e-5), "5e-05");
  EXPECT_EQ(format_tick(1.5e-5, 5e-6), "1.5e-05");
}

TEST(PlotTest, SvgStructure) {
  const std::vector<MetricsRow> rows = rows_up_to(100);
  const std::string svg = plot_svg(rows, {.title = "mlp <eager> & friends"});
  EXPECT_EQ(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0), 0u);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"600\" "
                     "viewBox=\"0 0 900 600\""),
            std::string::npos);
  const std::vector<std::string> names = check_tags(svg);
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "svg");
  EXPECT_EQ(std::count(names.begin(), names.end(), "svg"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "polyline"), 3);
  // One point per row in every line.
  EXPECT_EQ(point_count(svg, "loss"), 100);
  EXPECT_EQ(point_count(svg, "loss-average"), 100);
  EXPECT_EQ(point_count(svg, "lr"), 100);
  // The title, escaped; the legend; the axis names.
  EXPECT_NE(svg.find(">mlp &lt;eager&gt; &amp; friends</text>"), std::string::npos);
  EXPECT_NE(svg.find(">loss per step</text>"), std::string::npos);
  EXPECT_NE(svg.find(">moving average (0.9)</text>"), std::string::npos);
  EXPECT_NE(svg.find(">learning rate</text>"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);
  EXPECT_EQ(svg.find("id=\"note\""), std::string::npos);  // every loss is finite
  // Step ticks 0..100 by 20; loss from 0.2 to 2 by 0.5; lr from 0 to 0.1 by 0.05.
  for (const char* label :
       {"0", "20", "40", "60", "80", "100", "0.5", "1.5", "2.0", "0.05", "0.10"}) {
    EXPECT_TRUE(has_tick_label(svg, label)) << label;
  }
}

TEST(PlotTest, PointsMapIntoThePanels) {
  const std::string svg = plot_svg(rows_up_to(10), {.width = 400, .height = 300});
  EXPECT_NE(svg.find("viewBox=\"0 0 400 300\""), std::string::npos);
  const std::regex pair(R"((-?[0-9]+\.[0-9]),(-?[0-9]+\.[0-9]))");
  for (const char* id : {"loss", "loss-average", "lr"}) {
    const std::string text = points_of(svg, id);
    double previous_x = -1.0;
    for (auto match = std::sregex_iterator(text.begin(), text.end(), pair);
         match != std::sregex_iterator(); ++match) {
      const double x = std::stod((*match)[1]);
      const double y = std::stod((*match)[2]);
      EXPECT_GT(x, previous_x) << id;  // steps increase left to right
      previous_x = x;
      EXPECT_GE(x, 0.0);
      EXPECT_LE(x, 400.0);
      EXPECT_GE(y, 0.0);
      EXPECT_LE(y, 300.0);
    }
  }
}

TEST(PlotTest, NonFiniteLossesAreLeftOutWithANote) {
  std::vector<MetricsRow> rows = rows_up_to(10);
  rows[3].loss = NAN;
  rows[7].loss = INFINITY;
  const std::string svg = plot_svg(rows);
  check_tags(svg);
  EXPECT_EQ(point_count(svg, "loss"), 8);
  EXPECT_EQ(point_count(svg, "loss-average"), 8);
  EXPECT_EQ(point_count(svg, "lr"), 10);
  EXPECT_NE(svg.find("2 of 10 losses are NaN or infinite and not drawn (the first at step 4)"),
            std::string::npos);

  for (MetricsRow& row : rows) row.loss = NAN;  // nothing to draw, still a valid image
  const std::string empty = plot_svg(rows);
  check_tags(empty);
  EXPECT_EQ(point_count(empty, "loss"), 0);
  EXPECT_NE(empty.find("10 of 10 losses"), std::string::npos);
}

TEST(PlotTest, OptionsAndSmallRuns) {
  const std::string single = plot_svg(rows_up_to(1), {.smoothing = 0.0, .show_lr = false});
  check_tags(single);
  EXPECT_EQ(point_count(single, "loss"), 1);
  EXPECT_NE(single.find("<circle"), std::string::npos);  // one point: a dot, not a line
  EXPECT_EQ(point_count(single, "loss-average"), -1);    // smoothing 0: no average
  EXPECT_EQ(point_count(single, "lr"), -1);              // show_lr false: no lr panel
  EXPECT_FALSE(has_tick_label(single, "0.2"));           // steps 1..6 on whole-number ticks
  EXPECT_TRUE(has_tick_label(single, "6"));

  EXPECT_NE(error_of([] { plot_svg({}); }).find("at least one metrics row"), std::string::npos);
  EXPECT_NE(error_of([] { plot_svg(rows_up_to(3), {.smoothing = 1.0}); }).find("smoothing"),
            std::string::npos);
  EXPECT_NE(error_of([] { plot_svg(rows_up_to(3), {.width = 10}); }).find("200 pixels"),
            std::string::npos);
}

// Count of `needle` in `text`.
int occurrences(const std::string& text, const std::string& needle) {
  int count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++count;
  }
  return count;
}

// Evaluations are dots at their steps, epochs after the first start at dashed lines, and the
// loss may take a logarithmic axis (losses <= 0 left out and counted).
TEST(PlotTest, EvaluationsEpochsAndALogAxis) {
  std::vector<MetricsRow> rows = rows_up_to(12);
  for (MetricsRow& row : rows) row.epoch = (row.step - 1) / 4;  // epochs start at 5 and 9
  rows[3].test_loss = 1.5;
  rows[7].test_loss = 0.9;
  rows[11].val_loss = 0.7;
  const std::string svg = plot_svg(rows);
  check_tags(svg);
  const std::size_t evals = svg.find("<g id=\"eval-loss\"");
  ASSERT_NE(evals, std::string::npos);
  EXPECT_EQ(occurrences(svg.substr(evals, svg.find("</g>", evals) - evals), "<circle"), 3);
  EXPECT_NE(svg.find("evaluation loss"), std::string::npos);
  const std::size_t epochs = svg.find("<g id=\"epochs\"");
  ASSERT_NE(epochs, std::string::npos);
  EXPECT_EQ(occurrences(svg.substr(epochs, svg.find("</g>", epochs) - epochs), "<line"), 2);
  EXPECT_EQ(plot_svg(rows_up_to(12)).find("eval-loss"), std::string::npos);  // none: no dots

  rows[2].loss = 0.0;  // not on a log axis
  const std::string log = plot_svg(rows, {.log_loss = true});
  check_tags(log);
  EXPECT_NE(log.find("loss (log scale)"), std::string::npos);
  EXPECT_EQ(point_count(log, "loss"), 11);
  EXPECT_NE(log.find("1 of 12 losses are NaN or infinite or not above 0 (the log axis)"),
            std::string::npos);
}

TEST(WritePlotTest, WritesTheSvgAtomically) {
  TempDir dir;
  {
    MetricsWriter writer(dir / "metrics.csv", false);
    for (const MetricsRow& row : rows_up_to(20)) writer.write(row);
  }
  write_text(dir / "plot.svg", "old plot");
  write_plot(dir / "metrics.csv", dir / "plot.svg");
  const std::string svg = read_text(dir / "plot.svg");
  check_tags(svg);
  EXPECT_EQ(point_count(svg, "loss"), 20);
  EXPECT_NE(svg.find("<title>training loss: metrics.csv</title>"), std::string::npos);
  EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"metrics.csv", "plot.svg"}));
}

TEST(WritePlotTest, ErrorsLeaveNothingBehind) {
  TempDir dir;
  write_text(dir / "header-only.csv", std::string(kMetricsHeader) + "\n");
  std::string message = error_of([&] { write_plot(dir / "header-only.csv", dir / "plot.svg"); });
  EXPECT_NE(message.find("header-only.csv"), std::string::npos) << message;
  EXPECT_NE(message.find("no rows"), std::string::npos) << message;

  message = error_of([&] { write_plot(dir / "missing.csv", dir / "plot.svg"); });
  EXPECT_NE(message.find("cannot open metrics file"), std::string::npos) << message;

  write_text(dir / "ok.csv", std::string(kMetricsHeaderV1) + "\n1,0,0.5,0.1,2.5,512\n");
  message = error_of([&] { write_plot(dir / "ok.csv", dir / "no-folder" / "plot.svg"); });
  EXPECT_NE(message.find("no-folder"), std::string::npos) << message;
  EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"header-only.csv", "ok.csv"}));
}

}  // namespace
}  // namespace grove::program
