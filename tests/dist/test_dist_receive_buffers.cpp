// The receive buffers kept between exchanges: large enough, reused warm, never more kept than the
// bound, huge ones 2 MiB aligned.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "dist/receive_buffers.hpp"

namespace tandem::dist::test {
namespace {

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

TEST(ReceiveBuffers, AKeptBufferServesTheNextRequestItFits) {
  ReceiveBuffers pool(16 * kMiB);
  std::byte* first = nullptr;
  {
    BufferLease a = pool.take(5 * kMiB, 2);
    first = a.data();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(first) % (2 * kMiB), 0u);
    std::memset(first, 0xab, 5 * kMiB);  // all of it writable
  }
  EXPECT_EQ(pool.kept_bytes(), 6 * kMiB);  // rounded up to whole huge pages
  {
    BufferLease b = pool.take(3 * kMiB, 2);
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(pool.kept_bytes(), 0u);    // lent out, not kept
    BufferLease c = pool.take(1000, 1);  // the first is lent: a fresh one
    EXPECT_NE(c.data(), first);
    std::memset(c.data(), 1, 1000);
  }
  EXPECT_EQ(pool.kept_bytes(), 6 * kMiB + 1000);
  {
    BufferLease d = pool.take(100, 1);  // the smallest that fits
    EXPECT_NE(d.data(), first);
  }
}

TEST(ReceiveBuffers, NeverKeepsMoreThanTheBound) {
  ReceiveBuffers pool(5 * kMiB);
  { BufferLease a = pool.take(2 * kMiB, 1), b = pool.take(2 * kMiB, 1), c = pool.take(2 * kMiB, 1); }
  EXPECT_EQ(pool.kept_bytes(), 4 * kMiB);
  {
    BufferLease big = pool.take(8 * kMiB, 1);  // larger than the bound: used, then freed
    EXPECT_EQ(pool.kept_bytes(), 0u);          // the smaller kept ones went first
  }
  EXPECT_EQ(pool.kept_bytes(), 0u);
  ReceiveBuffers none(0);
  { BufferLease a = none.take(3000, 1); }
  EXPECT_EQ(none.kept_bytes(), 0u);
}

TEST(ReceiveBuffers, NothingAskedNothingKeptAndReleaseFreesAll) {
  ReceiveBuffers pool(16 * kMiB);
  {
    BufferLease empty = pool.take(0, 1);
    EXPECT_EQ(empty.data(), nullptr);
  }
  EXPECT_EQ(pool.kept_bytes(), 0u);
  { BufferLease a = pool.take(kMiB, 1); }
  EXPECT_EQ(pool.kept_bytes(), kMiB);
  pool.release();
  EXPECT_EQ(pool.kept_bytes(), 0u);
}

TEST(ReceiveBuffers, AMovedLeaseGivesItsBufferBackOnce) {
  ReceiveBuffers pool(16 * kMiB);
  {
    BufferLease a = pool.take(kMiB, 1);
    BufferLease b = std::move(a);
    BufferLease c;
    c = std::move(b);
    EXPECT_NE(c.data(), nullptr);
  }
  EXPECT_EQ(pool.kept_bytes(), kMiB);
}

}  // namespace
}  // namespace tandem::dist::test
