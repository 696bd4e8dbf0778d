// tandem::groupby on tables against the plain reference (groupby_reference.hpp): random tables
// of mixed key and value types, the edge cases, thread counts, concurrent calls and errors.
#include <algorithm>
#include <limits>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "groupby/ops/registry.hpp"
#include "groupby_reference.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/device_table.hpp"
#include "tandem/table/csv.hpp"

using namespace groupby_test;

namespace {

GroupByResult on_cpu(const Table& t, const GroupBySpec& s, int threads = 2) {
  return groupby(t, s, GroupByOptions{Device::cpu, threads});
}

void expect_reference(const Table& t, const GroupBySpec& s, const std::string& what, int threads = 2) {
  const auto want = reference_groupby(t, s);
  expect_matches(on_cpu(t, s, threads).table, want, what);
}

}  // namespace

TEST(GroupByTable, RandomTablesMatchTheReference) {
  std::mt19937_64 rng(7);
  const std::size_t sizes[] = {0, 1, 2, 7, 100, 1000, 5000};
  for (int round = 0; round < 40; ++round) {
    const std::size_t rows = sizes[rng() % 7], keys = 1 + rng() % 6;
    const Table t = random_table(rng, rows, keys, round % 2 ? 0.15 : 0.0);
    const auto spec = spec_of(t, random_aggregations(rng, t, 0.3));
    expect_reference(t, spec, "round " + std::to_string(round), 1 + round % 3);
  }
}

TEST(GroupByTable, EveryAggregationOnEveryTypeItAccepts) {
  std::mt19937_64 rng(11);
  const Table t = random_table(rng, 3000, 2, 0.1);
  expect_reference(t, spec_of(t, random_aggregations(rng, t, 1.0)), "all aggregations");
}

TEST(GroupByTable, ManyGroupsTakeThePartitionedPath) {
  std::mt19937_64 rng(3);
  const Table t = many_groups_table(rng, 60000);
  const auto spec = spec_of(t, random_aggregations(rng, t, 1.0));
  const auto r = on_cpu(t, spec);
  EXPECT_NE(r.report.explain().find("partition"), std::string::npos) << r.report.explain();
  expect_matches(r.table, reference_groupby(t, spec), "many groups");
}

TEST(GroupByTable, WideKeysAreRankedBySortingAndTheirCombinationToo) {
  // Four columns of ~60K distinct wide integers: their combined codes exceed 64 bits, so the
  // first three are ranked before the fourth joins; most rows are distinct groups.
  std::mt19937_64 rng(5);
  Table t;
  for (int k = 0; k < 4; ++k) t.add(random_column(rng, fmt::format("k{}", k), ColumnType::i64, 70000, 65000, 0.0));
  t.add(random_column(rng, "v_f64", ColumnType::f64, 70000, 1000, 0.0));
  const auto spec =
      spec_of(t, {aggregation(AggOp::count_rows), aggregation(AggOp::sum, "v_f64"), aggregation(AggOp::last, "v_f64")});
  const auto r = on_cpu(t, spec);
  EXPECT_NE(r.report.explain().find("radix sort"), std::string::npos) << r.report.explain();
  expect_matches(r.table, reference_groupby(t, spec), "wide keys");
}

TEST(GroupByTable, LongAndShortStringKeys) {
  std::vector<std::string> v = {"a much longer string than sixteen bytes",
                                "",
                                "x",
                                "a much longer string than sixteen bytez",
                                "x",
                                "",
                                "\xc3\xa9",
                                "a,\"b\"\n"};
  Table t;
  t.add(make_string_column("k", v, make_validity(v.size(), [](std::size_t i) { return i != 5; })));
  t.add(make_column<std::int32_t>("v", {1, 2, 3, 4, 5, 6, 7, 8}));
  const GroupBySpec spec{
      {"k"}, {aggregation(AggOp::count_rows), aggregation(AggOp::sum, "v"), aggregation(AggOp::first, "k")}};
  const auto r = on_cpu(t, spec);
  ASSERT_EQ(r.table.rows(), 7u);  // "", "a,\"b\"\n", 2 long ones, "x", "é", missing
  EXPECT_EQ(r.table.column("k").string(0), "");
  EXPECT_TRUE(r.table.column("k").present(0));
  EXPECT_FALSE(r.table.column("k").present(6));
  expect_matches(r.table, reference_groupby(t, spec), "strings");
}

TEST(GroupByTable, NanAndNegativeZeroKeysAreOneGroupEach) {
  Table t;
  t.add(make_column<double>("k", {0.0, -0.0, NAN, -NAN, 1.0, -0.0}));
  t.add(make_column<std::int64_t>("v", {1, 2, 3, 4, 5, 6}));
  const auto r = on_cpu(t, {{"k"}, {aggregation(AggOp::sum, "v")}});
  const auto k = r.table.column("k").numbers<double>();
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0], 0.0);
  EXPECT_FALSE(std::signbit(k[0]));
  EXPECT_EQ(k[1], 1.0);
  EXPECT_TRUE(std::isnan(k[2]));
  const auto s = r.table.column("sum_v").numbers<std::int64_t>();
  EXPECT_EQ(s[0], 9);
  EXPECT_EQ(s[1], 5);
  EXPECT_EQ(s[2], 7);
}

TEST(GroupByTable, EmptyInputGivesAnEmptyTableOfTheRightColumns) {
  Table t;
  t.add(make_string_column("k", std::vector<std::string>{}));
  t.add(make_column<float>("v", {}));
  const auto r = on_cpu(t, {{"k"}, parse_aggregations("count(),sum(v),min(v),median(v),top(v,2)")});
  EXPECT_EQ(r.table.rows(), 0u);
  ASSERT_EQ(r.table.num_columns(), 7u);
  EXPECT_EQ(r.table.column("sum_v").type, ColumnType::f64);
  EXPECT_EQ(r.table.column("min_v").type, ColumnType::f32);
  EXPECT_EQ(r.table.column("top2_v").type, ColumnType::f32);
  EXPECT_EQ(r.table.column("count").type, ColumnType::i64);
}

TEST(GroupByTable, OneRowOneGroupAndAllRowsDistinct) {
  Table one;
  one.add(make_column<std::int32_t>("k", {4}));
  one.add(make_column<double>("v", {2.5}));
  expect_reference(one, {{"k"}, parse_aggregations("count(),var(v),median(v),top(v,2),nunique(v)")}, "one row");
  std::vector<std::int32_t> same(1000, 3), distinct(1000);
  std::vector<double> vals(1000);
  for (int i = 0; i < 1000; ++i) {
    distinct[i] = 999 - i;
    vals[i] = i * 0.5;
  }
  Table t;
  t.add(make_column("same", same));
  t.add(make_column("distinct", distinct));
  t.add(make_column("v", vals));
  expect_reference(t, {{"same"}, parse_aggregations("sum(v),std(v),quantile(v,0.25)")}, "one group");
  expect_reference(t, {{"distinct"}, parse_aggregations("sum(v),first(v),last(v),count(v)")}, "all distinct");
  expect_reference(t, {{}, parse_aggregations("sum(v),count()")}, "no key columns: one group");
}

TEST(GroupByTable, EmptyStringsAndMissingStringsAreDifferentKeys) {
  Table t;
  t.add(make_string_column("k", {"", "", "a", ""}, make_validity(4, [](std::size_t i) { return i != 1; })));
  t.add(make_column<std::int32_t>("v", {1, 2, 3, 4}));
  const auto r = on_cpu(t, {{"k"}, {aggregation(AggOp::sum, "v")}});
  ASSERT_EQ(r.table.rows(), 3u);
  EXPECT_EQ(r.table.column("sum_v").numbers<std::int64_t>()[0], 5);  // ""
  EXPECT_EQ(r.table.column("sum_v").numbers<std::int64_t>()[2], 2);  // missing, last
}

TEST(GroupByTable, AllMissingInputsGiveMissingResultsAndZeroCounts) {
  Table t;
  t.add(make_column<std::int32_t>("k", {1, 1, 2}));
  t.add(make_column<std::int64_t>("v", {5, 6, 7}, make_validity(3, [](std::size_t i) { return i == 2; })));
  const auto r = on_cpu(t, {{"k"}, parse_aggregations("count(v),sum(v),mean(v),min(v),first(v),nunique(v)")});
  EXPECT_EQ(r.table.column("count_v").numbers<std::int64_t>()[0], 0);
  EXPECT_EQ(r.table.column("nunique_v").numbers<std::int64_t>()[0], 0);
  for (const char* c : {"sum_v", "mean_v", "min_v", "first_v"}) {
    EXPECT_FALSE(r.table.column(c).present(0)) << c;
    EXPECT_TRUE(r.table.column(c).present(1)) << c;
  }
}

TEST(GroupByTable, IntegerSumOverflowNamesTheColumn) {
  Table t;
  t.add(make_column<std::int32_t>("k", {1, 1, 2, 2, 2}));
  t.add(make_column<std::int64_t>("big", {INT64_MAX, 1, INT64_MAX, 1, -1}));
  t.add(make_column<std::uint64_t>("ubig", {UINT64_MAX, 0, UINT64_MAX, 1, 0}));
  try {
    (void)on_cpu(t, {{"k"}, {aggregation(AggOp::sum, "big")}});
    FAIL() << "no overflow reported";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'big'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)on_cpu(t, {{"k"}, {aggregation(AggOp::sum, "ubig")}}), InputError);
  // Group 2 alone goes over and comes back: the exact total fits, whatever the row order.
  Table fits;
  fits.add(make_column<std::int32_t>("k", {2, 2, 2}));
  fits.add(make_column<std::int64_t>("big", {INT64_MAX, 1, -1}));
  EXPECT_EQ(on_cpu(fits, {{"k"}, {aggregation(AggOp::sum, "big")}}).table.column("sum_big").numbers<std::int64_t>()[0],
            INT64_MAX);
}

namespace {
// A key column and a value column, as the CLI's key/value-file form (--keys, --values) makes them.
template <class K, class V>
Table key_value(std::vector<K> keys, std::vector<V> values) {
  Table t;
  t.add(make_column("key", std::move(keys)));
  t.add(make_column("value", std::move(values)));
  return t;
}

std::string csv_of(const Table& t) {
  std::ostringstream os;
  write_csv(os, t);
  return os.str();
}

std::string sum_error(const Table& t, int threads) {
  try {
    (void)on_cpu(t, {{"key"}, parse_aggregations("sum(value) as sum")}, threads);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(GroupByTable, KeyValueColumnsAsCsvSignedKeysNaNAndNegativeZero) {
  // Header key,<names>; -0.0 stays -0; sum and mean propagate NaN, min and max skip it.
  const auto t = key_value<std::int32_t, double>({-5, 3, -5, 3, 0, -5}, {1.0, NAN, -0.0, 2.0, -0.0, 0.0});
  const auto all =
      parse_aggregations("sum(value) as sum,count() as count,min(value) as min,max(value) as max,mean(value) as mean");
  EXPECT_EQ(csv_of(on_cpu(t, {{"key"}, all}).table),
            "key,sum,count,min,max,mean\n"
            "-5,1,3,-0,1,0.3333333333333333\n"
            "0,-0,1,-0,-0,-0\n"
            "3,nan,2,2,2,nan\n");
  const auto ti = key_value<std::int32_t, std::int64_t>({-5, 3, -5, 3, 0, -5}, {10, -3, 4, 8, 1, -7});
  const auto extremes = parse_aggregations("min(value) as min,max(value) as max,sum(value) as sum");
  EXPECT_EQ(csv_of(on_cpu(ti, {{"key"}, extremes}).table), "key,min,max,sum\n-5,-7,10,7\n0,1,1,1\n3,-3,8,5\n");
  // Counts alone; no rows: the header alone.
  const auto count = parse_aggregations("count() as count");
  const Table keys(std::vector<Column>{make_column<std::uint64_t>("key", {3, 1, 3})});
  EXPECT_EQ(csv_of(on_cpu(keys, {{"key"}, count}).table), "key,count\n1,1\n3,2\n");
  const Table none(std::vector<Column>{make_column<std::uint64_t>("key", {})});
  EXPECT_EQ(csv_of(on_cpu(none, {{"key"}, count}).table), "key,count\n");
  // Keys and values of different lengths make no table.
  Table bad(std::vector<Column>{make_column<std::uint64_t>("key", {1, 2, 3})});
  EXPECT_THROW(bad.add(make_column<double>("value", {1, 2})), UsageError);
  EXPECT_THROW(parse_aggregations("sum(value),median"), UsageError);
  EXPECT_THROW(parse_aggregations(""), UsageError);
}

TEST(GroupByTable, I64SumBeyondRangeIsAnInputErrorOnEveryThreadCount) {
  const std::int64_t top = INT64_MAX, bottom = INT64_MIN;
  for (int threads : {1, 2, 3, 8}) {
    SCOPED_TRACE(testing::Message() << threads << " threads");
    const std::string up = sum_error(key_value<std::int64_t, std::int64_t>({-42, -42}, {top, 1}), threads);
    EXPECT_NE(up.find("sum of column 'value' does not fit i64"), std::string::npos) << up;
    const std::string down = sum_error(key_value<std::int64_t, std::int64_t>({7, 7, 1}, {bottom, -1, 5}), threads);
    EXPECT_NE(down.find("does not fit i64"), std::string::npos) << down;
    // The running sum leaves the range, the sum does not: exact, whatever the order.
    const auto back = key_value<std::int64_t, std::int64_t>({1, 1, 1, 2, 2}, {top, 1, -1, bottom, top});
    const auto r = on_cpu(back, {{"key"}, parse_aggregations("sum(value)")}, threads);
    ASSERT_EQ(r.table.rows(), 2u);
    EXPECT_EQ(r.table.column("sum_value").numbers<std::int64_t>()[0], top);
    EXPECT_EQ(r.table.column("sum_value").numbers<std::int64_t>()[1], -1);
  }
}

TEST(GroupByTable, I64SumsNearTheRangeMatchExact128BitSums) {
  // Pairs x, -x +- small under one key: the sums stay small while partial sums roam the range.
  std::mt19937_64 rng(3);
  const std::size_t n = 40000;
  std::vector<std::uint32_t> keys(n);
  std::vector<std::int64_t> vals(n);
  for (std::size_t i = 0; i < n; i += 2) {
    keys[i] = keys[i + 1] = std::uint32_t(rng() % 500);
    vals[i] = static_cast<std::int64_t>(rng() >> 1) * (rng() % 2 ? 1 : -1);
    const auto small = std::int64_t(rng() % 100);
    vals[i + 1] = vals[i] > 0 ? -vals[i] + small : -vals[i] - small;
  }
  auto exact_sums = [&](const std::vector<std::int64_t>& v) {
    std::map<std::uint32_t, __int128> e;
    for (std::size_t i = 0; i < n; ++i) e[keys[i]] += v[i];
    return e;
  };
  const auto exact = exact_sums(vals);
  const auto t = key_value(keys, vals);
  for (int threads : {1, 4}) {
    const auto r = on_cpu(t, {{"key"}, parse_aggregations("sum(value)")}, threads);
    ASSERT_EQ(r.table.rows(), exact.size());
    const auto k = r.table.column("key").numbers<std::uint32_t>();
    const auto sum = r.table.column("sum_value").numbers<std::int64_t>();
    for (std::size_t i = 0; i < k.size(); ++i) EXPECT_TRUE(__int128(sum[i]) == exact.at(k[i])) << k[i];
  }
  // Values moved between keys: most sums leave the range.
  auto moved = vals;
  std::shuffle(moved.begin(), moved.end(), std::mt19937_64(4));
  bool beyond = false;
  for (const auto& [k, sum] : exact_sums(moved)) beyond = beyond || sum > INT64_MAX || sum < INT64_MIN;
  ASSERT_TRUE(beyond);
  EXPECT_NE(sum_error(key_value(keys, moved), 4), "");
}

TEST(GroupByTable, OneAndManyThreadsGiveIdenticalResults) {
  std::mt19937_64 rng(13);
  Table t;
  t.add(random_column(rng, "few", ColumnType::str, 300000, 5, 0.01));
  t.add(random_column(rng, "many", ColumnType::i32, 300000, 100000, 0.0));
  t.add(random_column(rng, "v_f64", ColumnType::f64, 300000, 5000, 0.05));
  t.add(random_column(rng, "v_f32", ColumnType::f32, 300000, 5000, 0.05));
  const auto aggs = parse_aggregations("sum(v_f64),mean(v_f32),var(v_f64),first(v_f64),last(v_f32),median(v_f64)");
  for (const char* key : {"few", "many"}) {
    const GroupBySpec s{{key}, aggs};
    const auto one = on_cpu(t, s, 1), three = on_cpu(t, s, 3);
    expect_identical(one.table, three.table, key);
    expect_matches(three.table, reference_groupby(t, s), key);
  }
}

TEST(GroupByTable, ClusteredKeysLeaveRowRangesWithoutSomeGroups) {
  // Keys in runs of 50,000 rows: most row ranges with partial states see only one or two groups.
  std::mt19937_64 rng(19);
  const std::size_t n = 300000;
  std::vector<std::int32_t> k(n);
  for (std::size_t i = 0; i < n; ++i) k[i] = static_cast<std::int32_t>(i / 50000);
  Table t;
  t.add(make_column("k", k));
  t.add(random_column(rng, "v_f64", ColumnType::f64, n, 5000, 0.3));
  t.add(random_column(rng, "v_str", ColumnType::str, n, 20, 0.3));
  const GroupBySpec s{{"k"},
                      parse_aggregations("first(v_f64),last(v_f64),first(v_str),last(v_str),min(v_str),"
                                         "max(v_f64),sum(v_f64),mean(v_f64),var(v_f64),count(v_f64)")};
  expect_matches(on_cpu(t, s, 3).table, reference_groupby(t, s), "clustered");
}

TEST(GroupByTable, TwoHostThreadsCallGroupByAtOnce) {
  std::mt19937_64 rng(17);
  const Table a = random_table(rng, 20000, 2, 0.05), b = random_table(rng, 30000, 3, 0.0);
  const auto sa = spec_of(a, random_aggregations(rng, a, 0.5)), sb = spec_of(b, random_aggregations(rng, b, 0.5));
  const Table want_a = on_cpu(a, sa).table, want_b = on_cpu(b, sb).table;
  Table got_a, got_b;
  std::thread ta([&] { got_a = on_cpu(a, sa).table; });
  std::thread tb([&] { got_b = on_cpu(b, sb).table; });
  ta.join();
  tb.join();
  expect_identical(want_a, got_a, "first");
  expect_identical(want_b, got_b, "second");
}

TEST(GroupByTable, GeneratedBenchmarkDataMatchesTheReference) {
  const Table t = generate_groupby_table({.rows = 20000, .k = 10, .nas_percent = 5});
  const auto aggs = parse_aggregations("sum(v1),mean(v3),max(v1),min(v2),median(v3),std(v3),top(v3,2),count()");
  for (const auto& by : std::vector<std::vector<std::string>>{
           {"id1"}, {"id1", "id2"}, {"id3"}, {"id4"}, {"id6"}, {"id1", "id2", "id3", "id4", "id5", "id6"}})
    expect_reference(t, {by, aggs}, "by " + by.front() + " (" + std::to_string(by.size()) + " columns)");
}

TEST(GroupByTable, BadRequestsAreUsageErrors) {
  Table t;
  t.add(make_column<std::int32_t>("k", {1}));
  t.add(make_string_column("s", {"x"}));
  EXPECT_THROW((void)on_cpu(t, {{"nope"}, {}}), UsageError);
  EXPECT_THROW((void)on_cpu(t, {{"k", "k"}, {}}), UsageError);
  EXPECT_THROW((void)on_cpu(t, {{"k"}, parse_aggregations("sum(s)")}), UsageError);
  EXPECT_THROW((void)on_cpu(t, {{"k"}, parse_aggregations("median(s)")}), UsageError);
  EXPECT_THROW((void)on_cpu(t, {{"k"}, parse_aggregations("sum(nope)")}), UsageError);
  EXPECT_THROW((void)on_cpu(t, {{"k"}, parse_aggregations("count(),count()")}), UsageError);
  EXPECT_NO_THROW((void)on_cpu(t, {{"k"}, parse_aggregations("count(),count() as n,min(s),nunique(s)")}));
  EXPECT_THROW((void)groupby(t, {{"k"}, {}}, GroupByOptions{Device::hybrid}), UsageError);
  EXPECT_THROW((void)groupby(t, {{"k"}, {}}, GroupByOptions{Device::cpu, -1}), UsageError);
#if !TANDEM_HAS_CUDA
  EXPECT_THROW((void)groupby(t, {{"k"}, {}}, GroupByOptions{Device::gpu}), NoDeviceError);
#endif
}

TEST(GroupByTable, ParsesAggregationText) {
  const auto a = parse_aggregations(" sum(v1), mean( v3 ),count(),quantile(v3, 0.9) ,top(v3,2) as best,count(v2) as n");
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a[0].op, AggOp::sum);
  EXPECT_EQ(a[1].column, "v3");
  EXPECT_EQ(a[2].op, AggOp::count_rows);
  EXPECT_EQ(a[3].q, 0.9);
  EXPECT_EQ(a[4].n, 2u);
  EXPECT_EQ(a[5].op, AggOp::count);
  EXPECT_EQ(output_names(a[0]), std::vector<std::string>{"sum_v1"});
  EXPECT_EQ(output_names(a[2]), std::vector<std::string>{"count"});
  EXPECT_EQ(output_names(a[3]), std::vector<std::string>{"q0.9_v3"});
  EXPECT_EQ(output_names(a[4]), (std::vector<std::string>{"best1", "best2"}));
  EXPECT_EQ(output_names(a[5]), std::vector<std::string>{"n"});
  EXPECT_EQ(output_names([] {
              auto a = aggregation(AggOp::top, "v3");
              a.n = 2;
              return a;
            }()),
            (std::vector<std::string>{"top1_v3", "top2_v3"}));
  EXPECT_EQ(to_string(AggOp::nunique), "nunique");
  for (const char* bad : {"", "sum", "sum()", "avg(v1)", "sum(v1,v2)", "quantile(v1)", "quantile(v1,1.5)", "top(v1,0)",
                          "top(v1,x)", "sum(v1) named", "sum(v1),,count()", "count(a,b)", "sum(v1) as"})
    EXPECT_THROW((void)parse_aggregations(bad), UsageError) << bad;
  try {
    (void)parse_aggregations("sum(v1),avg(v2)");
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("avg(v2)"), std::string::npos) << e.what();
  }
}

TEST(GroupByTable, ManyDistinctKeysAcrossThreadsAndTheirCombination) {
  // 140,000 rows are 3 chunks, numbered by 3 threads in their own dictionaries: thousands of
  // distinct short strings and repeating wide integers, whose dictionaries are ranked by a radix
  // sort of the keys' 64-bit words, and long strings (compared in full); together with small
  // columns they combine into about one group per row.
  std::mt19937_64 rng(11);
  const std::size_t n = 140000;
  Table t;
  t.add(random_column(rng, "k0", ColumnType::str, n, 6, 0.01, false));
  t.add(random_column(rng, "k1", ColumnType::str, n, 30000, 0.01, false));
  t.add(random_column(rng, "k2", ColumnType::u64, n, 1900, 0.01));
  t.add(random_column(rng, "k3", ColumnType::i32, n, 7, 0.0));
  t.add(random_column(rng, "k4", ColumnType::str, n, 20000, 0.0));
  t.add(random_column(rng, "v_f64", ColumnType::f64, n, 1000, 0.05));
  const auto aggs = parse_aggregations("sum(v_f64),count(),first(v_f64),max(v_f64)");
  for (const auto& by : std::vector<std::vector<std::string>>{{"k1"}, {"k2"}, {"k4"}, {"k0", "k1", "k2", "k3", "k4"}})
    expect_reference(t, {by, aggs}, fmt::format("by {}", fmt::join(by, ",")), 3);
}

TEST(GroupByTable, ADeviceTableNeedsAGpu) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is present (tests/gpu covers the device table)";
  const Table t = generate_groupby_table({.rows = 100, .k = 10});
  EXPECT_THROW(DeviceTable{t}, NoDeviceError);
}

namespace {

// Sums and counts of v by k, computed plainly, in the engine's key order: (missing, key).
template <class K>
std::map<std::pair<bool, K>, std::pair<std::int64_t, std::int64_t>> plain_sums(const std::vector<K>& k,
                                                                               const std::vector<std::int64_t>& v,
                                                                               const std::vector<bool>& present) {
  std::map<std::pair<bool, K>, std::pair<std::int64_t, std::int64_t>> m;
  for (std::size_t i = 0; i < k.size(); ++i) {
    auto& s = m[present[i] ? std::pair{false, k[i]} : std::pair{true, K{}}];
    s.first += v[i];
    ++s.second;
  }
  return m;
}

template <class K>
void expect_sampled_range_answers(const std::vector<std::size_t>& outliers, K outlier, bool with_missing,
                                  bool missed = true) {
  const std::size_t n = (std::size_t{1} << 20) + 4097;  // enough rows for the range to be sampled
  std::vector<K> k(n);
  std::vector<std::int64_t> v(n);
  std::vector<bool> present(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    k[i] = static_cast<K>(1000 + (i * 7919) % 100);
    v[i] = static_cast<std::int64_t>(i % 13) - 6;
    if (with_missing && i % 5 == 0) present[i] = false;
  }
  for (const std::size_t i : outliers) k[i] = outlier;
  Table t;
  t.add(with_missing ? make_column("k", k, make_validity(n, [&](std::size_t i) { return bool(present[i]); }))
                     : make_column("k", k));
  t.add(make_column("v", v));
  const auto r = on_cpu(t, GroupBySpec{{"k"}, parse_aggregations("sum(v),count()")}, 3);
  const auto want = plain_sums(k, v, present);
  const std::string what = fmt::format("{} outlier(s) {}", outliers.size(), static_cast<std::int64_t>(outlier));
  ASSERT_EQ(r.table.rows(), want.size()) << what;
  const Column& key = r.table.column("k");
  std::size_t row = 0;
  for (const auto& [key_want, sums] : want) {
    ASSERT_EQ(key.present(row), !key_want.first) << what << " row " << row;
    if (!key_want.first) {
      EXPECT_EQ(key.numbers<K>()[row], key_want.second) << what << " row " << row;
    }
    EXPECT_EQ(r.table.column("sum_v").numbers<std::int64_t>()[row], sums.first) << what << " row " << row;
    EXPECT_EQ(r.table.column("count").numbers<std::int64_t>()[row], sums.second) << what << " row " << row;
    ++row;
  }
  const bool noted = r.report.explain().find("outside the range sampled") != std::string::npos;
  EXPECT_EQ(noted, missed) << what << "\n" << r.report.explain();
  EXPECT_NE(r.report.explain().find("of a sample"), std::string::npos) << r.report.explain();
}

}  // namespace

TEST(GroupByTable, IntegerKeysOutsideTheirSampledRangeAreCountedOnceTheRangeIsExact) {
  // The range of a large integer key column is guessed from a sample of rows; keys the sample
  // missed, at the first row, the last, or beside the type's limits, make the fold start again.
  const std::size_t last = (std::size_t{1} << 20) + 4096;
  expect_sampled_range_answers<std::int32_t>({}, 0, false, false);
  expect_sampled_range_answers<std::int32_t>({0}, 1'000'000, false);
  expect_sampled_range_answers<std::int32_t>({last}, std::numeric_limits<std::int32_t>::min(), true);
  expect_sampled_range_answers<std::int32_t>({7, last}, std::numeric_limits<std::int32_t>::max(), false);
  expect_sampled_range_answers<std::int64_t>({12345}, std::numeric_limits<std::int64_t>::min(), false);
  expect_sampled_range_answers<std::int64_t>({3}, 1120, true, false);  // inside the padded range
  expect_sampled_range_answers<std::uint32_t>({last}, std::numeric_limits<std::uint32_t>::max(), false);
  expect_sampled_range_answers<std::uint64_t>({1}, 0, true);
}

TEST(GroupByTable, AGuessedRangeGivesWayWherePartitionsFoldTheRows) {
  // Two keys of 10 values each over 2^20 rows with a median: the rows fold by partitions of group
  // ids, which a guessed range (ids spread over (10 + 2·65)^2) would leave mostly empty. The keys
  // are encoded from their bounds; every median is the plainly computed one.
  const std::size_t n = (std::size_t{1} << 20) + 5;
  std::vector<std::int64_t> a(n), b(n);
  std::vector<double> v(n);
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<double>> groups;
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = 1 + static_cast<std::int64_t>((i * 7) % 10);
    b[i] = 1 + static_cast<std::int64_t>((i / 10) % 10);
    v[i] = static_cast<double>((i * 2654435761u) % 1000);
    groups[{a[i], b[i]}].push_back(v[i]);
  }
  Table t;
  t.add(make_column("a", a));
  t.add(make_column("b", b));
  t.add(make_column("v", v));
  const auto r = on_cpu(t, GroupBySpec{{"a", "b"}, parse_aggregations("median(v),count()")}, 2);
  EXPECT_EQ(r.report.explain().find("of a sample"), std::string::npos) << r.report.explain();
  ASSERT_EQ(r.table.rows(), groups.size());
  std::size_t row = 0;
  for (auto& [key, values] : groups) {
    std::sort(values.begin(), values.end());
    const std::size_t m = values.size();
    const double median = m % 2 ? values[m / 2] : (values[m / 2 - 1] + values[m / 2]) / 2;
    EXPECT_EQ(r.table.column("a").numbers<std::int64_t>()[row], key.first);
    EXPECT_EQ(r.table.column("b").numbers<std::int64_t>()[row], key.second);
    EXPECT_EQ(r.table.column("median_v").numbers<double>()[row], median) << key.first << "," << key.second;
    ++row;
  }
}

TEST(GroupByTable, AGuessedRangeGivesWayWhereTheCombinedKeysAreRanked) {
  // k's range would be sampled, but k with the distinct w does not index the groups directly:
  // k is encoded from its bounds instead, and every (k, w) is its own group.
  const std::size_t n = (std::size_t{1} << 20) + 3;
  std::vector<std::int32_t> k(n);
  std::vector<std::int64_t> w(n);
  for (std::size_t i = 0; i < n; ++i) {
    k[i] = static_cast<std::int32_t>(i % 100);
    w[i] = static_cast<std::int64_t>(n - i) * 3;
  }
  Table t;
  t.add(make_column("k", k));
  t.add(make_column("w", w));
  const auto r = on_cpu(t, GroupBySpec{{"k", "w"}, parse_aggregations("count()")});
  EXPECT_EQ(r.table.rows(), n);
  EXPECT_EQ(r.report.explain().find("of a sample"), std::string::npos) << r.report.explain();
  EXPECT_NE(r.report.explain().find("combine keys"), std::string::npos) << r.report.explain();
  const auto keys = r.table.column("w").numbers<std::int64_t>();
  const std::size_t last_k0 = (n - 1) / 100 * 100;  // k = 0's last row holds its smallest w
  EXPECT_EQ(keys.front(), static_cast<std::int64_t>(n - last_k0) * 3);
}
