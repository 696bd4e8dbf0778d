// The pure part of choosing how dist::groupby shuffles (src/dist/groupby_plan.hpp): the sample of
// a rank's rows, the estimate of its groups from their key hashes, and the threshold. No MPI
// needed; it runs in the distributed test program beside the group-by it steers.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "dist/groupby_plan.hpp"

namespace tandem::dist {
namespace {

TEST(DistGroupByPlan, SmallTablesAreSampledWholeLargeOnesAtRandom) {
  for (const std::uint64_t n : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{7}, kGroupSample}) {
    const auto rows = sample_rows(n);
    ASSERT_EQ(rows.size(), n);
    for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i], i);
  }
  const std::uint64_t n = 100'000'000;
  const auto rows = sample_rows(n);
  ASSERT_EQ(rows.size(), kGroupSample);
  EXPECT_EQ(rows, sample_rows(n));  // the same on every call (and every rank)
  std::set<std::size_t> distinct(rows.begin(), rows.end());
  EXPECT_GT(distinct.size(), kGroupSample * 99 / 100);
  std::size_t below_half = 0;
  for (const std::size_t r : rows) {
    ASSERT_LT(r, n);
    below_half += r < n / 2;
  }
  EXPECT_NEAR(double(below_half) / double(kGroupSample), 0.5, 0.03);  // spread over the rows
}

// The hashes of a sample of `rows` rows over `groups` equally common groups.
std::vector<std::uint64_t> sample_of(std::uint64_t rows, std::uint64_t groups, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> h;
  const std::uint64_t s = std::min(rows, kGroupSample);
  for (std::uint64_t i = 0; i < s; ++i) h.push_back((rng() % groups) * 0x9e3779b97f4a7c15ULL);
  return h;
}

TEST(DistGroupByPlan, GroupsAreEstimatedFromTheSample) {
  // A sample of every row counts its groups exactly.
  EXPECT_EQ(estimate_groups({5, 5, 9, 1, 9, 9}, 6), 3u);
  EXPECT_EQ(estimate_groups({}, 0), 0u);
  // Few groups: all are seen.
  EXPECT_EQ(estimate_groups(sample_of(10'000'000, 100, 1), 10'000'000), 100u);
  // 10^5 and 10^7 groups in 10^7 rows, from 16,384 sampled rows: within a third (Chao1 sees
  // the groups seen twice).
  for (const std::uint64_t groups : {std::uint64_t{100'000}, std::uint64_t{10'000'000}}) {
    const double got = double(estimate_groups(sample_of(10'000'000, groups, 2), 10'000'000));
    EXPECT_GT(got, 0.67 * double(groups)) << groups;
    EXPECT_LE(got, 1.33 * double(groups)) << groups;
  }
  // Never more than the rows.
  EXPECT_LE(estimate_groups(sample_of(20'000, 1ull << 40, 3), 20'000), 20'000u);
}

TEST(DistGroupByPlan, RowsAreShuffledAsTheyAreFromTwoThirdsOfAGroupPerRow) {
  EXPECT_TRUE(shuffle_rows_instead(2, 3));
  EXPECT_TRUE(shuffle_rows_instead(1000, 1000));
  EXPECT_FALSE(shuffle_rows_instead(665, 1000));
  EXPECT_FALSE(shuffle_rows_instead(100, 10'000'000));
  EXPECT_FALSE(shuffle_rows_instead(0, 0));  // no rows: nothing to decide, partial groups as before
}

}  // namespace
}  // namespace tandem::dist
