// The CPU group-by's plan and the GPU table group-by's (pure arithmetic: codings, mixing, wrap bounds).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "groupby/cpu_plan.hpp"
#include "groupby/gpu/plan.hpp"
#include "groupby/ops/holistic.hpp"
#include "tandem/groupby.hpp"

using namespace tandem;
using cpu_groupby::plan_aggregation;

TEST(GroupByPlan, FewGroupsFoldInRowRangesThatDoNotDependOnThreads) {
  const auto one = plan_aggregation(10'000'000, 100, 24, false, 1);
  const auto many = plan_aggregation(10'000'000, 100, 24, false, 64);
  EXPECT_FALSE(one.partitioned);
  EXPECT_EQ(one.slots, many.slots);
  EXPECT_EQ(one.slot_rows, many.slot_rows);
  EXPECT_GE(one.slots * one.slot_rows, 10'000'000u);
  EXPECT_LE(one.slots, 64u);
  // Larger states: fewer slots, so all of them stay within the memory budget.
  const auto wide = plan_aggregation(10'000'000, 40'000, 88, false, 2);
  EXPECT_FALSE(wide.partitioned);
  EXPECT_LE(wide.slots * 40'000 * 88, std::size_t{64} << 20);
  EXPECT_EQ(plan_aggregation(1000, 10, 8, false, 4).slots, 1u);
}

TEST(GroupByPlan, MostSlotGroupsIsWhereRowRangesGiveWayToPartitions) {
  using cpu_groupby::most_slot_groups;
  EXPECT_EQ(most_slot_groups(24, true), 0u);  // holistic: always partitions
  for (const std::size_t state_bytes : {std::size_t{0}, std::size_t{8}, std::size_t{24}, std::size_t{88}}) {
    const std::uint64_t most = most_slot_groups(state_bytes, false);
    ASSERT_GT(most, 0u);
    EXPECT_FALSE(plan_aggregation(10'000'000, most, state_bytes, false, 4).partitioned) << state_bytes;
    EXPECT_TRUE(plan_aggregation(10'000'000, most + 1, state_bytes, false, 4).partitioned) << state_bytes;
  }
}

TEST(GroupByPlan, ManyGroupsOrHolisticAggregationsPartitionTheGroupIds) {
  for (const std::uint64_t groups : {1ull, 7ull, 100ull, 1'000'000ull, 10'000'000ull, (1ull << 31) - 5}) {
    for (const bool holistic : {false, true}) {
      const auto p = plan_aggregation(10'000'000, groups, holistic ? 8 : 4096, holistic, 2);
      if (!p.partitioned) continue;
      EXPECT_GE(p.partitions << p.partition_shift, groups) << groups;        // every group id has a partition
      EXPECT_LT((p.partitions - 1) << p.partition_shift, groups) << groups;  // and no partition is empty of ids
      EXPECT_LE(p.partitions, 4096u);
    }
  }
  EXPECT_TRUE(plan_aggregation(100, 3, 8, true, 2).partitioned);
}

TEST(GpuGroupByPlan, IntegerKeysAreOffsetsWhileTheirRangeIsSmallElseRanked) {
  using gpu_groupby::KeyCoding;
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::i32, 10, 110, 1000), KeyCoding::range);
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::u64, 0, 1u << 19, 10), KeyCoding::range);  // small ranges always
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::i64, 0, std::uint64_t{1} << 40, 1000), KeyCoding::ranked);
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::u32, 0, 3'999'999, 1'000'000), KeyCoding::range);
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::u32, 0, 5'000'000, 1'000'000), KeyCoding::ranked);
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::f64, 0, 1, 1000), KeyCoding::ranked);
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::str, 0, 0, 1000), KeyCoding::dictionary);
  EXPECT_EQ(gpu_groupby::choose_coding(ColumnType::i32, 1, 0, 1000), KeyCoding::ranked);  // no present value
}

TEST(GpuGroupByPlan, MixedRadixNumbersStayBelowTwoToThe64) {
  EXPECT_TRUE(gpu_groupby::fits_mixed(1, ~std::uint64_t{0}));
  EXPECT_TRUE(gpu_groupby::fits_mixed(std::uint64_t{1} << 32, (std::uint64_t{1} << 32) - 1));
  EXPECT_FALSE(gpu_groupby::fits_mixed(std::uint64_t{1} << 32, std::uint64_t{1} << 32));
  // The db-benchmark's q10 at 10^8 rows: id1..id5 fit (10^14), id6 (10^6 more) does not.
  EXPECT_TRUE(gpu_groupby::fits_mixed(100ull * 100 * 1'000'000 * 100, 100));
  EXPECT_FALSE(gpu_groupby::fits_mixed(100ull * 100 * 1'000'000 * 100 * 100, 1'000'000));
  EXPECT_EQ(gpu_groupby::bits_for(1), 1);
  EXPECT_EQ(gpu_groupby::bits_for(2), 1);
  EXPECT_EQ(gpu_groupby::bits_for(3), 2);
  EXPECT_EQ(gpu_groupby::bits_for(std::uint64_t{1} << 40), 40);
  EXPECT_EQ(gpu_groupby::bits_for((std::uint64_t{1} << 40) + 1), 41);
  EXPECT_EQ(gpu_groupby::direct_limit(10), std::uint64_t{1} << 16);
  EXPECT_EQ(gpu_groupby::direct_limit(1'000'000), 4'000'000u);
  EXPECT_EQ(gpu_groupby::direct_limit(100'000'000), std::uint64_t{1} << 26);
}

TEST(GpuGroupByPlan, SixtyFourBitSumsThatMayWrapAreFlagged) {
  using gpu_groupby::sum_may_wrap;
  EXPECT_FALSE(sum_may_wrap(true, -5, 5, 1'000'000));
  EXPECT_FALSE(sum_may_wrap(true, 0, std::int64_t{1} << 40, std::uint64_t{1} << 22));
  EXPECT_TRUE(sum_may_wrap(true, 0, std::int64_t{1} << 40, std::uint64_t{1} << 23));
  EXPECT_TRUE(sum_may_wrap(true, std::numeric_limits<std::int64_t>::min(), 0, 1));
  EXPECT_FALSE(
      sum_may_wrap(true, std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max(), 1));
  EXPECT_TRUE(
      sum_may_wrap(true, std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max(), 2));
  EXPECT_FALSE(gpu_groupby::sum_may_wrap_unsigned(~std::uint64_t{0}, 1));
  EXPECT_TRUE(gpu_groupby::sum_may_wrap_unsigned(~std::uint64_t{0}, 2));
  EXPECT_FALSE(gpu_groupby::sum_may_wrap_unsigned(std::uint64_t{1} << 62, 3));
  EXPECT_TRUE(gpu_groupby::sum_may_wrap_unsigned(std::uint64_t{1} << 62, 4));
}

TEST(GpuGroupByPlan, QuantilePositionsInterpolateBetweenNeighbours) {
  const auto p = agg::quantile_position(5, 0.5);
  EXPECT_EQ(p.lo, 2u);
  EXPECT_EQ(p.frac, 0.0);
  const auto q = agg::quantile_position(4, 0.5);
  EXPECT_EQ(q.lo, 1u);
  EXPECT_DOUBLE_EQ(q.frac, 0.5);
  EXPECT_EQ(agg::quantile_position(4, 1.0).lo, 3u);
  EXPECT_EQ(agg::quantile_position(1, 0.9).lo, 0u);
  EXPECT_DOUBLE_EQ(agg::interpolate(1.0, 3.0, 0.25), 1.5);
  EXPECT_EQ(agg::interpolate(2.0, NAN, 0.0), 2.0);
}
