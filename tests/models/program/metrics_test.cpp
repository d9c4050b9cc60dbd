// Tests of the metrics file (models/program/metrics.h): the exact text of rows, an exact round
// trip (NaN and infinities included), rows readable while the run goes on, a cut-off last line,
// resuming (append mode keeps the rows before the first new step and drops the rest by an
// atomic rewrite), and every malformed-file error with its line number.
#include "models/program/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
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

MetricsRow row_at(std::int64_t step) {
  return {.step = step,
          .epoch = (step - 1) / 4,
          .loss = 1.0 / static_cast<double>(step),  // 1/3 etc.: needs all 17 digits to round trip
          .lr = 0.1,
          .step_time_ms = 2.5,
          .samples_per_s = 51200.0};
}

std::vector<std::int64_t> steps_of(const std::vector<MetricsRow>& rows) {
  std::vector<std::int64_t> steps;
  for (const MetricsRow& row : rows) steps.push_back(row.step);
  return steps;
}

TEST(MetricsTest, WritesTheHeaderAndWholeRows) {
  TempDir dir;
  MetricsWriter writer(dir / "metrics.csv", /*append=*/false);
  EXPECT_EQ(read_text(dir / "metrics.csv"), std::string(kMetricsHeader) + "\n");
  writer.write({.step = 1,
                .epoch = 0,
                .loss = 2.5,
                .lr = 0.1,
                .step_time_ms = 41.5,
                .samples_per_s = 3084.25});
  // Readable at once: each row reaches the file before write() returns.
  EXPECT_EQ(read_text(dir / "metrics.csv"),
            "step,epoch,loss,lr,step_time_ms,samples_per_s,val_loss,test_loss,test_accuracy\n"
            "1,0,2.5,0.1,41.5,3084.25,nan,nan,nan\n");
  writer.write({.step = 2,
                .epoch = 0,
                .loss = NAN,
                .lr = 3e-4,
                .step_time_ms = 0.0,
                .samples_per_s = INFINITY,
                .val_loss = 1.25});
  EXPECT_EQ(read_metrics(dir / "metrics.csv").size(), 2u);
  EXPECT_NE(read_text(dir / "metrics.csv").find("\n2,0,nan,3e-04,0,inf,1.25,nan,nan\n"),
            std::string::npos);
  EXPECT_EQ(read_metrics(dir / "metrics.csv")[1].val_loss, 1.25);
}

// Files of the first format (six columns, no evaluations) read with nan evaluations, and a run
// resumed into one rewrites it in this format before its first row.
TEST(MetricsTest, FirstFormatFilesAreReadAndRewrittenOnResume) {
  TempDir dir;
  write_text(dir / "old.csv",
             std::string(kMetricsHeaderV1) + "\n1,0,0.5,0.1,2.5,512\n" + "2,0,0.25,0.1,2.5,512\n");
  const std::vector<MetricsRow> rows = read_metrics(dir / "old.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(std::isnan(rows[0].val_loss) && std::isnan(rows[0].test_accuracy));
  {
    MetricsWriter writer(dir / "old.csv", /*append=*/true);
    writer.write({.step = 2, .epoch = 0, .loss = 0.125, .lr = 0.1, .test_accuracy = 0.75});
  }
  EXPECT_EQ(read_text(dir / "old.csv"), std::string(kMetricsHeader) +
                                            "\n1,0,0.5,0.1,2.5,512,nan,nan,nan\n" +
                                            "2,0,0.125,0.1,0,0,nan,nan,0.75\n");
}

TEST(MetricsTest, RoundTripIsExact) {
  TempDir dir;
  std::vector<MetricsRow> rows;
  for (std::int64_t step = 1; step <= 9; ++step) rows.push_back(row_at(step));
  rows.push_back({.step = 10,
                  .epoch = 2,
                  .loss = -INFINITY,
                  .lr = 1.2345678901234567e-7,
                  .step_time_ms = 1e300,
                  .samples_per_s = 5e-324});
  {
    MetricsWriter writer(dir / "metrics.csv", false);
    for (const MetricsRow& row : rows) writer.write(row);
  }
  EXPECT_EQ(read_metrics(dir / "metrics.csv"), rows);  // == compares every field exactly

  MetricsWriter writer(dir / "metrics.csv", false);  // not append: starts over
  writer.write({.step = 1, .loss = NAN});
  const std::vector<MetricsRow> again = read_metrics(dir / "metrics.csv");
  ASSERT_EQ(again.size(), 1u);
  EXPECT_TRUE(std::isnan(again[0].loss));
}

TEST(MetricsTest, ReaderIgnoresACutOffLastLineAndBlankLines) {
  TempDir dir;
  // A crash mid-write leaves a last line without a newline; it may even parse ("0.1,2.5,512" is
  // "0.1,2.5,51200" cut short), so it is never trusted.
  write_text(dir / "metrics.csv",
             "step,epoch,loss,lr,step_time_ms,samples_per_s\r\n1,0,0.5,0.1,2.5,51200\r\n\n"
             "2,0,0.25,0.1,2.5,51200\n3,0,0.1,0.1,2.5,512");
  EXPECT_EQ(steps_of(read_metrics(dir / "metrics.csv")), (std::vector<std::int64_t>{1, 2}));
}

TEST(MetricsTest, ResumeDropsRowsAtAndAfterTheFirstNewStep) {
  TempDir dir;
  {
    MetricsWriter writer(dir / "metrics.csv", false);
    for (std::int64_t step = 1; step <= 10; ++step) writer.write(row_at(step));
  }
  // The checkpoint was taken after step 5: the resumed run writes steps 6, 7, 8 again.
  MetricsWriter writer(dir / "metrics.csv", /*append=*/true);
  EXPECT_EQ(writer.rows_kept(), 10);  // before the first write: the rows found
  EXPECT_EQ(read_metrics(dir / "metrics.csv").size(), 10u);  // untouched until then
  MetricsRow resumed = row_at(6);
  resumed.loss = 0.125;  // the new run's figures replace the old run's
  writer.write(resumed);
  writer.write(row_at(7));
  writer.write(row_at(8));
  EXPECT_EQ(writer.rows_kept(), 5);
  const std::vector<MetricsRow> rows = read_metrics(dir / "metrics.csv");
  EXPECT_EQ(steps_of(rows), (std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(rows[5].loss, 0.125);
  EXPECT_EQ(rows[4], row_at(5));
  // The rewrite went through a temporary file that is gone.
  EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"metrics.csv"}));
}

TEST(MetricsTest, ResumeKeepsWholeRowsAfterACrash) {
  TempDir dir;
  write_text(dir / "metrics.csv", std::string(kMetricsHeader) + "\n" +
                                      format_metrics_row(row_at(1)) + "\n" +
                                      format_metrics_row(row_at(2)) + "\n3,0,0.33");
  MetricsWriter writer(dir / "metrics.csv", true);
  writer.write(row_at(3));
  EXPECT_EQ(writer.rows_kept(), 2);
  EXPECT_EQ(read_text(dir / "metrics.csv"),
            std::string(kMetricsHeader) + "\n" + format_metrics_row(row_at(1)) + "\n" +
                format_metrics_row(row_at(2)) + "\n" + format_metrics_row(row_at(3)) + "\n");
  EXPECT_EQ(names_in(dir.path()), (std::set<std::string>{"metrics.csv"}));
}

TEST(MetricsTest, ResumeAppendsWhenNothingIsDropped) {
  TempDir dir;
  {
    MetricsWriter writer(dir / "metrics.csv", false);
    for (std::int64_t step = 1; step <= 3; ++step) writer.write(row_at(step));
  }
  const std::string before = read_text(dir / "metrics.csv");
  MetricsWriter writer(dir / "metrics.csv", true);
  writer.write(row_at(4));
  EXPECT_EQ(read_text(dir / "metrics.csv"), before + format_metrics_row(row_at(4)) + "\n");
}

TEST(MetricsTest, AppendStartsAMissingOrEmptyFile) {
  TempDir dir;
  write_text(dir / "empty.csv", "");
  for (const char* name : {"missing.csv", "empty.csv"}) {
    MetricsWriter writer(dir / name, true);
    writer.write(row_at(1));
    EXPECT_EQ(read_metrics(dir / name), (std::vector<MetricsRow>{row_at(1)})) << name;
  }
}

TEST(MetricsTest, AppendRefusesAnotherKindOfFile) {
  TempDir dir;
  write_text(dir / "other.csv", "epoch,accuracy\n1,0.5\n");
  const std::string message = error_of([&] { MetricsWriter writer(dir / "other.csv", true); });
  EXPECT_NE(message.find("other.csv"), std::string::npos) << message;
  EXPECT_NE(message.find("line 1: expected the header 'step,epoch,loss,lr,step_time_ms,"
                         "samples_per_s,val_loss,test_loss,test_accuracy', got 'epoch,accuracy'"),
            std::string::npos)
      << message;
  EXPECT_EQ(read_text(dir / "other.csv"), "epoch,accuracy\n1,0.5\n");  // left alone
}

TEST(MetricsTest, MalformedFilesNameThePathAndLine) {
  TempDir dir;
  // The first format's six columns (the checks are the same for nine).
  const std::string header = std::string(kMetricsHeaderV1) + "\n";
  const auto message_for = [&](const std::string& contents) {
    write_text(dir / "bad.csv", contents);
    return error_of([&] { read_metrics(dir / "bad.csv"); });
  };
  std::string message = message_for(header + "1,0,0.5,0.1,2.5,512\n2,0,0.5,0.1\n");
  EXPECT_NE(message.find("bad.csv"), std::string::npos) << message;
  EXPECT_NE(message.find("line 3: expected 6 columns"), std::string::npos) << message;
  EXPECT_NE(message.find("got 4 in '2,0,0.5,0.1'"), std::string::npos) << message;

  message = message_for(header + "1,0,abc,0.1,2.5,512\n");
  EXPECT_NE(message.find("line 2: expected a number in column 'loss', got 'abc'"),
            std::string::npos)
      << message;
  message = message_for(header + "1,0,0.5,0.1,2.5,512,7\n");
  EXPECT_NE(message.find("line 2: expected 6 columns"), std::string::npos) << message;
  message = message_for(header + "1.5,0,0.5,0.1,2.5,512\n");
  EXPECT_NE(message.find("expected an integer in column 'step', got '1.5'"), std::string::npos)
      << message;
  message = message_for(header + "1,0,0.5,,2.5,512\n");
  EXPECT_NE(message.find("column 'lr', got an empty field"), std::string::npos) << message;
  message = message_for("");
  EXPECT_NE(message.find("is empty"), std::string::npos) << message;
  message = message_for("step,epoch,lo");
  EXPECT_NE(message.find("no complete header line"), std::string::npos) << message;

  message = error_of([&] { read_metrics(dir / "missing.csv"); });
  EXPECT_NE(message.find("cannot open metrics file"), std::string::npos) << message;
  EXPECT_NE(message.find("missing.csv"), std::string::npos) << message;
}

TEST(MetricsTest, MissingFolderIsAnErrorWithAHint) {
  TempDir dir;
  const std::string message =
      error_of([&] { MetricsWriter writer(dir / "no-such-folder" / "m.csv", false); });
  EXPECT_NE(message.find("no-such-folder"), std::string::npos) << message;
  EXPECT_NE(message.find("create it"), std::string::npos) << message;
}

TEST(MetricsTest, MovedWriterKeepsWriting) {
  TempDir dir;
  MetricsWriter first(dir / "metrics.csv", false);
  MetricsWriter second = std::move(first);
  second.write(row_at(1));
  EXPECT_EQ(read_metrics(dir / "metrics.csv").size(), 1u);
  EXPECT_NE(error_of([&] { first.write(row_at(2)); }).find("moved from"),  // NOLINT: on purpose
            std::string::npos);
}

}  // namespace
}  // namespace grove::program
