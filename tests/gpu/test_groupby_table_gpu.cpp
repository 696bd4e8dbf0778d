// tandem::groupby with device gpu and auto: the group-bys the GPU hash group-by covers (one
// integer key, count/sum/min/max/mean of one column) against the CPU engine; what it does not
// cover is a UsageError naming the part; 64-bit sums that may have wrapped rerun on the CPU;
// two host threads at once.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "groupby_reference.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "test_util.hpp"

using namespace groupby_test;

namespace {

template <class K, class V>
Table key_value_table(std::size_t n, std::uint64_t distinct, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<K> k(n);
  std::vector<V> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    k[i] = static_cast<K>(rng() % distinct) - static_cast<K>(std::is_signed_v<K> ? distinct / 2 : 0);
    v[i] = static_cast<V>(static_cast<std::int64_t>(rng() % 2001) - 1000) /
           static_cast<V>(std::is_floating_point_v<V> ? 8 : 1);
  }
  Table t;
  t.add(make_column("k", std::move(k)));
  t.add(make_column("v", std::move(v)));
  return t;
}

GroupBySpec all_five() { return {{"k"}, parse_aggregations("count(),sum(v),min(v),max(v),mean(v),count(v)")}; }

template <class K, class V>
void expect_gpu_matches_cpu(std::size_t n, std::uint64_t distinct) {
  const Table t = key_value_table<K, V>(n, distinct, n + distinct);
  const auto gpu = groupby(t, all_five(), {Device::gpu});
  EXPECT_NE(gpu.report.explain().find("GPU hash group-by"), std::string::npos) << gpu.report.explain();
  const auto cpu = groupby(t, all_five(), {Device::cpu});
  expect_matches(gpu.table, reference_groupby(t, all_five()), "gpu vs reference");
  ASSERT_EQ(gpu.table.num_columns(), cpu.table.num_columns());
  for (std::size_t c = 0; c < cpu.table.num_columns(); ++c) {
    EXPECT_EQ(gpu.table.column(c).name, cpu.table.column(c).name);
    EXPECT_EQ(gpu.table.column(c).type, cpu.table.column(c).type) << cpu.table.column(c).name;
  }
}

}  // namespace

TEST(GroupByTableGpu, CoveredGroupBysMatchTheCpuEngine) {
  TANDEM_REQUIRE_GPU();
  expect_gpu_matches_cpu<std::uint32_t, double>(1 << 20, 1000);
  expect_gpu_matches_cpu<std::int32_t, float>(1 << 18, 100000);
  expect_gpu_matches_cpu<std::uint64_t, std::int32_t>(1 << 20, 64);
  expect_gpu_matches_cpu<std::int64_t, std::int64_t>(100000, 100000);
  expect_gpu_matches_cpu<std::uint32_t, double>(1, 1);
}

TEST(GroupByTableGpu, UncoveredPartsAreUsageErrorsOnGpuAndCpuRunsOnAuto) {
  TANDEM_REQUIRE_GPU();
  const Table t = key_value_table<std::uint32_t, double>(1 << 20, 1000, 1);
  for (const char* aggs : {"median(v)", "std(v)", "sum(v),nunique(v)"}) {
    try {
      (void)groupby(t, {{"k"}, parse_aggregations(aggs)}, {Device::gpu});
      FAIL() << aggs << ": no error";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("does not cover"), std::string::npos) << e.what();
    }
    const auto r = groupby(t, {{"k"}, parse_aggregations(aggs)}, {Device::auto_});
    EXPECT_NE(r.report.explain().find("CPU engine"), std::string::npos) << r.report.explain();
  }
  EXPECT_THROW((void)groupby(t, {{"k", "v"}, parse_aggregations("count()")}, {Device::gpu}), UsageError);
  const auto r = groupby(t, all_five(), {Device::auto_});
  EXPECT_NE(r.report.explain().find("GPU hash group-by"), std::string::npos) << r.report.explain();
}

TEST(GroupByTableGpu, SixtyFourBitSumsThatMayWrapRerunOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  Table t;
  t.add(make_column<std::int64_t>("k", {1, 1, 1, 2}));
  t.add(make_column<std::int64_t>("v", {INT64_MAX, 1, -1, 5}));  // group 1 passes INT64_MAX and comes back
  const auto r = groupby(t, {{"k"}, parse_aggregations("sum(v)")}, {Device::gpu});
  EXPECT_EQ(r.table.column("sum_v").numbers<std::int64_t>()[0], INT64_MAX);
  EXPECT_NE(r.report.explain().find("rerun on the CPU"), std::string::npos) << r.report.explain();
  Table over;
  over.add(make_column<std::int64_t>("k", {1, 1}));
  over.add(make_column<std::int64_t>("v", {INT64_MAX, 1}));
  EXPECT_THROW((void)groupby(over, {{"k"}, parse_aggregations("sum(v)")}, {Device::gpu}), InputError);
}

TEST(GroupByTableGpu, TwoHostThreadsAtOnce) {
  TANDEM_REQUIRE_GPU();
  const Table a = key_value_table<std::uint32_t, double>(1 << 20, 5000, 2),
              b = key_value_table<std::int64_t, std::int32_t>(1 << 19, 300, 3);
  const Table want_a = groupby(a, all_five(), {Device::cpu}).table,
              want_b = groupby(b, all_five(), {Device::cpu}).table;
  Table got_a, got_b;
  std::thread ta([&] { got_a = groupby(a, all_five(), {Device::gpu}).table; });
  std::thread tb([&] { got_b = groupby(b, all_five(), {Device::gpu}).table; });
  ta.join();
  tb.join();
  expect_matches(got_a, reference_groupby(a, all_five()), "first");
  expect_matches(got_b, reference_groupby(b, all_five()), "second");
}
