#include "temp_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"

namespace tandem::detail {

std::string temp_parent(const std::string& given) {
  if (!given.empty()) return given;
  const char* env = std::getenv("TMPDIR");
  return env != nullptr && *env != '\0' ? env : "/tmp";
}

TempFile::TempFile(const std::string& parent) {
  std::string name = parent + "/tandem-sort-XXXXXX";
  if (::mkdtemp(name.data()) == nullptr)
    throw UsageError(fmt::format("sorting by runs: cannot make a folder in '{}' ({})", parent, std::strerror(errno)));
  folder_ = name;
  slot_ = io::register_temporary_folder(folder_, 1);
  file_ = folder_ + "/0";
  fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    const int err = errno;
    ::rmdir(folder_.c_str());
    io::release_temporary_folder(slot_);
    throw Error(fmt::format("sorting by runs: cannot create '{}' ({})", file_, std::strerror(err)));
  }
}

TempFile::~TempFile() {
  ::close(fd_);
  ::unlink(file_.c_str());
  ::rmdir(folder_.c_str());
  io::release_temporary_folder(slot_);
}

void TempFile::write_at(const void* data, std::uint64_t bytes, std::uint64_t offset) {
  const auto* p = static_cast<const char*>(data);
  for (std::uint64_t at = 0; at < bytes;) {
    const ssize_t n = ::pwrite(fd_, p + at, bytes - at, static_cast<off_t>(offset + at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(fmt::format("sorting by runs: writing '{}' failed ({})", file_, std::strerror(errno)));
    at += static_cast<std::uint64_t>(n);
  }
}

void TempFile::read_at(void* data, std::uint64_t bytes, std::uint64_t offset) const {
  auto* p = static_cast<char*>(data);
  for (std::uint64_t at = 0; at < bytes;) {
    const ssize_t n = ::pread(fd_, p + at, bytes - at, static_cast<off_t>(offset + at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(fmt::format("sorting by runs: reading '{}' back failed ({})", file_, std::strerror(errno)));
    at += static_cast<std::uint64_t>(n);
  }
}

void TempFile::truncate() {
  if (::ftruncate(fd_, 0) != 0)
    throw Error(fmt::format("sorting by runs: cannot truncate '{}' ({})", file_, std::strerror(errno)));
}

}  // namespace tandem::detail
