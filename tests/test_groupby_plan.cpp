// The CPU group-by's plan (pure arithmetic) and which group-bys the GPU route takes.
#include <gtest/gtest.h>

#include "groupby/cpu_plan.hpp"
#include "groupby/gpu_route.hpp"
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

TEST(GroupByGpuRoute, TakesOneIntegerKeyAndTheFiveSimpleAggregationsOfOneColumn) {
  Table t;
  t.add(make_column<std::uint32_t>("k", {1, 2}));
  t.add(make_column<double>("v", {1, 2}));
  t.add(make_column<float>("w", {1, 2}));
  t.add(make_column<std::uint64_t>("u", {1, 2}));
  t.add(make_string_column("s", {"a", "b"}));
  t.add(make_column<std::int32_t>("m", {1, 2}, make_validity(2, [](std::size_t i) { return i == 0; })));
  EXPECT_FALSE(gpu_route::gap(t, {{"k"}, parse_aggregations("count(),sum(v),min(v),max(v),mean(v),count(v)")}));
  EXPECT_FALSE(gpu_route::gap(t, {{"k"}, parse_aggregations("count()")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"k", "m"}, parse_aggregations("count()")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"s"}, parse_aggregations("count()")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"v"}, parse_aggregations("count()")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"m"}, parse_aggregations("count()")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"k"}, parse_aggregations("median(v)")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"k"}, parse_aggregations("sum(v),sum(w)")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"k"}, parse_aggregations("sum(u)")}));
  EXPECT_TRUE(gpu_route::gap(t, {{"k"}, parse_aggregations("sum(m)")}));
  const auto why = gpu_route::gap(t, {{"k"}, parse_aggregations("sum(v),std(v)")});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("std(v)"), std::string::npos) << *why;
}
