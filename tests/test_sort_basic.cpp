// The sort entry points agree with std::sort in tandem's key order, on the edge cases users hit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "tandem/core/key_order.hpp"
#include "tandem/sort.hpp"

using namespace tandem;

TEST(KeyOrder, FloatTotalOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> want{-nan, -inf, -1.0f, -0.0f, 0.0f, 1e-30f, 2.0f, inf, nan};
  for (std::size_t i = 0; i + 1 < want.size(); ++i) EXPECT_TRUE(key_less(want[i], want[i + 1])) << i;
  for (float f : want) EXPECT_EQ(to_ordered(from_ordered<float>(to_ordered(f))), to_ordered(f));
  EXPECT_TRUE(key_less(-5, 3));
  EXPECT_TRUE(key_less(std::int64_t{-1}, std::int64_t{0}));
  EXPECT_EQ(from_ordered<std::int32_t>(to_ordered(std::int32_t{-7})), -7);
  EXPECT_EQ(from_ordered<double>(to_ordered(-0.0)), 0.0);
  EXPECT_TRUE(std::signbit(from_ordered<double>(to_ordered(-0.0))));
}

namespace {
template <class K>
void expect_sorted_like_std(std::vector<K> v, SortOptions o) {
  auto want = v;
  std::stable_sort(want.begin(), want.end(), [&](K a, K b) { return o.descending ? key_less(b, a) : key_less(a, b); });
  sort(std::span<K>(v), o);
  ASSERT_EQ(v.size(), want.size());
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(to_ordered(v[i]), to_ordered(want[i])) << "at " << i;
}
}  // namespace

TEST(SortBasic, EdgeSizesBothAlgorithms) {
  std::mt19937 rng(1);
  for (auto alg : {SortAlgorithm::auto_, SortAlgorithm::bitonic})
    for (std::size_t n : {0, 1, 2, 3, 7, 8, 9, 1000, 1023, 1025}) {
      std::vector<std::uint32_t> v(n);
      for (auto& x : v) x = rng() % 50;  // duplicates
      SortOptions o;
      o.algorithm = alg;
      o.device = Device::cpu;
      expect_sorted_like_std(v, o);
      o.descending = true;
      expect_sorted_like_std(v, o);
    }
}

TEST(SortBasic, FloatsWithNaNAndSignedZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> v{3, -0.0, nan, 0.0, -nan, -1, 0.0, -0.0, 1e300};
  for (auto alg : {SortAlgorithm::auto_, SortAlgorithm::bitonic}) {
    SortOptions o;
    o.algorithm = alg;
    expect_sorted_like_std(v, o);
  }
}

TEST(SortBasic, PairsAreStable) {
  for (auto alg : {SortAlgorithm::auto_, SortAlgorithm::bitonic}) {
    std::vector<std::int32_t> k{3, 1, 3, 1, 2, 3, -4};
    std::vector<std::uint32_t> v{0, 1, 2, 3, 4, 5, 6};
    SortOptions o;
    o.algorithm = alg;
    sort_pairs(std::span<std::int32_t>(k), std::span<std::uint32_t>(v), o);
    EXPECT_EQ(k, (std::vector<std::int32_t>{-4, 1, 1, 2, 3, 3, 3}));
    EXPECT_EQ(v, (std::vector<std::uint32_t>{6, 1, 3, 4, 0, 2, 5}));
  }
  std::vector<std::uint64_t> k(3);
  std::vector<std::uint64_t> v(2);
  EXPECT_ANY_THROW(sort_pairs(std::span<std::uint64_t>(k), std::span<std::uint64_t>(v)));
}
