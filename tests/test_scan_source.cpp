// A streaming scan's byte sources: a regular file read by several threads at once gives the
// bytes one read would, in order, across part and buffer edges and at the file's end.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "scan/source.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

std::string random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// The whole source read in buffers of `buffer` bytes, each by `parts` threads.
std::string read_in_parts(scan::ByteSource& src, std::size_t buffer, int parts) {
  std::string out, b(buffer, '\0');
  for (;;) {
    const std::size_t got = src.read_full_in_parts(b.data(), buffer, parts);
    out.append(b.data(), got);
    if (got < buffer) return out;
  }
}

}  // namespace

TEST(ScanSource, AFileReadInPartsGivesItsBytesInOrder) {
  TempDir dir;
  const std::size_t mib = std::size_t{1} << 20;
  for (const std::size_t size : {std::size_t{0}, std::size_t{5}, 3 * mib, 7 * mib + 12345}) {
    const std::string bytes = random_bytes(size, size + 1), path = (dir.path / ("f" + std::to_string(size))).string();
    std::ofstream(path, std::ios::binary) << bytes;
    for (const int parts : {1, 2, 3, 4})
      for (const std::size_t buffer : {mib / 2, 2 * mib + 7, 8 * mib}) {
        auto src = scan::open_source(path);
        EXPECT_EQ(read_in_parts(*src, buffer, parts), bytes) << size << " bytes, " << parts << " parts of " << buffer;
      }
    // Plain reads after parallel ones continue where those stopped.
    auto src = scan::open_source(path);
    std::string head(std::min(size, 2 * mib), '\0');
    ASSERT_EQ(src->read_full_in_parts(head.data(), head.size(), 4), head.size());
    std::string rest(size - head.size() + 1, '\0');
    ASSERT_EQ(src->read_full(rest.data(), rest.size()), size - head.size());
    EXPECT_EQ(head + rest.substr(0, size - head.size()), bytes) << size;
  }
}

TEST(ScanSource, APipeReadInPartsIsReadInOrderByOneThread) {
  TempDir dir;
  const std::string bytes = random_bytes((std::size_t{3} << 20) + 17, 9), path = (dir.path / "p").string();
  std::ofstream(path, std::ios::binary) << bytes;
  FILE* pipe = ::popen(("cat " + path).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  const std::string fd_path = "/dev/fd/" + std::to_string(::fileno(pipe));
  auto src = scan::open_source(fd_path);
  EXPECT_FALSE(src->rewindable);
  EXPECT_EQ(read_in_parts(*src, std::size_t{2} << 20, 4), bytes);
  ::pclose(pipe);
}
