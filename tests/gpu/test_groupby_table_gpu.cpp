// tandem::groupby on the GPU (device gpu and auto, and on a DeviceTable uploaded once) against the
// plain reference: random tables of 1-6 key columns of every type with missing keys and values,
// every aggregation on every type it accepts, the shared-memory and global per-group tables,
// direct and ranked group ids (and a key combination past 64 bits), 64-bit sums that may have
// wrapped, two host threads at once; results left on the device (groupby_on_device) equal the
// host ones, group again, outlive their input and download once for several threads.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "groupby_reference.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/device_table.hpp"
#include "test_util.hpp"

using namespace groupby_test;

namespace {

void expect_gpu_reference(const Table& t, const GroupBySpec& spec, const std::string& what) {
  const auto r = groupby(t, spec, {Device::gpu});
  EXPECT_NE(r.report.explain().find("GPU engine"), std::string::npos) << what << "\n" << r.report.explain();
  expect_matches(r.table, reference_groupby(t, spec), what);
  const auto cpu = groupby(t, spec, {Device::cpu});
  ASSERT_EQ(r.table.num_columns(), cpu.table.num_columns()) << what;
  for (std::size_t c = 0; c < cpu.table.num_columns(); ++c) {
    EXPECT_EQ(r.table.column(c).name, cpu.table.column(c).name) << what;
    EXPECT_EQ(r.table.column(c).type, cpu.table.column(c).type) << what << ": " << cpu.table.column(c).name;
  }
  const DeviceTable on_gpu(t);
  const auto d = groupby_on_device(on_gpu, spec);
  EXPECT_EQ(d.table.rows(), r.table.rows()) << what;
  expect_matches(d.table.host(), reference_groupby(t, spec), what + ", result on the device");
}

}  // namespace

TEST(GroupByTableGpu, RandomTablesMatchTheReference) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(17);
  const std::size_t sizes[] = {1, 2, 7, 100, 1000, 3000, 5000};  // 64-bit sums stay in range
  for (int round = 0; round < 30; ++round) {
    const std::size_t rows = sizes[rng() % 7], keys = 1 + rng() % 6;
    const Table t = random_table(rng, rows, keys, round % 2 ? 0.15 : 0.0);
    expect_gpu_reference(t, spec_of(t, random_aggregations(rng, t, 0.3)), "round " + std::to_string(round));
  }
}

TEST(GroupByTableGpu, EveryAggregationOnEveryTypeItAccepts) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(11);
  for (std::size_t keys : {1, 2, 3}) {
    const Table t = random_table(rng, 5000, keys, 0.1);
    expect_gpu_reference(t, spec_of(t, random_aggregations(rng, t, 1.0)), std::to_string(keys) + " keys");
  }
}

TEST(GroupByTableGpu, ManyGroupsTakeTheGlobalTablesAndWideKeysAreRanked) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(5);
  // ~50K groups: past the shared-memory tables; wide integers: ranked, not offsets.
  Table t = many_groups_table(rng, 200000);
  t.add(random_column(rng, "v_str", ColumnType::str, 200000, 30, 0.1));
  const auto spec = spec_of(t, random_aggregations(rng, t, 1.0));
  const auto r = groupby(t, spec, {Device::gpu});
  EXPECT_NE(r.report.explain().find("ranks among"), std::string::npos) << r.report.explain();
  expect_gpu_reference(t, spec, "many groups");
  // Five columns of ~44K distinct wide integers: their codes pass 64 bits when combined, so the
  // first four are ranked before the fifth joins, and the result is ranked again.
  Table w;
  for (int k = 0; k < 5; ++k) w.add(random_column(rng, fmt::format("k{}", k), ColumnType::i64, 70000, 65000, 0.0));
  w.add(random_column(rng, "v_f64", ColumnType::f64, 70000, 1000, 0.0));
  const GroupBySpec wide = spec_of(w, {aggregation(AggOp::count_rows), aggregation(AggOp::sum, "v_f64"),
                                       aggregation(AggOp::median, "v_f64"), aggregation(AggOp::last, "v_f64")});
  const auto rw = groupby(w, wide, {Device::gpu});
  EXPECT_NE(rw.report.explain().find("2 ranking pass"), std::string::npos) << rw.report.explain();
  expect_matches(rw.table, reference_groupby(w, wide), "wide keys");
}

TEST(GroupByTableGpu, ADeviceTableServesManyGroupBys) {
  TANDEM_REQUIRE_GPU();
  const Table data = generate_groupby_table({.rows = 300000, .k = 20, .nas_percent = 5});
  const DeviceTable on_gpu(data, {"id1", "id2", "id3", "id4", "id6", "v1", "v3"});
  EXPECT_EQ(on_gpu.rows(), data.rows());
  EXPECT_GT(on_gpu.device_bytes(), 0u);
  for (const auto& [by, aggs] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"id1"}, "sum(v1)"},
           {{"id1", "id2"}, "sum(v1),count()"},
           {{"id3"}, "sum(v1),mean(v3)"},
           {{"id4"}, "median(v3),std(v3)"},
           {{"id6"}, "top(v3,2),max(v1),min(v1)"},
           {{"id4"}, "top(v3,6),quantile(v3,0.9),top(v1,3)"},
           {{"id1", "id2", "id3", "id4", "id6"}, "sum(v3),count(),nunique(v1),first(id3),last(v3)"}}) {
    const GroupBySpec spec{by, parse_aggregations(aggs)};
    const auto r = groupby(on_gpu, spec);
    expect_matches(r.table, reference_groupby(data, spec), aggs);
  }
  EXPECT_THROW((void)groupby(on_gpu, {{"id5"}, parse_aggregations("count()")}), UsageError);
  const auto cpu = groupby(on_gpu, {{"id1"}, parse_aggregations("sum(v1)")}, {Device::cpu});
  EXPECT_NE(cpu.report.explain().find("CPU engine"), std::string::npos);
}

TEST(GroupByTableGpu, AutoTakesTheGpuWhereTheUploadPaysOff) {
  TANDEM_REQUIRE_GPU();
  const Table data = generate_groupby_table({.rows = 200000, .k = 10});
  const GroupBySpec holistic{{"id4", "id5"}, parse_aggregations("median(v3),sum(v1)")};
  const auto r = groupby(data, holistic, {Device::auto_});
  EXPECT_NE(r.report.explain().find("GPU engine"), std::string::npos) << r.report.explain();
  expect_matches(r.table, reference_groupby(data, holistic), "auto, holistic");
  const GroupBySpec strings{{"id2", "id4"}, parse_aggregations("sum(v1),mean(v3)")};
  const auto c = groupby(data, strings, {Device::auto_});
  EXPECT_NE(c.report.explain().find("uploads once"), std::string::npos) << c.report.explain();
  expect_matches(c.table, reference_groupby(data, strings), "auto, strings");
  Table tiny;
  tiny.add(make_column<std::int32_t>("k", {1, 2, 1}));
  const auto small = groupby(tiny, {{"k"}, parse_aggregations("count()")}, {Device::auto_});
  EXPECT_NE(small.report.explain().find("below 1 MiB"), std::string::npos) << small.report.explain();
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
  std::mt19937_64 rng(2);
  const Table a = random_table(rng, 5000, 2, 0.05), b = random_table(rng, 4000, 3, 0.0);
  const GroupBySpec sa = spec_of(a, random_aggregations(rng, a, 0.5)),
                    sb = spec_of(b, random_aggregations(rng, b, 0.5));
  Table got_a, got_b;
  std::thread ta([&] { got_a = groupby(a, sa, {Device::gpu}).table; });
  std::thread tb([&] { got_b = groupby(b, sb, {Device::gpu}).table; });
  ta.join();
  tb.join();
  expect_matches(got_a, reference_groupby(a, sa), "first");
  expect_matches(got_b, reference_groupby(b, sb), "second");
  // Two threads on one device table (read-only columns, each call its own stream and buffers).
  const DeviceTable shared(a);
  const GroupBySpec other = spec_of(a, random_aggregations(rng, a, 0.5));
  std::thread t1([&] { got_a = groupby(shared, sa).table; });
  std::thread t2([&] { got_b = groupby(shared, other).table; });
  t1.join();
  t2.join();
  expect_matches(got_a, reference_groupby(a, sa), "shared table, first");
  expect_matches(got_b, reference_groupby(a, other), "shared table, second");
}

TEST(GroupByTableGpu, ResultsOnTheDeviceGroupAgainAndOutliveTheirInput) {
  TANDEM_REQUIRE_GPU();
  const Table data = generate_groupby_table({.rows = 200000, .k = 30, .nas_percent = 3});
  std::optional<DeviceGroupByResult> fine;
  {
    const DeviceTable on_gpu(data, {"id1", "id2", "id4", "v1", "v3"});
    fine.emplace(groupby_on_device(on_gpu, {{"id1", "id2", "id4"}, parse_aggregations("sum(v1),max(v3),min(id2)")}));
  }  // the input is gone: the result keeps the dictionaries its string columns need
  EXPECT_EQ(fine->table.schema().column("id1").type, ColumnType::str);
  EXPECT_EQ(fine->table.schema().column("min_id2").type, ColumnType::str);
  const GroupBySpec again{{"id1"}, parse_aggregations("sum(sum_v1),max(max_v3),count(),min(min_id2)")};
  const auto coarse = groupby_on_device(fine->table, again);
  const GroupBySpec direct{{"id1"}, parse_aggregations("sum(v1),max(v3),min(id2)")};
  const Table want = groupby(data, direct, {Device::cpu}).table;  // the CPU engine, tested against the reference
  const Table& got = coarse.table.host();
  ASSERT_EQ(got.rows(), want.rows());
  for (std::size_t i = 0; i < got.rows(); ++i) {
    EXPECT_EQ(got.column("id1").string(i), want.column("id1").string(i)) << i;
    EXPECT_EQ(got.column("min_min_id2").string(i), want.column("min_id2").string(i)) << i;
    EXPECT_EQ(got.column("max_max_v3").numbers<double>()[i], want.column("max_v3").numbers<double>()[i]) << i;
    EXPECT_EQ(got.column("sum_sum_v1").present(i), want.column("sum_v1").present(i)) << i;
    if (want.column("sum_v1").present(i)) {
      EXPECT_EQ(got.column("sum_sum_v1").numbers<std::int64_t>()[i], want.column("sum_v1").numbers<std::int64_t>()[i]);
    }
  }
  // Several threads ask for one result's host copy: it is downloaded once, the same for all.
  const auto shared = groupby_on_device(DeviceTable(data, {"id3", "v3"}), {{"id3"}, parse_aggregations("mean(v3)")});
  std::vector<const Table*> seen(4);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < seen.size(); ++k) threads.emplace_back([&, k] { seen[k] = &shared.table.host(); });
  for (auto& t : threads) t.join();
  for (const Table* t : seen) EXPECT_EQ(t, seen[0]);
  expect_matches(*seen[0], reference_groupby(data, {{"id3"}, parse_aggregations("mean(v3)")}), "mean by id3");
  EXPECT_THROW((void)groupby_on_device(fine->table, again, {Device::cpu}), UsageError);
}

TEST(GroupByTableGpu, ResultsOnTheDeviceOfEmptyTablesAndWrappingSums) {
  TANDEM_REQUIRE_GPU();
  Table empty;
  empty.add(make_column<std::int32_t>("k", {}));
  empty.add(make_column<double>("v", {}));
  const auto e = groupby_on_device(DeviceTable(empty), {{"k"}, parse_aggregations("sum(v),count()")});
  EXPECT_EQ(e.table.rows(), 0u);
  EXPECT_EQ(e.table.host().num_columns(), 3u);
  Table t;
  t.add(make_column<std::int64_t>("k", {1, 1, 1, 2}));
  t.add(make_column<std::int64_t>("v", {INT64_MAX, 1, -1, 5}));
  const auto w = groupby_on_device(DeviceTable(t), {{"k"}, parse_aggregations("sum(v)")});
  EXPECT_EQ(w.table.host().column("sum_v").numbers<std::int64_t>()[0], INT64_MAX);
  EXPECT_NE(w.report.explain().find("rerun on the CPU"), std::string::npos) << w.report.explain();
}

TEST(GroupByTableGpu, BorrowedDeviceColumnsAndColumnViews) {
  TANDEM_REQUIRE_GPU();
  std::mt19937_64 rng(9);
  const std::size_t n = 50000;
  std::vector<std::int32_t> a(n), b(n);
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<std::int32_t>(rng() % 40);
    b[i] = static_cast<std::int32_t>(rng() % 7) - 3;
    v[i] = double(rng() % 1000) / 8.0;
  }
  a[0] = 999;  // a group of one row, whose v is missing: var and the top three are missing
  // Every fifth v missing: a device bitmap borrowed with the values.
  std::vector<std::uint8_t> valid((n + 7) / 8, 0);
  for (std::size_t i = 0; i < n; ++i)
    if (i % 5) valid[i / 8] |= static_cast<std::uint8_t>(1u << (i % 8));
  auto to_gpu = [](const auto& host) {
    using T = typename std::decay_t<decltype(host)>::value_type;
    auto d = std::make_shared<tandem::gpu::DeviceBuffer<T>>(host.size());
    TANDEM_CUDA(cudaMemcpy(d->data(), host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
  };
  auto da = to_gpu(a), db = to_gpu(b);
  auto dv = to_gpu(v);
  auto dvalid = to_gpu(valid);
  const DeviceTable t = DeviceTable::borrow({{"a", ColumnType::i32, da->data(), nullptr, 0, da},
                                             {"b", ColumnType::i32, db->data(), nullptr, 0, db},
                                             {"v", ColumnType::f64, dv->data(), dvalid->data(), 0,
                                              std::make_shared<std::pair<decltype(dv), decltype(dvalid)>>(dv, dvalid)}},
                                            n);
  EXPECT_EQ(t.device_bytes(), 0u);
  Table host;
  host.add(make_column<std::int32_t>("a", a));
  host.add(make_column<std::int32_t>("b", b));
  Column hv = make_column<double>("v", v);
  hv.validity = Buffer::take(valid);
  host.add(hv);
  const GroupBySpec spec{{"a", "b"}, parse_aggregations("count(),sum(v),median(v),top(v,3),var(v)")};
  const auto r = groupby_on_device(t, spec);
  expect_matches(r.table.host(), reference_groupby(host, spec), "borrowed columns");
  // A result column's device memory, as a caller reads it in place.
  const DeviceColumnView count = r.table.column_view("count");
  EXPECT_EQ(count.type, ColumnType::i64);
  EXPECT_EQ(count.validity, nullptr);
  std::vector<std::int64_t> counts(r.table.rows());
  TANDEM_CUDA(cudaMemcpy(counts.data(), count.data, counts.size() * sizeof(std::int64_t), cudaMemcpyDeviceToHost));
  const auto want = r.table.host().column("count").numbers<std::int64_t>();
  EXPECT_TRUE(std::equal(counts.begin(), counts.end(), want.begin()));
  EXPECT_GT(r.table.column_view("var_v").missing + r.table.column_view("top3_v").missing, 0u);
  EXPECT_THROW((void)r.table.column_view("nope"), UsageError);
  EXPECT_THROW((void)DeviceTable::borrow({{"a", ColumnType::str, da->data(), nullptr, 0, da}}, n), UsageError);
  EXPECT_THROW((void)DeviceTable::borrow({{"a", ColumnType::i32, nullptr, nullptr, 0, {}}}, n), UsageError);
}
