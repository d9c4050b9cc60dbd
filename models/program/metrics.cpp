// The metrics file (metrics.h): formatting and parsing rows, the atomic rewrite, and the writer
// with its resume logic.
//
// What it is not: buffered. Each row goes to the kernel with one write() on a file opened with
// O_APPEND, so there is no user-space buffer that a crash could lose half of.
//
// Invariant: every error names the file, and for a malformed file the 1-based line number.
#include "models/program/metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>
#include <type_traits>
#include <utility>

#include "core/error.h"

namespace grove::program {
namespace {

constexpr std::size_t kColumns = 9;
constexpr std::size_t kColumnsV1 = 6;  // kMetricsHeaderV1's
constexpr std::array<std::string_view, kColumns> kColumnNames = {
    "step",          "epoch",    "loss",      "lr",           "step_time_ms",
    "samples_per_s", "val_loss", "test_loss", "test_accuracy"};

bool same(double a, double b) {
  return a == b || (std::isnan(a) && std::isnan(b));
}

std::string system_reason(int error_number) {
  return std::generic_category().message(error_number);
}

void append_number(std::string& text, double value) {
  if (std::isnan(value)) {
    text += "nan";  // one spelling, whatever the sign bit of the NaN
    return;
  }
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  GROVE_INTERNAL_ASSERT(error == std::errc(), "to_chars failed for a double");
  text.append(buffer, end);
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string where(const std::filesystem::path& path, std::int64_t line_number) {
  return str("metrics file ", path, ", line ", line_number);
}

template <typename Number>
Number parse_field(std::string_view field, std::size_t column, const std::filesystem::path& path,
                   std::int64_t line_number) {
  field = trim(field);
  Number value{};
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  const bool whole = error == std::errc() && end == field.data() + field.size() && !field.empty();
  if (!whole) {
    // Built by str() rather than "'" + ... + "'", which g++ 12 -O3 flags with a false -Wrestrict.
    const std::string found = field.empty() ? std::string("an empty field") : str("'", field, "'");
    GROVE_CHECK(false, where(path, line_number), ": expected ",
                std::is_integral_v<Number> ? "an integer" : "a number", " in column '",
                kColumnNames[column], "', got ", found, "; hint: fix or delete that line");
  }
  return value;
}

// One row of a parsed file, with the text it came from (kept as is on a rewrite).
struct ParsedRow {
  std::string_view text;
  MetricsRow row;
};

struct ParsedFile {
  std::vector<ParsedRow> rows;
  bool partial_last_line = false;  // text after the last newline (a cut-off row)
  bool first_format = false;       // kMetricsHeaderV1: no evaluation columns
};

// Parses a whole file; `contents` must outlive the result (rows point into it).
ParsedFile parse_metrics(const std::filesystem::path& path, std::string_view contents) {
  GROVE_CHECK(!contents.empty(), "metrics file ", path, " is empty: expected the header line '",
              kMetricsHeader, "'; hint: is it a file written by grove train --metrics?");
  ParsedFile parsed;
  std::int64_t line_number = 0;
  std::size_t position = 0;
  while (position < contents.size()) {
    const std::size_t newline = contents.find('\n', position);
    ++line_number;
    if (newline == std::string_view::npos) {
      GROVE_CHECK(line_number > 1, "metrics file ", path,
                  " has no complete header line (no newline after '", contents,
                  "'); hint: the run that wrote it stopped at once; delete the file");
      parsed.partial_last_line = true;
      break;
    }
    const std::string_view text = contents.substr(position, newline - position);
    position = newline + 1;
    const std::string_view line = trim(text);
    if (line_number == 1) {
      parsed.first_format = line == kMetricsHeaderV1;
      GROVE_CHECK(line == kMetricsHeader || parsed.first_format, where(path, 1),
                  ": expected the header '", kMetricsHeader, "', got '", line,
                  "'; hint: is it a metrics file written by grove train? Pass another path to "
                  "start a new one");
      continue;
    }
    if (line.empty()) continue;
    std::array<std::string_view, kColumns> fields;
    std::size_t count = 0;
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = line.find(',', start);
      const std::string_view field = line.substr(start, comma - start);
      if (count < kColumns) fields[count] = field;
      ++count;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    const std::size_t columns = parsed.first_format ? kColumnsV1 : kColumns;
    GROVE_CHECK(count == columns, where(path, line_number), ": expected ", columns, " columns (",
                parsed.first_format ? kMetricsHeaderV1 : kMetricsHeader, "), got ", count, " in '",
                line, "'; hint: fix or delete that line");
    MetricsRow row;
    row.step = parse_field<std::int64_t>(fields[0], 0, path, line_number);
    row.epoch = parse_field<std::int64_t>(fields[1], 1, path, line_number);
    row.loss = parse_field<double>(fields[2], 2, path, line_number);
    row.lr = parse_field<double>(fields[3], 3, path, line_number);
    row.step_time_ms = parse_field<double>(fields[4], 4, path, line_number);
    row.samples_per_s = parse_field<double>(fields[5], 5, path, line_number);
    if (!parsed.first_format) {
      row.val_loss = parse_field<double>(fields[6], 6, path, line_number);
      row.test_loss = parse_field<double>(fields[7], 7, path, line_number);
      row.test_accuracy = parse_field<double>(fields[8], 8, path, line_number);
    }
    parsed.rows.push_back({text, row});
  }
  return parsed;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const int open_error = errno;
  GROVE_CHECK(in.is_open(), "cannot open metrics file ", path, ": ", system_reason(open_error),
              "; hint: check the path (grove train --metrics writes it)");
  std::ostringstream contents;
  contents << in.rdbuf();
  GROVE_CHECK(!in.bad(), "cannot read metrics file ", path, ": ", system_reason(errno));
  return contents.str();
}

void write_all(int fd, std::string_view text, const std::filesystem::path& path) {
  while (!text.empty()) {
    const ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0 && errno == EINTR) continue;
    GROVE_CHECK(written >= 0, "cannot write to ", path, ": ", system_reason(errno),
                "; hint: is the disk full?");
    text.remove_prefix(static_cast<std::size_t>(written));
  }
}

void check_folder_exists(const std::filesystem::path& path) {
  const std::filesystem::path folder = path.parent_path();
  std::error_code ignored;
  GROVE_CHECK(folder.empty() || std::filesystem::is_directory(folder, ignored), "cannot write ",
              path, ": expected the folder ", folder, " to exist, it does not; hint: create it");
}

}  // namespace

std::string format_metrics_row(const MetricsRow& row) {
  std::string text = std::to_string(row.step) + "," + std::to_string(row.epoch) + ",";
  append_number(text, row.loss);
  text += ',';
  append_number(text, row.lr);
  text += ',';
  append_number(text, row.step_time_ms);
  text += ',';
  append_number(text, row.samples_per_s);
  for (const double value : {row.val_loss, row.test_loss, row.test_accuracy}) {
    text += ',';
    append_number(text, value);
  }
  return text;
}

bool operator==(const MetricsRow& a, const MetricsRow& b) {
  return a.step == b.step && a.epoch == b.epoch && same(a.loss, b.loss) && same(a.lr, b.lr) &&
         same(a.step_time_ms, b.step_time_ms) && same(a.samples_per_s, b.samples_per_s) &&
         same(a.val_loss, b.val_loss) && same(a.test_loss, b.test_loss) &&
         same(a.test_accuracy, b.test_accuracy);
}

std::vector<MetricsRow> read_metrics(const std::filesystem::path& path) {
  const std::string contents = read_text(path);
  std::vector<MetricsRow> rows;
  for (const ParsedRow& parsed : parse_metrics(path, contents).rows) rows.push_back(parsed.row);
  return rows;
}

MetricsWriter::MetricsWriter(std::filesystem::path path, bool append) : path_(std::move(path)) {
  check_folder_exists(path_);
  std::error_code ignored;
  const bool has_contents =
      std::filesystem::exists(path_, ignored) && std::filesystem::file_size(path_, ignored) > 0;
  if (append && has_contents) {
    // Checks the header and every row now, so a bad file stops the run before it trains.
    const std::string contents = read_text(path_);
    rows_kept_ = static_cast<std::int64_t>(parse_metrics(path_, contents).rows.size());
    resume_pending_ = true;
    return;
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  GROVE_CHECK(fd_ >= 0, "cannot create metrics file ", path_, ": ", system_reason(errno),
              "; hint: is the folder writable?");
  write_all(fd_, std::string(kMetricsHeader) + "\n", path_);
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

MetricsWriter::MetricsWriter(MetricsWriter&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      resume_pending_(std::exchange(other.resume_pending_, false)),
      rows_kept_(other.rows_kept_) {}

MetricsWriter& MetricsWriter::operator=(MetricsWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    resume_pending_ = std::exchange(other.resume_pending_, false);
    rows_kept_ = other.rows_kept_;
  }
  return *this;
}

void MetricsWriter::open_for_append() {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  GROVE_CHECK(fd_ >= 0, "cannot open metrics file ", path_, " to append: ", system_reason(errno),
              "; hint: is it writable?");
}

void MetricsWriter::prepare_resume(std::int64_t first_new_step) {
  // Read again: the file is the truth at the moment of the first new row.
  const std::string contents = read_text(path_);
  const ParsedFile parsed = parse_metrics(path_, contents);
  std::string kept = std::string(kMetricsHeader) + "\n";
  std::int64_t kept_rows = 0;
  for (const ParsedRow& row : parsed.rows) {
    if (row.row.step >= first_new_step) continue;
    // A first-format row is written again in this format (nan evaluations); others as they were.
    if (parsed.first_format) {
      kept += format_metrics_row(row.row);
    } else {
      kept.append(row.text);
    }
    kept += '\n';
    ++kept_rows;
  }
  // Rows of the old run at or after the resumed step, a cut-off last row, or the first format:
  // rewrite the file, so the new rows follow the kept ones directly under this format's header.
  if (kept_rows != static_cast<std::int64_t>(parsed.rows.size()) || parsed.partial_last_line ||
      parsed.first_format) {
    write_file_atomically(path_, kept);
  }
  rows_kept_ = kept_rows;
  open_for_append();
}

void MetricsWriter::write(const MetricsRow& row) {
  if (resume_pending_) {
    prepare_resume(row.step);
    resume_pending_ = false;
  }
  GROVE_CHECK(fd_ >= 0, "MetricsWriter::write: the writer for ", path_,
              " was moved from; write through the writer it was moved to");
  write_all(fd_, format_metrics_row(row) + "\n", path_);
}

}  // namespace grove::program
