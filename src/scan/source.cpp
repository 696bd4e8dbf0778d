#include "scan/source.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/pread_parts.hpp"
#include "tandem/core/error.hpp"

#if TANDEM_HAS_ZLIB
#include <zlib.h>
#endif
#if TANDEM_HAS_ZSTD
#include <zstd.h>
#endif

namespace tandem::scan {

std::size_t ByteSource::read_full(char* dst, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const std::size_t r = read(dst + got, n - got);
    if (r == 0) break;
    got += r;
  }
  return got;
}

std::size_t ByteSource::read_full_in_parts(char* dst, std::size_t n, int) { return read_full(dst, n); }

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const std::size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

int open_fd(const std::string& path, bool& regular) {
  if (path == "-") {
    regular = false;
    return STDIN_FILENO;
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open for reading ({})", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError(fmt::format("{}: {}", path, S_ISDIR(st.st_mode) ? "is a directory, not a file" : "cannot stat"));
  }
  regular = S_ISREG(st.st_mode);
  return fd;
}

class FdSource : public ByteSource {
 public:
  explicit FdSource(const std::string& path) {
    bool regular = false;
    fd_ = open_fd(path, regular);
    rewindable = regular;
    name = path == "-" ? "<stdin>" : path;
    own_ = path != "-";
    // A pipe's 64 KiB buffer makes a read (and the writer's wake-up) every 64 KiB: 1 MiB, the
    // default most an unprivileged process may ask for, moves several times the bytes a second.
    // Not a pipe, or a smaller limit: the call fails and nothing changes.
    if (!regular) (void)::fcntl(fd_, F_SETPIPE_SZ, 1 << 20);
  }
  ~FdSource() override {
    if (own_) ::close(fd_);
  }
  std::size_t read(char* dst, std::size_t n) override {
    const std::size_t r = read_at(dst, n, at_);
    at_ += r;
    return r;
  }
  std::size_t read_full_in_parts(char* dst, std::size_t n, int parts) override {
    constexpr std::size_t kPartBytes = std::size_t{1} << 20;  // below this, a thread costs more than it copies
    parts = static_cast<int>(std::min<std::size_t>(std::max(parts, 1), n / kPartBytes));
    if (!rewindable || parts <= 1) return read_full(dst, n);
    // Helpers of this reader's own, asleep between calls, not an OpenMP team: a team's threads
    // would spin between this reader's calls on the cores the parsers use.
    if (!pool_ || pool_->helpers() < parts - 1) pool_ = std::make_unique<io::PreadPool>(parts - 1);
    const std::size_t got = io::pread_parts({fd_, name}, dst, n, at_, parts, pool_.get());
    at_ += got;
    return got;
  }
  int fd() const { return fd_; }

 private:
  // Up to n bytes from byte `at` of a regular file (pread: threads may read parts at once), or
  // from the stream's position (`at` then only for messages).
  std::size_t read_at(char* dst, std::size_t n, std::size_t at) {
    if (rewindable) return io::pread_some({fd_, name}, dst, n, at);
    for (;;) {
      const ssize_t r = ::read(fd_, dst, n);
      if (r >= 0) return static_cast<std::size_t>(r);
      // Standard input from a /proc file may refuse a large count as pread_some's files do.
      if (errno == ENOMEM && n > 4096) {
        n /= 2;
        continue;
      }
      if (errno != EINTR)
        throw InputError(fmt::format("{}: read failed at byte {} ({})", name, at, std::strerror(errno)));
    }
  }
  int fd_{-1};
  bool own_{false};
  std::size_t at_{0};                    // the next byte
  std::unique_ptr<io::PreadPool> pool_;  // read_full_in_parts' helpers, started on its first call
};

#if TANDEM_HAS_ZLIB
class GzipSource : public ByteSource {
 public:
  explicit GzipSource(const std::string& path) {
    bool regular = false;
    const int fd = open_fd(path, regular);
    gz_ = gzdopen(fd, "rb");
    if (!gz_) {
      ::close(fd);
      throw InputError(fmt::format("{}: cannot open as gzip", path));
    }
    gzbuffer(gz_, 1u << 20);
    rewindable = regular;
    compressed = true;
    name = path;
  }
  ~GzipSource() override { gzclose(gz_); }
  std::size_t read(char* dst, std::size_t n) override {
    const unsigned ask = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int r = gzread(gz_, dst, ask);
    if (r < 0) {
      int code = 0;
      const char* what = gzerror(gz_, &code);
      throw InputError(fmt::format("{}: not a valid gzip stream ({})", name, what ? what : "read error"));
    }
    return static_cast<std::size_t>(r);
  }

 private:
  gzFile gz_{nullptr};
};
#endif

#if TANDEM_HAS_ZSTD
class ZstdSource : public ByteSource {
 public:
  explicit ZstdSource(const std::string& path) : file_(path), in_(ZSTD_DStreamInSize()) {
    dctx_ = ZSTD_createDCtx();
    rewindable = file_.rewindable;
    compressed = true;
    name = path;
  }
  ~ZstdSource() override { ZSTD_freeDCtx(dctx_); }
  std::size_t read(char* dst, std::size_t n) override {
    ZSTD_outBuffer out{dst, n, 0};
    while (out.pos == 0) {
      if (pos_ == filled_) {
        filled_ = file_.read(in_.data(), in_.size());
        pos_ = 0;
        if (filled_ == 0) {
          if (!frame_done_) throw InputError(fmt::format("{}: the Zstandard stream ends early (truncated)", name));
          return 0;
        }
      }
      ZSTD_inBuffer in{in_.data(), filled_, pos_};
      const std::size_t r = ZSTD_decompressStream(dctx_, &out, &in);
      if (ZSTD_isError(r))
        throw InputError(fmt::format("{}: not a valid Zstandard stream ({})", name, ZSTD_getErrorName(r)));
      pos_ = in.pos;
      frame_done_ = r == 0;
    }
    return out.pos;
  }

 private:
  FdSource file_;
  std::vector<char> in_;
  std::size_t pos_{0}, filled_{0};
  bool frame_done_{true};
  ZSTD_DCtx* dctx_{nullptr};
};
#endif

}  // namespace

bool is_compressed(const std::string& path) { return ends_with(path, ".gz") || ends_with(path, ".zst"); }

std::unique_ptr<ByteSource> open_source(const std::string& path) {
  if (ends_with(path, ".gz")) {
#if TANDEM_HAS_ZLIB
    return std::make_unique<GzipSource>(path);
#else
    throw InputError(fmt::format("{}: a gzip file, but this build of tandem has no zlib support", path));
#endif
  }
  if (ends_with(path, ".zst")) {
#if TANDEM_HAS_ZSTD
    return std::make_unique<ZstdSource>(path);
#else
    throw InputError(fmt::format("{}: a Zstandard file, but this build of tandem has no libzstd support", path));
#endif
  }
  return std::make_unique<FdSource>(path);
}

}  // namespace tandem::scan
