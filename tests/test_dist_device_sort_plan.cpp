// The pure part of the distributed device sort (src/dist/device_sort_plan.hpp): the digit that
// bins the keys, the bins each rank receives, and the rebalance to exact N/P slices. No MPI.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "dist/device_sort_plan.hpp"

namespace tandem::dist::device_sort_plan {
namespace {

TEST(DistDeviceSortPlan, DigitSitsJustBelowTheSharedPrefix) {
  const BinDigit d = bin_digit<std::uint32_t>(0x12340000u, 0x1234ffffu, 12);
  EXPECT_EQ(d.shift, 4);
  EXPECT_EQ(d.width, 12);
  EXPECT_EQ(d(0x12340000u), 0u);
  EXPECT_EQ(d(0x1234fff0u), 0xfffu);
  const BinDigit narrow = bin_digit<std::uint64_t>(8, 13, 12);  // 3 varying bits
  EXPECT_EQ(narrow.shift, 0);
  EXPECT_EQ(narrow.width, 3);
  const BinDigit one = bin_digit<std::uint64_t>(~0ull, ~0ull, 12);  // all keys equal: one bin
  EXPECT_EQ(one.width, 0);
  EXPECT_EQ(one.bins(), 1u);
  EXPECT_EQ(one(~0ull), 0u);
  const BinDigit top = bin_digit<std::uint64_t>(0, ~0ull, 12);
  EXPECT_EQ(top.shift, 52);
  EXPECT_EQ(top(~0ull), 0xfffu);
}

TEST(DistDeviceSortPlan, DigitIsMonotoneBetweenTheExtremes) {
  std::mt19937_64 rng(3);
  for (int t = 0; t < 200; ++t) {
    std::uint64_t a = rng() >> (rng() % 64), b = rng() >> (rng() % 64);
    if (a > b) std::swap(a, b);
    const BinDigit d = bin_digit(a, b, 1 + int(rng() % 16));
    std::uint64_t prev = a;
    for (int i = 0; i < 50; ++i) {
      const std::uint64_t x = a + (b - a) / 50 * std::uint64_t(i);
      EXPECT_LE(d(prev), d(x));
      prev = x;
    }
    EXPECT_LE(d(prev), d(b));
  }
}

TEST(DistDeviceSortPlan, CutsAreNearestBinBoundariesInOrder) {
  // 10 bins of 10 keys over 4 ranks: slices start at 25, 50, 75 -> boundaries 20 or 30, 50, 70 or 80.
  const std::vector<std::uint64_t> even(10, 10);
  const auto first = bin_cuts(even, 4);
  ASSERT_EQ(first.size(), 5u);
  EXPECT_EQ(first[0], 0u);
  EXPECT_EQ(first[2], 5u);
  EXPECT_EQ(first[4], 10u);
  EXPECT_TRUE(first[1] == 2u || first[1] == 3u);
  EXPECT_TRUE(first[3] == 7u || first[3] == 8u);
  // One bin holds everything: every cut lands on one of its two boundaries, in order.
  std::vector<std::uint64_t> skew(16, 0);
  skew[5] = 1000;
  const auto s = bin_cuts(skew, 8);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  for (int d = 1; d < 8; ++d) EXPECT_TRUE(s[std::size_t(d)] == 5 || s[std::size_t(d)] == 6) << d;
  // No keys at all, one bin, more ranks than bins.
  EXPECT_EQ(bin_cuts(std::vector<std::uint64_t>(4, 0), 3).back(), 4u);
  const auto many = bin_cuts(std::vector<std::uint64_t>(1, 7), 5);
  EXPECT_TRUE(std::is_sorted(many.begin(), many.end()));
  EXPECT_EQ(many.back(), 1u);
}

TEST(DistDeviceSortPlan, CutsKeepEveryRankWithinABinOfItsSlice) {
  std::mt19937_64 rng(11);
  for (int t = 0; t < 100; ++t) {
    const int p = 1 + int(rng() % 9);
    std::vector<std::uint64_t> counts(1 + rng() % 300);
    std::uint64_t largest = 0;
    for (auto& c : counts) largest = std::max(largest, c = rng() % 1000);
    const auto first = bin_cuts(counts, p);
    ASSERT_EQ(first.size(), std::size_t(p) + 1);
    ASSERT_TRUE(std::is_sorted(first.begin(), first.end()));
    const auto got = keys_per_rank(counts, first);
    const std::uint64_t n = std::accumulate(counts.begin(), counts.end(), std::uint64_t{0});
    EXPECT_EQ(std::accumulate(got.begin(), got.end(), std::uint64_t{0}), n);
    std::uint64_t at = 0;
    for (int d = 0; d < p; ++d) {  // each start within half a bin, so each size within two bins
      const std::uint64_t want = slice_start(n, d, p);
      EXPECT_LE(at > want ? at - want : want - at, largest) << "rank " << d;
      at += got[std::size_t(d)];
    }
  }
}

TEST(DistDeviceSortPlan, RebalanceMovesExactlyWhatMakesTheSlices) {
  std::mt19937_64 rng(5);
  for (int t = 0; t < 300; ++t) {
    const int p = 1 + int(rng() % 7);
    std::vector<std::uint64_t> held(static_cast<std::size_t>(p));
    for (auto& h : held) h = rng() % 4 == 0 ? 0 : rng() % 50;
    const std::uint64_t n = std::accumulate(held.begin(), held.end(), std::uint64_t{0});
    std::vector<std::vector<std::uint64_t>> send;
    bool moves = false;
    for (int r = 0; r < p; ++r) {
      const Rebalance b = rebalance(held, r);
      EXPECT_EQ(std::accumulate(b.send.begin(), b.send.end(), std::uint64_t{0}), held[std::size_t(r)]);
      EXPECT_EQ(std::accumulate(b.recv.begin(), b.recv.end(), std::uint64_t{0}),
                slice_start(n, r + 1, p) - slice_start(n, r, p));
      if (r == 0) moves = b.moves;
      EXPECT_EQ(b.moves, moves);  // every rank decides the same
      send.push_back(b.send);
    }
    bool any = false;
    for (int r = 0; r < p; ++r)
      for (int d = 0; d < p; ++d) {
        EXPECT_EQ(send[std::size_t(r)][std::size_t(d)], rebalance(held, d).recv[std::size_t(r)]);
        any |= r != d && send[std::size_t(r)][std::size_t(d)] != 0;
      }
    EXPECT_EQ(any, moves);
  }
}

}  // namespace
}  // namespace tandem::dist::device_sort_plan
