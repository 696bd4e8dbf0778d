// AtomicOutput: outputs that appear whole or not at all, devices written in place, temporaries
// that a signal handler can delete.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "tandem/core/detail/io_pieces.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::io {
namespace {

constexpr int kMaxSymlinkHops = 40;  // as the kernel's ELOOP limit

// A fixed table (no allocation, lock-free atomics) so remove_temporaries() is async-signal-safe.
struct TempSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 holds a live temporary's name
  int files{-1};              // -1: a file; else a folder of files named 0 … files - 1
  char name[4096];
};
constexpr int kTempSlots = 64;
TempSlot g_temps[kTempSlots];

int register_temporary(const std::string& name, int files = -1) {
  if (name.size() + 24 >= sizeof(g_temps[0].name)) return -1;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = 0;
    if (g_temps[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_temps[i].name, name.c_str(), name.size() + 1);
      g_temps[i].files = files;
      g_temps[i].state.store(2);
      return i;
    }
  }
  return -1;  // table full: the temporary still goes away on failure, only not from a signal handler
}

void release_temporary(int& slot) {
  if (slot >= 0) g_temps[slot].state.store(0);
  slot = -1;
}

// Follows symbolic links from `path` to the name that is finally written (which may not exist).
std::string resolve_symlinks(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p = path;
  for (int hop = 0; hop < kMaxSymlinkHops; ++hop) {
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(p, ec))) return p.string();
    const fs::path to = fs::read_symlink(p, ec);
    if (ec) throw InputError(fmt::format("{}: cannot read the symbolic link ({})", path, ec.message()));
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  throw InputError(fmt::format("{}: too many levels of symbolic links", path));
}

std::string errno_text(int err) { return err ? std::strerror(err) : "write error"; }

}  // namespace

AtomicOutput::AtomicOutput(std::string path) : path_(std::move(path)) {
  if (path_ == "-") {
    mode_ = Mode::stdout_;
    return;
  }
  if (path_.empty()) throw InputError("an output file name is empty");
  target_ = resolve_symlinks(path_);
  struct stat st {};
  if (::stat(target_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a directory, not a file", path_));
    if (!S_ISREG(st.st_mode)) {  // a device, FIFO, socket or terminal: written in place, never replaced
      mode_ = Mode::in_place;
      if (::access(target_.c_str(), W_OK) != 0)
        throw InputError(fmt::format("{}: cannot open for writing ({})", path_, std::strerror(errno)));
      return;
    }
  } else if (errno != ENOENT) {
    throw InputError(fmt::format("{}: cannot open for writing ({})", path_, std::strerror(errno)));
  }
  const std::string dir = std::filesystem::path(target_).parent_path().string();
  const std::string d = dir.empty() ? "." : dir;
  struct stat ds {};
  if (::stat(d.c_str(), &ds) != 0)
    throw InputError(fmt::format("{}: cannot open for writing ({})", path_, std::strerror(errno)));
  if (!S_ISDIR(ds.st_mode))
    throw InputError(fmt::format("{}: cannot open for writing ({} is not a directory)", path_, d));
  if (::access(d.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{}: cannot open for writing ({})", path_, std::strerror(errno)));
}

AtomicOutput::~AtomicOutput() {
  if (mode_ == Mode::replace && opened_ && !committed_) {
    file_.close();
    ::unlink(temp_.c_str());
  }
  release_temporary(slot_);
}

void AtomicOutput::open() {
  opened_ = true;
  if (mode_ == Mode::stdout_) return;
  if (mode_ == Mode::in_place) {
    file_.open(target_, std::ios::binary | std::ios::out);
  } else {
    std::random_device rd;
    temp_ = fmt::format("{}.tmp-{}-{:x}", target_, ::getpid(), rd());
    slot_ = register_temporary(temp_);  // before the file exists: a signal in between finds no file
    file_.open(temp_, std::ios::binary | std::ios::trunc);
  }
  if (!file_) {
    const int err = errno;
    release_temporary(slot_);
    opened_ = false;
    throw InputError(fmt::format("{}: cannot open for writing ({})", path_, errno_text(err)));
  }
}

std::ostream& AtomicOutput::stream() {
  if (!opened_) open();
  return mode_ == Mode::stdout_ ? std::cout : file_;
}

void AtomicOutput::write(const void* data, std::size_t bytes, int threads) {
  std::ostream& s = stream();
  // Standard output and devices are written in order; a small write is not worth a second handle.
  if (mode_ != Mode::replace || bytes < detail::kMinIoPiece) {
    s.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
    return;
  }
  const detail::IoPieces plan(bytes, threads > 0 ? threads : default_threads());
  file_.flush();
  if (!file_) return;  // finish() reports the failed write
  const std::streamoff at = file_.tellp();
  const int fd = ::open(temp_.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("{}: write failed ({})", path_, errno_text(errno)));
  std::atomic<int> failed{0};
#pragma omp parallel for num_threads(plan.threads) schedule(dynamic, 1) if (plan.threads > 1)
  for (std::size_t i = 0; i < plan.count; ++i) {
    for (std::size_t done = plan.begin(i), end = plan.end(i); done < end && failed.load() == 0;) {
      const ssize_t put = ::pwrite(fd, static_cast<const char*>(data) + done, std::min(end - done, detail::kMaxIo),
                                   static_cast<off_t>(at) + static_cast<off_t>(done));
      if (put > 0) {
        done += static_cast<std::size_t>(put);
      } else if (put == 0 || errno != EINTR) {
        int none = 0;
        failed.compare_exchange_strong(none, put == 0 ? EIO : errno);
      }
    }
  }
  if (::close(fd) != 0 && failed.load() == 0) failed = errno;
  if (failed.load() != 0) throw Error(fmt::format("{}: write failed ({})", path_, errno_text(failed.load())));
  file_.seekp(at + static_cast<std::streamoff>(bytes));
}

bool AtomicOutput::same_destination(const AtomicOutput& other) const {
  if (mode_ == Mode::stdout_ || other.mode_ == Mode::stdout_) return mode_ == other.mode_;
  namespace fs = std::filesystem;
  std::error_code e1, e2;
  const auto a = fs::weakly_canonical(fs::absolute(target_, e1), e1);
  const auto b = fs::weakly_canonical(fs::absolute(other.target_, e2), e2);
  if (e1 || e2) return target_ == other.target_;
  return a == b;
}

void AtomicOutput::finish() {
  if (finished_) return;
  if (!opened_) open();  // an empty output is still an output
  errno = 0;
  if (mode_ == Mode::stdout_) {
    std::cout.flush();
    if (!std::cout) throw Error(fmt::format("standard output: write failed ({})", errno_text(errno)));
  } else {
    file_.flush();
    const int err = errno;
    const bool flushed = bool(file_);
    file_.close();
    if (!flushed || file_.fail())
      throw Error(fmt::format("{}: write failed ({})", path_, errno_text(flushed ? errno : err)));
  }
  finished_ = true;
}

void AtomicOutput::commit() {
  finish();
  if (mode_ == Mode::replace && !committed_) {
    struct stat st {};
    if (::stat(target_.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      ::chmod(temp_.c_str(), st.st_mode & 07777);  // replacing a file keeps its permissions
      // Removed first, then the finished output renamed to a free name: ext4 (auto_da_alloc)
      // starts writing back a file renamed over another, which held up the 10^7-row result of
      // db-benchmark q10 (480 MB) by 0.35 s. Where removing fails, the rename replaces it.
      ::unlink(target_.c_str());
    }
    if (std::rename(temp_.c_str(), target_.c_str()) != 0)
      throw Error(fmt::format("{}: cannot move the finished output into place ({})", path_, std::strerror(errno)));
    release_temporary(slot_);
  }
  committed_ = true;
}

void AtomicOutput::commit_all(std::initializer_list<AtomicOutput*> outputs) {
  for (AtomicOutput* o : outputs) o->finish();
  for (AtomicOutput* o : outputs) o->commit();
}

namespace {

// Removes a registered folder's files NAME/0 … and then the folder, with no allocation.
void remove_folder(const TempSlot& t) noexcept {
  char path[sizeof(t.name)];
  std::size_t n = 0;
  while (t.name[n] != '\0') path[n] = t.name[n], ++n;
  path[n++] = '/';
  for (int i = 0; i < t.files; ++i) {
    char digits[16];
    int d = 0;
    for (int v = i; d == 0 || v > 0; v /= 10) digits[d++] = static_cast<char>('0' + v % 10);
    std::size_t at = n;
    while (d > 0) path[at++] = digits[--d];
    path[at] = '\0';
    ::unlink(path);
  }
  ::rmdir(t.name);
}

}  // namespace

int register_temporary_folder(const std::string& dir, int files) { return register_temporary(dir, files); }

void release_temporary_folder(int slot) { release_temporary(slot); }

void remove_temporaries() noexcept {
  for (auto& t : g_temps) {
    if (t.state.load() != 2) continue;
    if (t.files < 0) ::unlink(t.name);
    else remove_folder(t);
  }
}
}  // namespace tandem::io
