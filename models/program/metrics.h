// The metrics file of a training run: a CSV with one row per step, written as the run goes, read
// back by `grove plot` (plot.h) and by anyone with a spreadsheet or pandas.
//
//   step,epoch,loss,lr,step_time_ms,samples_per_s,val_loss,test_loss,test_accuracy
//   1,0,2.3125,0.1,41.5,3084.3,nan,nan,nan
//   2,0,2.2017,0.1,3.25,39384.6,nan,nan,nan
//   ...
//   469,0,0.4301,0.09,1.5,85333.3,nan,0.4528,0.8412     (an evaluation after step 469)
//
// The last three columns hold the evaluation that ran right after the row's step (the figures
// of the model's task, zoo::Metric; "nan" for the others and for steps without one). Files of
// the first format (the first six columns only) are read too, their evaluations nan, and a run
// resumed into one rewrites it in this format.
//
// Numbers are written in the shortest form that reads back to the same double (std::to_chars:
// "0.1", "3e-04", "51200"), so a round trip is exact; NaN and infinities are written "nan",
// "inf", "-inf".
//
// What it is not: a general CSV library (no quoting: every field is a number).
//
// Invariants of a file written here:
// - the first line is exactly the header above (or the first format's);
// - each row is written whole with one write() and then flushed, so a crash leaves whole rows
//   and at most one partial last line, which has no newline; readers ignore a last line without
//   a newline (a row written here always ends with one);
// - a resumed run (append mode) never leaves two rows for one step: rows with step >= the first
//   step it writes are removed first, by rewriting the file atomically (temporary file in the
//   same folder, flushed to disk, renamed over the old one).
#pragma once

#include "models/checkpoint/atomic_file.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace grove::program {

// The header line of a metrics file, without its newline.
inline constexpr std::string_view kMetricsHeader =
    "step,epoch,loss,lr,step_time_ms,samples_per_s,val_loss,test_loss,test_accuracy";
// The first format's header (no evaluation columns): read, and rewritten on resume.
inline constexpr std::string_view kMetricsHeaderV1 =
    "step,epoch,loss,lr,step_time_ms,samples_per_s";

struct MetricsRow {
  std::int64_t step = 0;   // 1-based count of steps taken in the run
  std::int64_t epoch = 0;  // as the program counts them (train::StepReport: 0-based)
  double loss = NAN;
  double lr = 0.0;
  double step_time_ms = 0.0;
  double samples_per_s = 0.0;
  // The evaluation after this step (NaN: none, or not a figure of the model's task).
  double val_loss = NAN;
  double test_loss = NAN;
  double test_accuracy = NAN;

  // Field by field, NaN equal to NaN (a row reads back equal to the row written).
  friend bool operator==(const MetricsRow& a, const MetricsRow& b);
};

// The CSV line of a row, without its newline: "12,0,0.4123,0.1,3.25,39384.6".
std::string format_metrics_row(const MetricsRow& row);

// Reads a metrics file. Blank lines are skipped and a last line without a newline is ignored
// (a partial row; see the invariants above). Throws grove::Error naming the path (and the line,
// 1-based, where there is one) for a missing or unreadable file, an empty file, a wrong header,
// a row with a missing or extra column, or a field that is not a number (with the column's
// name and the text found). Blocks on file I/O; thread-safe (no shared state).
std::vector<MetricsRow> read_metrics(const std::filesystem::path& path);

// Files are replaced atomically (temporary file, flush, rename) by models/checkpoint's writer:
// the metrics file's rewrite on resume, and plots.
using checkpoint::write_file_atomically;

// Appends rows to a metrics file as a run goes. Owns an open file descriptor; movable, not
// copyable; not thread-safe (one writer per file: two writers on one file interleave rows).
// Every call blocks on file I/O; write() makes one write() system call and no fsync (rows
// survive a crash of the program, not necessarily of the machine).
class MetricsWriter {
 public:
  // append == false: creates or truncates `path` and writes the header.
  // append == true (a resumed run): a missing or empty file is started as above; otherwise the
  // file must hold a metrics header (grove::Error naming the path and showing both headers
  // otherwise) and well-formed rows (as read_metrics). The rows stay until the first write():
  // that one first removes every row with step >= its step (and a partial last line) by an
  // atomic rewrite, then appends.
  // The folder of `path` must exist (grove::Error with a hint otherwise).
  MetricsWriter(std::filesystem::path path, bool append);
  ~MetricsWriter();
  MetricsWriter(MetricsWriter&& other) noexcept;
  MetricsWriter& operator=(MetricsWriter&& other) noexcept;
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Appends one row, whole, and returns when the system has it.
  void write(const MetricsRow& row);

  const std::filesystem::path& path() const { return path_; }
  // Rows of an earlier run kept by append mode (known after the first write; before it, the
  // rows found in the file).
  std::int64_t rows_kept() const { return rows_kept_; }

 private:
  void open_for_append();
  void prepare_resume(std::int64_t first_new_step);

  std::filesystem::path path_;
  int fd_ = -1;
  bool resume_pending_ = false;  // append mode: the first write() still has to trim the file
  std::int64_t rows_kept_ = 0;
};

}  // namespace grove::program
