// The 32-bit keys' MSD sort plan: when it takes the keys, its scatter tiles and which
// shared-memory sort launches run.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>

#include "sort/msd_keys32_plan.hpp"

using namespace tandem::detail;

namespace {

using TopSizes = std::array<std::uint32_t, kMsdKeys32TopBuckets>;

TopSizes even(std::size_t n) {
  TopSizes t{};
  for (int b = 0; b < kMsdKeys32TopBuckets; ++b)
    t[b] = static_cast<std::uint32_t>(n / kMsdKeys32TopBuckets + (std::size_t(b) < n % kMsdKeys32TopBuckets));
  return t;
}

std::uint32_t tiles_of(std::uint64_t keys) {
  return static_cast<std::uint32_t>((keys + kMsdScatterTile - 1) / kMsdScatterTile);
}

}  // namespace

TEST(MsdKeys32Plan, DeclinesSizesOutsideItsRange) {
  const std::size_t least = kMsdKeys32MinElements;
  EXPECT_FALSE(plan_msd_keys32(least - 1, even(least - 1), 1000, 1100).use);
  EXPECT_FALSE(msd_keys32_size_ok(least - 1));
  EXPECT_TRUE(msd_keys32_size_ok(least));
  EXPECT_TRUE(msd_keys32_size_ok(0x7FFFFFFF));
  EXPECT_FALSE(msd_keys32_size_ok(std::size_t{0x80000000}));
  const auto p = plan_msd_keys32(100, even(100), 1, 1, 64);
  EXPECT_TRUE(p.use) << p.why;
  EXPECT_FALSE(plan_msd_keys32(100, even(100), 1, 1, 101).use);
}

TEST(MsdKeys32Plan, DeclinesCountsThatDoNotAddUp) {
  auto t = even(std::size_t{1} << 26);
  t[7] += 1;
  const auto p = plan_msd_keys32(std::size_t{1} << 26, t, 900, 1100);
  EXPECT_FALSE(p.use);
  EXPECT_NE(p.why.find("add up"), std::string::npos) << p.why;
}

TEST(MsdKeys32Plan, DeclinesASubBucketLargerThanABlockSorts) {
  const std::size_t n = std::size_t{1} << 26;
  EXPECT_TRUE(plan_msd_keys32(n, even(n), 1, kLowSortMax).use);
  const auto p = plan_msd_keys32(n, even(n), 1, kLowSortMax + 1);
  EXPECT_FALSE(p.use);
  EXPECT_NE(p.why.find(std::to_string(kLowSortMax + 1)), std::string::npos) << p.why;
}

TEST(MsdKeys32Plan, TilesCoverEveryKeyOnceWithinOneBucket) {
  const std::size_t n = (std::size_t{1} << 28) + 12345;
  auto t = even(n);
  // Move keys around: an empty bucket, a bucket of one tile exactly, a bucket one key over.
  t[3] += t[4];
  t[4] = 0;
  t[10] -= kMsdScatterTile * 100 - t[9] % kMsdScatterTile;
  t[9] += kMsdScatterTile * 100 - t[9] % kMsdScatterTile;  // a whole number of tiles
  const auto p = plan_msd_keys32(n, t, 3000, 5000);
  ASSERT_TRUE(p.use) << p.why;
  EXPECT_EQ(p.top.buckets, 1u);
  EXPECT_EQ(p.top.begin[0], 0u);
  EXPECT_EQ(p.top.begin[1], n);
  EXPECT_EQ(p.top.total(), tiles_of(n));
  ASSERT_EQ(p.mid.buckets, std::uint32_t(kMsdKeys32TopBuckets));
  std::uint64_t at = 0, tiles = 0;
  for (int b = 0; b < kMsdKeys32TopBuckets; ++b) {
    EXPECT_EQ(p.mid.begin[b], at) << "bucket " << b;
    EXPECT_EQ(p.mid.tiles[b], tiles) << "bucket " << b;
    at += t[b];
    tiles += tiles_of(t[b]);
  }
  EXPECT_EQ(p.mid.begin[kMsdKeys32TopBuckets], n);
  EXPECT_EQ(p.mid.total(), tiles);
  EXPECT_EQ(p.mid.tiles[5] - p.mid.tiles[4], 0u);  // the empty bucket has no tile
}

TEST(MsdKeys32Plan, RunsTheSortLaunchesThatHoldTheSizes) {
  const std::size_t n = std::size_t{1} << 28;
  auto runs = [&](std::uint32_t least, std::uint32_t most) {
    const auto p = plan_msd_keys32(n, even(n), least, most);
    EXPECT_TRUE(p.use) << p.why;
    std::string on;
    for (std::size_t c = 0; c < kLowSortClasses.size(); ++c) on += p.low[c] ? '1' : '0';
    return on;
  };
  EXPECT_EQ(runs(3848, 4390), "0001100000");  // 2^28 uniform keys: (3072, 4096] and (4096, 5120]
  EXPECT_EQ(runs(1, 1), "0000000000");        // nothing to sort
  EXPECT_EQ(runs(1, 2), "1000000000");
  EXPECT_EQ(runs(1, kLowSortMax), "1111111111");
  EXPECT_EQ(runs(1024, 1024), "1000000000");  // a class holds its upper bound
  EXPECT_EQ(runs(1025, 1025), "0100000000");
  EXPECT_EQ(runs(5121, 8192), "0000010000");
  EXPECT_EQ(runs(7000, 9000), "0000011000");  // 2^29 uniform keys
  for (std::size_t c = 0; c < kLowSortClasses.size(); ++c) {
    const auto& k = kLowSortClasses[c];
    EXPECT_EQ(k.hi, k.threads * k.items) << "class " << c;
    if (c) {
      EXPECT_EQ(k.lo, kLowSortClasses[c - 1].hi) << "class " << c;
    }
  }
}
