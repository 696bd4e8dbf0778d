// One byte range of a file read by several threads (core/pread_parts.hpp), on an OpenMP team and
// on a reader's own pool: the bytes asked for, where the file ends when it ends early, errors that
// name the file and byte from whichever thread met them, and a pool used many times or never.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "core/pread_parts.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// An open file of `bytes`, closed afterwards.
struct OpenFile {
  std::string path;
  int fd;
  OpenFile(const TempDir& dir, const std::string& name, const std::string& bytes) : path(dir.file(name)) {
    std::ofstream(path, std::ios::binary) << bytes;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  ~OpenFile() { ::close(fd); }
};

// A temporary file of random bytes, open, and a pool of three helpers to read it with.
struct RandomFile {
  TempDir dir;
  std::string bytes;
  OpenFile file;
  io::PreadPool pool{3};
  RandomFile(const std::string& name, std::size_t n, std::uint64_t seed)
      : bytes(random_bytes(n, seed)), file(dir, name, bytes) {}
};

// Both ways the parts are read: an OpenMP team (no pool) and a reader's pool.
std::array<io::PreadPool*, 2> both_modes(io::PreadPool& pool) { return {nullptr, &pool}; }

// Bytes [at, at + n) of `f` read by `threads` threads (on `pool` where given); "got" the count.
std::string read_range(const io::PreadFile& f, std::size_t n, std::uint64_t at, int threads, io::PreadPool* pool,
                       std::size_t& got) {
  std::string out(n, '\x01');
  got = io::pread_parts(f, out.data(), n, at, threads, pool);
  return out.substr(0, got);
}

// The message of the InputError that reading n bytes at `at` throws ("" if none).
std::string read_error(const io::PreadFile& f, std::size_t n, std::uint64_t at, int threads,
                       io::PreadPool* pool = nullptr) {
  std::string buf(n, '\0');
  return input_error([&] { io::pread_parts(f, buf.data(), n, at, threads, pool); });
}

}  // namespace

TEST(PreadParts, BothThreadModesGiveTheBytesAsked) {
  RandomFile f("f", 9 * kMiB + 123, 1);
  ASSERT_GE(f.file.fd, 0);
  for (io::PreadPool* p : both_modes(f.pool))
    for (const int threads : {1, 2, 4})
      for (const std::size_t n : {std::size_t{0}, std::size_t{1}, kMiB - 1, 3 * kMiB + 7, 9 * kMiB})
        for (const std::uint64_t at : {std::uint64_t{0}, std::uint64_t{123}}) {
          SCOPED_TRACE(testing::Message()
                       << (p ? "pool, " : "OpenMP, ") << threads << " threads, " << n << " at " << at);
          std::size_t got = 0;
          EXPECT_EQ(read_range({f.file.fd, f.file.path}, n, at, threads, p, got), f.bytes.substr(at, n));
          EXPECT_EQ(got, n);
          // Counted from an origin: byte 0 is the file's byte 100.
          EXPECT_EQ(read_range({f.file.fd, f.file.path, 100}, n, at, threads, p, got), f.bytes.substr(100 + at, n));
        }
}

// A file shorter than the range asked: the count is where it ended, every byte before it read.
TEST(PreadParts, AShortFileReturnsWhereItEnded) {
  RandomFile f("short", 3 * kMiB + 5, 2);
  ASSERT_GE(f.file.fd, 0);
  for (io::PreadPool* p : both_modes(f.pool))
    for (const int threads : {1, 4})
      for (const std::uint64_t at : {std::uint64_t{0}, std::uint64_t{kMiB + 3}, std::uint64_t{f.bytes.size()},
                                     std::uint64_t{f.bytes.size() + kMiB}}) {
        SCOPED_TRACE(testing::Message() << (p ? "pool, " : "OpenMP, ") << threads << " threads, at " << at);
        std::size_t got = 0;
        const std::string read = read_range({f.file.fd, f.file.path}, 8 * kMiB, at, threads, p, got);
        EXPECT_EQ(got, at < f.bytes.size() ? f.bytes.size() - at : 0);
        EXPECT_EQ(read, at < f.bytes.size() ? f.bytes.substr(at) : "");
      }
}

// A reader's pool serves call after call (as the CSV scan's buffers are filled), with any number
// of its helpers, and stays correct.
TEST(PreadParts, ManyCallsOnOnePoolGiveTheRightBytes) {
  RandomFile f("many", 16 * kMiB, 3);
  ASSERT_GE(f.file.fd, 0);
  std::mt19937_64 rng(4);
  for (int call = 0; call < 200; ++call) {
    const std::size_t n = 2 * kMiB + rng() % (3 * kMiB), at = rng() % (f.bytes.size() - n);
    const int threads = 1 + call % 4;
    std::size_t got = 0;
    ASSERT_EQ(read_range({f.file.fd, f.file.path}, n, at, threads, &f.pool, got), f.bytes.substr(at, n))
        << "call " << call << ": " << n << " f.bytes at " << at << ", " << threads << " threads";
  }
}

// A failed read names the file, the byte and the reason, in both thread modes.
TEST(PreadParts, AReadErrorNamesTheFileAndByte) {
  TempDir dir;
  const int dir_fd = ::open(dir.path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir_fd, 0);
  const std::string name = dir.path.string();
  const std::regex several_threads(": read failed at byte [0-9]+ \\(" + std::string(std::strerror(EISDIR)) + "\\)$");
  io::PreadPool pool(3);
  for (io::PreadPool* p : both_modes(pool)) {
    SCOPED_TRACE(p ? "pool" : "OpenMP");
    EXPECT_EQ(read_error({dir_fd, name}, 4 * kMiB, 100, 1, p),
              name + ": read failed at byte 100 (" + std::strerror(EISDIR) + ")");
    const std::string message = read_error({dir_fd, name}, 4 * kMiB, 0, 4, p);
    EXPECT_EQ(message.rfind(name, 0), 0u) << message;
    EXPECT_TRUE(std::regex_search(message, several_threads)) << message;
  }
  ::close(dir_fd);
  // A descriptor that is not open.
  EXPECT_EQ(read_error({-1, "closed"}, 16, 7, 1),
            std::string("closed: read failed at byte 7 (") + std::strerror(EBADF) + ")");
}

// Only the pieces from the second on fail (their file offsets reach past the largest off_t:
// EINVAL; the first reads at the largest offsets and finds the end), so the error is often met
// by a helper: it reaches the caller all the same.
TEST(PreadParts, AnErrorOnAHelperReachesTheCaller) {
  TempDir dir;
  OpenFile file(dir, "e", "abc");
  ASSERT_GE(file.fd, 0);
  const std::uint64_t origin = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max()) - kMiB;
  io::PreadPool pool(3);
  EXPECT_EQ(read_error({file.fd, file.path, origin}, 4 * kMiB, 0, 1),
            file.path + ": read failed at byte " + std::to_string(kMiB) + " (" + std::strerror(EINVAL) + ")");
  for (int i = 0; i < 50; ++i)
    for (io::PreadPool* p : both_modes(pool)) {
      const std::string message = read_error({file.fd, file.path, origin}, 4 * kMiB, 0, 4, p);
      bool later = false;
      for (const std::size_t piece : {kMiB, 2 * kMiB, 3 * kMiB})
        later |= message == fmt::format("{}: read failed at byte {} ({})", file.path, piece, std::strerror(EINVAL));
      ASSERT_TRUE(later) << (p ? "pool: " : "OpenMP: ") << message;
    }
}

// A pool made and dropped without a call, or with no helpers, stops cleanly.
TEST(PreadParts, APoolDestroyedRightAfterCreationStops) {
  for (int i = 0; i < 20; ++i) {
    io::PreadPool pool(3);
    EXPECT_EQ(pool.helpers(), 3);
  }
  io::PreadPool none(0);
  EXPECT_EQ(none.helpers(), 0);
  // With no helpers, the caller reads every piece.
  TempDir dir;
  const std::string bytes = random_bytes(3 * kMiB, 5);
  OpenFile file(dir, "n", bytes);
  std::size_t got = 0;
  EXPECT_EQ(read_range({file.fd, file.path}, bytes.size(), 0, 4, &none, got), bytes);
}
