// Atomic file replacement: a file at `path` either keeps its old bytes or has all of its new
// ones, whatever happens to the process (an exception, a kill, a power cut after the call).
//
// How: the bytes go to a temporary file in the same directory (same file system, so the rename
// below is atomic), named
//   .<file name>.grove-tmp.<pid>.<random hex>
// and created exclusively (O_EXCL, so two writers never share one). Commit flushes it to disk
// (fsync), closes it, renames it over `path` (rename(2) replaces atomically), then fsyncs the
// directory so that the rename itself survives a power cut. Until the rename, `path` is not
// touched; on any error before it, the temporary file is removed. A process killed mid-write
// leaves its temporary file behind (nothing can remove it), never a torn `path`; the name
// pattern above lets a caller recognise and delete such leftovers.
//
// What it is not: a lock. Two processes replacing the same path both succeed, in some order;
// the last rename wins. The new file has the default permissions (0666 minus the umask), not
// those of the file it replaces. POSIX only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string_view>

namespace grove::checkpoint {

// Writes one file atomically, in pieces. Construction creates the temporary file; write()
// appends; write_at() overwrites bytes written earlier (a header patched once the data is
// known); commit() publishes the file at `path`. Destroying a writer that was not committed
// removes the temporary file and leaves `path` as it was.
//
// Contract: owns the temporary file and its descriptor; not copyable or movable; one thread at
// a time. Every call blocks on file I/O. Errors (no such directory, disk full, a failed
// fsync or rename) throw grove::Error naming the path and the system's reason; after an error
// the writer is finished: later calls throw, and the temporary file is already removed.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::filesystem::path path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends `size` bytes at the end of what was written so far.
  void write(const void* data, std::size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Overwrites bytes [offset, offset + size) of what was written so far (it cannot extend it).
  void write_at(std::uint64_t offset, const void* data, std::size_t size);
  // fsync, close, rename over path(), fsync the directory. Called once.
  void commit();

  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temporary_path() const { return temporary_path_; }
  std::uint64_t bytes_written() const { return size_; }

 private:
  void check_open(const char* what) const;
  [[noreturn]] void fail(std::string_view what, int error_number);
  void discard() noexcept;

  std::filesystem::path path_;
  std::filesystem::path temporary_path_;
  int descriptor_ = -1;
  std::uint64_t size_ = 0;
  bool committed_ = false;
};

// Replaces the file at `path` by `bytes` through an AtomicFileWriter: for small files (plots,
// JSON, run descriptions) that must never be seen half-written. Blocks; throws grove::Error.
void write_file_atomically(const std::filesystem::path& path, std::string_view bytes);

}  // namespace grove::checkpoint
