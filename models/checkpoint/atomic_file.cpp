// AtomicFileWriter (atomic_file.h) over POSIX calls: open(O_EXCL), write/pwrite loops that
// survive partial writes and EINTR, fsync, rename, and the fsync of the directory.
//
// Invariant: while descriptor_ >= 0 the temporary file exists and belongs to this writer; every
// path out of the class without a successful rename removes it (fail(), the destructor).
#include "models/checkpoint/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <iomanip>
#include <random>
#include <sstream>
#include <string>
#include <system_error>

#include "core/error.h"

namespace grove::checkpoint {
namespace {

// A name no other writer uses: the pid separates processes, a counter separates the writers of
// one process, and random bits separate this process from an earlier one with the same pid
// whose leftover temporary file is still there. O_EXCL catches what remains.
std::filesystem::path temporary_name_for(const std::filesystem::path& path) {
  static std::atomic<std::uint64_t> counter{0};
  std::random_device random;
  const std::uint64_t bits = (std::uint64_t{random()} << 32) ^ random() ^ counter++;
  std::ostringstream name;
  name << "." << path.filename().string() << ".grove-tmp." << ::getpid() << "." << std::hex
       << std::setw(16) << std::setfill('0') << bits;
  return path.parent_path() / name.str();
}

std::string system_reason(int error_number) {
  return std::error_code(error_number, std::generic_category()).message();
}

}  // namespace

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path) : path_(std::move(path)) {
  GROVE_CHECK(!path_.empty() && path_.has_filename(),
              "write_file_atomically: expected the path of a file, got ", path_,
              "; name the file to write, not only its directory");
  constexpr int kAttempts = 64;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    temporary_path_ = temporary_name_for(path_);
    descriptor_ = ::open(temporary_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (descriptor_ >= 0) return;
    if (errno != EEXIST) break;
  }
  const int error_number = errno;
  const std::filesystem::path directory =
      path_.parent_path().empty() ? std::filesystem::path(".") : path_.parent_path();
  GROVE_THROW(Error, "write_file_atomically: cannot create a temporary file in ", directory,
              " to replace ", path_, ": ", system_reason(error_number),
              "; check that the directory exists and is writable");
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!committed_) discard();
}

void AtomicFileWriter::discard() noexcept {
  if (descriptor_ >= 0) {
    ::close(descriptor_);
    descriptor_ = -1;
    ::unlink(temporary_path_.c_str());
  }
}

void AtomicFileWriter::check_open(const char* what) const {
  GROVE_CHECK(descriptor_ >= 0 && !committed_, "write_file_atomically: ", what,
              " on the writer of ", path_,
              ", which is already committed or failed; make a new AtomicFileWriter");
}

void AtomicFileWriter::fail(std::string_view what, int error_number) {
  discard();
  GROVE_THROW(Error, "write_file_atomically: ", what, " ", temporary_path_, " (to replace ", path_,
              ") failed: ", system_reason(error_number), "; ", path_,
              " is unchanged and the temporary file was removed",
              error_number == ENOSPC ? " (free some disk space and retry)" : "");
}

void AtomicFileWriter::write(const void* data, std::size_t size) {
  check_open("write()");
  const char* bytes = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ::ssize_t count = ::write(descriptor_, bytes + done, size - done);
    if (count < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    done += static_cast<std::size_t>(count);
  }
  size_ += size;
}

void AtomicFileWriter::write_at(std::uint64_t offset, const void* data, std::size_t size) {
  check_open("write_at()");
  GROVE_CHECK(offset <= size_ && size <= size_ - offset, "write_at: expected bytes [", offset, ", ",
              offset + size, ") within the ", size_, " bytes written so far to ", temporary_path_,
              "; write_at() overwrites, use write() to append");
  const char* bytes = static_cast<const char*>(data);
  std::size_t done = 0;
  while (done < size) {
    const ::ssize_t count =
        ::pwrite(descriptor_, bytes + done, size - done, static_cast<::off_t>(offset + done));
    if (count < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    done += static_cast<std::size_t>(count);
  }
}

void AtomicFileWriter::commit() {
  check_open("commit()");
  if (::fsync(descriptor_) != 0) fail("flushing (fsync)", errno);
  const int descriptor = descriptor_;
  descriptor_ = -1;
  if (::close(descriptor) != 0) {
    const int error_number = errno;
    ::unlink(temporary_path_.c_str());
    GROVE_THROW(Error, "write_file_atomically: closing ", temporary_path_,
                " failed: ", system_reason(error_number), "; ", path_,
                " is unchanged and the temporary file was removed");
  }
  if (::rename(temporary_path_.c_str(), path_.c_str()) != 0) {
    const int error_number = errno;
    ::unlink(temporary_path_.c_str());
    GROVE_THROW(Error, "write_file_atomically: renaming ", temporary_path_, " over ", path_,
                " failed: ", system_reason(error_number), "; ", path_,
                " is unchanged and the temporary file was removed",
                error_number == EISDIR ? " (the path names a directory)" : "");
  }
  committed_ = true;
  // The rename is in the directory's data: without this fsync a power cut could undo it.
  const std::filesystem::path directory =
      path_.parent_path().empty() ? std::filesystem::path(".") : path_.parent_path();
  const int directory_descriptor = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int error_number = 0;
  if (directory_descriptor < 0) {
    error_number = errno;
  } else {
    if (::fsync(directory_descriptor) != 0) error_number = errno;
    ::close(directory_descriptor);
  }
  // Some file systems cannot sync a directory (EINVAL); the rename is then as durable as they
  // make it, which is all that can be had there.
  GROVE_CHECK(error_number == 0 || error_number == EINVAL, "write_file_atomically: ", path_,
              " was replaced, but syncing its directory ", directory,
              " failed: ", system_reason(error_number),
              "; the new file may not survive a power cut (check the disk)");
}

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  AtomicFileWriter writer(path);
  writer.write(bytes);
  writer.commit();
}

}  // namespace grove::checkpoint
