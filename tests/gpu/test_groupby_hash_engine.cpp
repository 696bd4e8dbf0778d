// The table group-by on the GPU hash engine (GroupByOptions::gpu_engine, src/groupby/hash/):
// one integer key of every width and sign, counts and the decomposable aggregations of one f64 or
// i64 column (NaN, -0.0, infinities), small key ranges (the dense-range path) and wide ones (the
// hash table), a key holding most rows, one row, a job large enough to be tuned; equal to the
// plain reference and to the table engine; auto takes it for counts only and says so; asking
// for it where it does not apply is a UsageError saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "groupby_reference.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/device_table.hpp"
#include "test_util.hpp"

using namespace groupby_test;

namespace {

GroupByOptions engine(GpuGroupByEngine e) {
  GroupByOptions o;
  o.device = Device::gpu;
  o.gpu_engine = e;
  return o;
}

// A key column of `type` over `distinct` values (a share `hot` of the rows on one of them),
// starting at `base` (negative keys for signed types).
Column key_column(std::mt19937_64& rng, ColumnType type, std::size_t rows, std::uint64_t distinct, double hot,
                  std::int64_t base, std::uint64_t stride) {
  std::uniform_real_distribution<double> unit(0, 1);
  ColumnBuilder b("k", type, rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint64_t j = unit(rng) < hot ? 0 : rng() % distinct;
    const std::int64_t k = base + static_cast<std::int64_t>(j * stride);
    switch (type) {
      case ColumnType::i32: b.push(static_cast<std::int32_t>(k)); break;
      case ColumnType::u32: b.push(static_cast<std::uint32_t>(k)); break;
      case ColumnType::i64: b.push(k); break;
      default: b.push(static_cast<std::uint64_t>(k)); break;
    }
  }
  return b.finish();
}

void expect_hash_engine(const Table& t, const GroupBySpec& spec, const std::string& what) {
  const DeviceTable on_gpu(t);
  const auto hash = groupby(on_gpu, spec, engine(GpuGroupByEngine::hash));
  EXPECT_NE(hash.report.explain().find("GPU hash engine"), std::string::npos) << what << "\n" << hash.report.explain();
  // auto takes the hash engine for counts only.
  const bool counts =
      std::all_of(spec.aggs.begin(), spec.aggs.end(), [](const Aggregation& a) { return a.op == AggOp::count_rows; });
  const auto picked = groupby(on_gpu, spec, engine(GpuGroupByEngine::auto_));
  EXPECT_NE(picked.report.explain().find(counts ? "GPU hash engine" : "GPU table engine"), std::string::npos)
      << what << "\n"
      << picked.report.explain();
  expect_matches(hash.table, reference_groupby(t, spec), what + ", hash engine");
  const auto table = groupby(on_gpu, spec, engine(GpuGroupByEngine::table));
  EXPECT_NE(table.report.explain().find("GPU table engine"), std::string::npos) << table.report.explain();
  ASSERT_EQ(hash.table.num_columns(), table.table.num_columns()) << what;
  for (std::size_t c = 0; c < table.table.num_columns(); ++c) {
    EXPECT_EQ(hash.table.column(c).name, table.table.column(c).name) << what;
    EXPECT_EQ(hash.table.column(c).type, table.table.column(c).type) << what << ": " << table.table.column(c).name;
  }
  const auto d = groupby_on_device(on_gpu, spec, engine(GpuGroupByEngine::hash));
  expect_matches(d.table.host(), reference_groupby(t, spec), what + ", result on the device");
}

GroupBySpec decomposable(const Table& t, const std::string& value) {
  return spec_of(t,
                 {aggregation(AggOp::count_rows), aggregation(AggOp::sum, value), aggregation(AggOp::min, value),
                  aggregation(AggOp::max, value), aggregation(AggOp::mean, value), aggregation(AggOp::count, value)});
}

}  // namespace

TEST(GroupByHashEngineGpu, EveryKeyTypeSmallAndWideRangesAndSkew) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(23);
  struct Case {
    ColumnType type;
    std::uint64_t distinct;
    double hot;
    std::int64_t base;
    std::uint64_t stride;
  };
  const Case cases[] = {
      {ColumnType::i32, 100, 0.0, -50, 1},                                 // dense range across zero
      {ColumnType::i32, 5000, 0.5, -2000000000, 800000},                   // wide, signed, skewed
      {ColumnType::u32, 1000, 0.0, 4000000000LL, 1},                       // near the top of u32
      {ColumnType::u32, 70000, 0.9, 0, 61057},                             // wide, 90% on one key
      {ColumnType::i64, 300, 0.0, -(std::int64_t{1} << 40), 1},            // dense, far from zero
      {ColumnType::i64, 60000, 0.0, -(std::int64_t{1} << 59), 1LL << 44},  // spans the sign change
      {ColumnType::u64, 20000, 0.3, 0, 0x9E3779B97F4A7C15ull >> 20},
  };
  int i = 0;
  for (const auto& c : cases) {
    const std::size_t rows = i % 2 ? 200000 : 30001;
    Table t;
    t.add(key_column(rng, c.type, rows, c.distinct, c.hot, c.base, c.stride));
    t.add(random_column(rng, "v_f64", ColumnType::f64, rows, 400, 0.0));
    t.add(random_column(rng, "v_i64", ColumnType::i64, rows, 400, 0.0));
    const std::string what = "case " + std::to_string(i++);
    expect_hash_engine(t, decomposable(t, "v_f64"), what + " f64");
    expect_hash_engine(t, decomposable(t, "v_i64"), what + " i64");
    expect_hash_engine(t, spec_of(t, {aggregation(AggOp::count_rows)}), what + " counts");
  }
}

TEST(GroupByHashEngineGpu, OneRowOneGroupAndATunedJob) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(29);
  for (std::size_t rows : {std::size_t{1}, std::size_t{2}, std::size_t{5} << 20}) {
    Table t;
    t.add(key_column(rng, ColumnType::i64, rows, rows == 2 ? 1 : 1 << 20, 0.0, -7, 3));
    t.add(random_column(rng, "v_f64", ColumnType::f64, rows, 1000, 0.0));
    expect_hash_engine(t, decomposable(t, "v_f64"), std::to_string(rows) + " rows");
  }
}

TEST(GroupByHashEngineGpu, AutoTakesTheTableEngineWhereTheHashEngineDoesNotApply) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(31);
  Table t;
  t.add(key_column(rng, ColumnType::i32, 5000, 50, 0.0, 0, 1));
  t.add(random_column(rng, "v_f64", ColumnType::f64, 5000, 100, 0.1));  // missing values
  t.add(random_column(rng, "v_i64", ColumnType::i64, 5000, 100, 0.0));
  const DeviceTable on_gpu(t);
  for (const auto& spec : {decomposable(t, "v_f64"), spec_of(t, {aggregation(AggOp::median, "v_i64")}),
                           spec_of(t, {aggregation(AggOp::sum, "v_i64"), aggregation(AggOp::sum, "v_f64")})}) {
    const auto r = groupby(on_gpu, spec);
    EXPECT_NE(r.report.explain().find("GPU table engine"), std::string::npos) << r.report.explain();
    expect_matches(r.table, reference_groupby(t, spec), "table engine");
    try {
      (void)groupby(on_gpu, spec, engine(GpuGroupByEngine::hash));
      ADD_FAILURE() << "the hash engine was asked for where it does not apply";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("does not apply"), std::string::npos) << e.what();
    }
  }
}

TEST(GroupByHashEngineGpu, SixtyFourBitSumsThatMayWrapRerunOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  Table t;
  t.add(make_column<std::int32_t>("k", {1, 1, 2, 2}));
  t.add(make_column<std::int64_t>("v_i64", {std::int64_t{1} << 62, std::int64_t{1} << 62, -5, 7}));
  const auto spec = spec_of(t, {aggregation(AggOp::sum, "v_i64")});
  EXPECT_THROW((void)groupby(DeviceTable(t), spec, engine(GpuGroupByEngine::hash)), InputError);
  t = Table();
  t.add(make_column<std::int32_t>("k", {1, 1, 2}));
  t.add(make_column<std::int64_t>("v_i64", {std::int64_t{1} << 62, -(std::int64_t{1} << 62), 7}));
  const auto r = groupby(DeviceTable(t), spec, engine(GpuGroupByEngine::hash));
  EXPECT_NE(r.report.explain().find("rerun on the CPU"), std::string::npos) << r.report.explain();
  expect_matches(r.table, reference_groupby(t, spec), "sums near 2^63");
}
