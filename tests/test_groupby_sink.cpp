// tandem::GroupBySink against tandem::groupby over the whole table: every aggregation on random
// tables with missing values, NaN, -0.0 and awkward strings, under several chunkings, consumed
// from several threads in shuffled order; spilling forced by a tiny memory limit; the spill
// folder gone after finish, after an error and on the signal path; the shared combine plan.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <thread>

#include "groupby/combine_plan.hpp"
#include "groupby/cpu_engine.hpp"
#include "groupby/ops/registry.hpp"
#include "groupby/sink/piece_arena.hpp"
#include "groupby/sink/running_groups.hpp"
#include "groupby/sink/sink_config.hpp"
#include "groupby/sink/sliced_consume.hpp"
#include "groupby_reference.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/io.hpp"
#include "tandem/groupby_sink.hpp"
#include "tandem/table_sort.hpp"
#include "test_util.hpp"

using namespace groupby_test;

namespace {

// Rows [b, e) of t.
Table rows_of(const Table& t, std::size_t b, std::size_t e) {
  std::vector<std::size_t> rows(e - b);
  std::iota(rows.begin(), rows.end(), b);
  return t.gather(rows);
}

// t cut into pieces of the given sizes (the last takes the rest).
std::vector<Table> chunks_of(const Table& t, const std::vector<std::size_t>& sizes) {
  std::vector<Table> out;
  std::size_t at = 0;
  for (const std::size_t s : sizes) {
    const std::size_t e = std::min(t.rows(), at + s);
    out.push_back(rows_of(t, at, e));
    at = e;
  }
  out.push_back(rows_of(t, at, t.rows()));
  return out;
}

std::vector<std::size_t> sizes(std::size_t n, std::size_t size) { return std::vector<std::size_t>(n, size); }

// Random sizes from 0 (empty chunks) to 97 rows until n rows are covered.
std::vector<std::size_t> odd_sizes(std::mt19937_64& rng, std::size_t n) {
  std::vector<std::size_t> out;
  for (std::size_t at = 0; at < n;) out.push_back(rng() % 98), at += out.back();
  return out;
}

// Consumes the chunks from `threads` threads at once, in a shuffled order; `pieces`: the result
// taken a piece at a time (each with rows), then joined.
GroupByResult run_sink(const GroupBySpec& spec, const std::vector<Table>& chunks, GroupBySinkOptions options = {},
                       int threads = 4, std::uint64_t seed = 1, bool pieces = false) {
  GroupBySink sink(spec, options);
  std::vector<std::size_t> order(chunks.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (std::size_t i; (i = next++) < order.size();) sink.consume(order[i], chunks[order[i]]);
    });
  for (auto& t : pool) t.join();
  if (!pieces) return sink.finish();
  std::vector<Table> got;
  GroupByResult r = sink.finish([&](Table piece) {
    EXPECT_GT(piece.rows(), 0u);
    got.push_back(std::move(piece));
  });
  r.table = concat_tables(got, r.table);
  return r;
}

// Float outputs that add up in another order than tandem::groupby's may differ by rounding.
bool rounded(const GroupBySpec& spec, const std::string& column) {
  for (const auto& a : spec.aggs)
    for (const auto& name : output_names(a))
      if (name == column) return a.op == AggOp::mean || a.op == AggOp::var || a.op == AggOp::std || a.op == AggOp::sum;
  return false;
}

// Column by column: names, types, presence; floats within 1e-9 relative where they are summed,
// every other cell exactly (floats bit for bit, NaN equal to NaN).
void expect_same(const Table& got, const Table& want, const GroupBySpec& spec, const std::string& what) {
  ASSERT_EQ(got.num_columns(), want.num_columns()) << what;
  ASSERT_EQ(got.rows(), want.rows()) << what;
  for (std::size_t c = 0; c < want.num_columns(); ++c) {
    const Column &g = got.column(c), &w = want.column(c);
    ASSERT_EQ(g.name, w.name) << what;
    ASSERT_EQ(g.type, w.type) << what << ": column " << w.name;
    const bool approx = rounded(spec, w.name);
    for (std::size_t r = 0; r < want.rows(); ++r) {
      const Value x = cell(g, r), y = cell(w, r);
      const std::string where = fmt::format("{}: column {} row {}", what, w.name, r);
      ASSERT_EQ(x.present, y.present) << where;
      if (is_floating(w.type)) {
        ASSERT_TRUE(same_float(y.f, x.f, approx)) << where << ": want " << y.f << " got " << x.f;
      } else {
        ASSERT_TRUE(x.i == y.i && x.u == y.u && x.s == y.s) << where;
      }
    }
  }
}

GroupByResult whole(const Table& t, const GroupBySpec& spec) {
  return groupby(t, spec, GroupByOptions{Device::cpu, 2});
}

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir); it != std::filesystem::end(it); ++it) ++n;
  return n;
}

}  // namespace

TEST(GroupBySink, EveryAggregationUnderEveryChunkingMatchesGroupBy) {
  std::mt19937_64 rng(17);
  const std::size_t row_counts[] = {1, 2, 7, 150, 2000};
  for (int round = 0; round < 10; ++round) {
    const std::size_t rows = row_counts[round % 5], keys = 1 + round % 3;
    const Table t = random_table(rng, rows, keys, round % 2 ? 0.15 : 0.0);
    const auto spec = spec_of(t, random_aggregations(rng, t, 1.0));
    const Table want = whole(t, spec).table;
    std::vector<std::pair<std::string, std::vector<std::size_t>>> cuts = {
        {"one chunk", {}}, {"odd sizes", odd_sizes(rng, rows)}, {"seven chunks", sizes(6, rows / 7 + 1)}};
    if (rows <= 150) cuts.push_back({"a row per chunk", sizes(rows, 1)});
    for (const auto& [name, cut] : cuts) {
      const auto what = fmt::format("round {} ({} rows), {}", round, rows, name);
      expect_same(run_sink(spec, chunks_of(t, cut), {}, 4, round).table, want, spec, what);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(GroupBySink, SpillingGivesTheSameAnswersAndLeavesNoFiles) {
  std::mt19937_64 rng(23);
  const TempDir dir;
  for (int round = 0; round < 5; ++round) {
    const Table t = round < 3 ? random_table(rng, 3000, 1 + round, 0.1) : many_groups_table(rng, 30000);
    auto aggs = random_aggregations(rng, t, 1.0);
    // Round 4: holistic aggregations only, where the kept rows alone make the result.
    if (round == 4) std::erase_if(aggs, [](const Aggregation& a) { return !agg::operator_info(a.op).holistic; });
    const auto spec = spec_of(t, aggs);
    GroupBySinkOptions tiny;
    tiny.memory_limit = 1;
    tiny.temp_dir = dir.path.string();
    tiny.threads = 2;
    const auto r = run_sink(spec, chunks_of(t, odd_sizes(rng, t.rows() / 30)), tiny, 3, round);
    EXPECT_NE(r.report.explain().find("spilled"), std::string::npos) << r.report.explain();
    expect_same(r.table, whole(t, spec).table, spec, fmt::format("round {}", round));
    EXPECT_EQ(files_in(dir.path.string()), 0u);
  }
}

TEST(GroupBySink, ALimitAboveThePartialGroupsKeepsThemInMemory) {
  std::mt19937_64 rng(29);
  const Table t = random_table(rng, 2000, 2, 0.1);
  const auto spec = spec_of(t, random_aggregations(rng, t, 1.0));
  const TempDir dir;
  GroupBySinkOptions roomy;
  roomy.memory_limit = std::size_t{1} << 30;
  roomy.temp_dir = dir.path.string();
  GroupBySink sink(spec, roomy);
  const auto chunks = chunks_of(t, sizes(9, 200));
  for (std::size_t i = 0; i < chunks.size(); ++i) sink.consume(i, chunks[i]);
  EXPECT_FALSE(sink.spilled());
  EXPECT_GT(sink.memory_bytes(), 0u);
  const auto r = sink.finish();
  EXPECT_EQ(r.report.explain().find("spilled"), std::string::npos);
  expect_same(r.table, whole(t, spec).table, spec, "in memory");
}

TEST(GroupBySink, AChunkWithoutAColumnIsAUsageErrorAndLeavesNoFiles) {
  std::mt19937_64 rng(31);
  const Table t = random_table(rng, 1000, 2, 0.1);
  const auto spec = spec_of(t, {aggregation(AggOp::sum, "v_i64"), aggregation(AggOp::median, "v_f64")});
  const TempDir dir;
  {
    GroupBySinkOptions tiny;
    tiny.memory_limit = 1;
    tiny.temp_dir = dir.path.string();
    GroupBySink sink(spec, tiny);
    const auto chunks = chunks_of(t, sizes(3, 300));
    sink.consume(0, chunks[0]);
    sink.consume(1, chunks[1]);
    ASSERT_TRUE(sink.spilled());
    ASSERT_GT(files_in(dir.path.string()), 0u);
    std::vector<Column> cols;
    for (const Column& c : chunks[2].columns())
      if (c.name != "v_f64") cols.push_back(c);
    try {
      sink.consume(2, Table(cols));
      FAIL() << "no error";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("'v_f64'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("chunk 2"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(files_in(dir.path.string()), 0u);
}

TEST(GroupBySink, BadChunksAndCallsAreUsageErrors) {
  const Table t(std::vector<Column>{make_column<std::int64_t>("k", {1, 2, 1}), make_column<double>("v", {1, 2, 3})});
  const GroupBySpec spec{{"k"}, {aggregation(AggOp::sum, "v")}};
  GroupBySink sink(spec);
  EXPECT_THROW(sink.consume(0, Table(std::vector<Column>{make_column<std::int64_t>("k", {1})})), UsageError);
  sink.consume(0, t);
  EXPECT_THROW(sink.consume(0, t), UsageError);  // twice
  const Table other_type(std::vector<Column>{make_column<std::int64_t>("k", {1}), make_column<std::int64_t>("v", {1})});
  EXPECT_THROW(sink.consume(1, other_type), UsageError);
  const Table strings(std::vector<Column>{make_column<std::int64_t>("k", {1}), make_string_column("v", {"x"})});
  GroupBySink sum_of_strings(spec);
  EXPECT_THROW(sum_of_strings.consume(0, strings), UsageError);
  (void)sink.finish();
  EXPECT_THROW(sink.finish(), UsageError);
  EXPECT_THROW(sink.consume(5, t), UsageError);
  GroupBySink nothing(spec);
  EXPECT_THROW(nothing.finish(), UsageError);
  GroupBySinkOptions negative;
  negative.threads = -1;
  EXPECT_THROW(GroupBySink(spec, negative), UsageError);
}

TEST(GroupBySink, EmptyChunksGiveAnEmptyResultOfTheRightColumns) {
  std::mt19937_64 rng(37);
  const Table t = random_table(rng, 0, 2, 0.0);
  const auto spec = spec_of(t, random_aggregations(rng, t, 1.0));
  expect_same(run_sink(spec, {t, t, t}).table, whole(t, spec).table, spec, "empty chunks");
}

TEST(GroupBySink, IntegerSumsStayExactAcrossChunks) {
  // Partial sums near the i64 limit combine exactly, and a total that does not fit is an InputError.
  const std::int64_t big = std::int64_t{1} << 61;
  const Table t(std::vector<Column>{make_column<std::int64_t>("k", {1, 1, 1, 1}),
                                    make_column<std::int64_t>("v", {big, big, big, -big})});
  const GroupBySpec spec{{"k"}, {aggregation(AggOp::sum, "v"), aggregation(AggOp::mean, "v")}};
  expect_same(run_sink(spec, chunks_of(t, sizes(3, 1))).table, whole(t, spec).table, spec, "near the limit");
  const Table over(std::vector<Column>{make_column<std::int64_t>("k", {1, 1, 1, 1}),
                                       make_column<std::int64_t>("v", {big, big, big, big})});
  EXPECT_THROW(run_sink(spec, chunks_of(over, sizes(3, 1))), InputError);
}

TEST(GroupBySink, MostlyDistinctKeysMakeEachLaterRowAPartialGroup) {
  // Past the probe (2^17 rows) with nearly every key distinct, running groups are given up and
  // each later row becomes a partial group of its own; the answer stays tandem::groupby's.
  std::mt19937_64 rng(41);
  const std::size_t rows = 180'000;
  Table t;
  t.add(random_column(rng, "k0", ColumnType::i64, rows, 4 * rows, 0.01));
  t.add(random_column(rng, "k1", ColumnType::str, rows, 3, 0.0));
  for (const auto type : {ColumnType::i32, ColumnType::u64, ColumnType::f32, ColumnType::f64})
    t.add(random_column(rng, fmt::format("v_{}", to_string(type)), type, rows, 1000, 0.1));
  auto aggs = random_aggregations(rng, t, 0.4);
  std::erase_if(aggs, [](const Aggregation& a) {
    return a.op == AggOp::first || a.op == AggOp::last || agg::operator_info(a.op).holistic;
  });
  const auto spec = spec_of(t, aggs);
  const Table want = whole(t, spec).table;
  for (const bool pieces : {false, true}) {
    const auto got = run_sink(spec, chunks_of(t, sizes(17, rows / 18)), {}, 1, 1, pieces);
    expect_same(got.table, want, spec, pieces ? "mostly distinct keys, in pieces" : "mostly distinct keys");
    if (HasFatalFailure()) return;
    bool gave_up = false;
    for (const auto& stage : got.report.stages) gave_up |= stage.detail.find("mostly distinct") != std::string::npos;
    EXPECT_TRUE(gave_up) << "the report does not say running groups were given up";
  }
}

TEST(SinkConfig, RunningGroupsStayWhereKeysRepeatOverTheWholeInput) {
  using sink::SinkConfig;
  const std::size_t n = SinkConfig::kRunningProbeRows;
  // 2^17 rows of 10^7 keys make about 130,215 groups (99.3 %); of 10^6 keys, 123,284 (94 %).
  const auto groups_of = [n](double keys) { return static_cast<std::size_t>(keys * -std::expm1(-double(n) / keys)); };
  EXPECT_NEAR(SinkConfig::estimated_keys(n, groups_of(1e7)), 1e7, 1e5);
  EXPECT_NEAR(SinkConfig::estimated_keys(n, groups_of(1e6)), 1e6, 1e4);
  EXPECT_TRUE(std::isinf(SinkConfig::estimated_keys(n, n)));
  EXPECT_TRUE(SinkConfig::running_groups_pay(n - 1, n - 1, 0));        // before the probe
  EXPECT_TRUE(SinkConfig::running_groups_pay(n, groups_of(1e6), 0));   // 94 %: kept
  EXPECT_FALSE(SinkConfig::running_groups_pay(n, groups_of(1e7), 0));  // 99.3 %, rows unknown
  // 10^9 rows on 16 threads (q3 of the db-benchmark at 10^9 rows): 6·10^7 rows a table, 6 a key.
  EXPECT_TRUE(SinkConfig::running_groups_pay(n, groups_of(1e7), 1'000'000'000 / 16));
  // 10^7 rows of 10^7 keys (q10 at 10^7 rows): distinct, given up.
  EXPECT_FALSE(SinkConfig::running_groups_pay(n, groups_of(1e7), 10'000'000 / 16));
  EXPECT_FALSE(SinkConfig::running_groups_pay(n, n, std::size_t{1} << 40));
}

TEST(SinkConfig, AFreshTableGivesUpAtOnceOnlyKeysSurelyDistinct) {
  using sink::SinkConfig;
  const std::size_t n = SinkConfig::kEarlyProbeRows;
  const auto groups_of = [n](double keys) { return static_cast<std::size_t>(keys * -std::expm1(-double(n) / keys)); };
  EXPECT_FALSE(SinkConfig::surely_distinct(n - 1, n - 1, 0));           // before the probe
  EXPECT_TRUE(SinkConfig::surely_distinct(n, n, 0));                    // no repeat, rows untold
  EXPECT_TRUE(SinkConfig::surely_distinct(n, n, 10'000'000 / 16));      // q10 at 10^7 rows, 16 threads
  EXPECT_TRUE(SinkConfig::surely_distinct(n, n - 2, 10'000'000 / 2));   // two repeats, 2 threads
  EXPECT_FALSE(SinkConfig::surely_distinct(n, groups_of(1e6), 0));      // ~134 repeats: left to the probe
  EXPECT_FALSE(SinkConfig::surely_distinct(n, groups_of(3e6), 0));      // ~45 repeats: the same
  EXPECT_FALSE(SinkConfig::surely_distinct(n, n, 1'000'000'000 / 16));  // q3 at 10^9 rows, none seen
  EXPECT_FALSE(SinkConfig::surely_distinct(n, groups_of(1e7), 1'000'000'000 / 16));
  EXPECT_FALSE(SinkConfig::surely_distinct(n, n, 100'000'000 / 2));  // a table to see 5·10^7 rows
}

TEST(GroupBySink, SurelyDistinctKeysAreGivenUpInAFreshTablesFirstRows) {
  // Chunks past twice the early probe, keys drawn from 2^40 values: the first chunk folded gives the
  // running groups up after its first kEarlyProbeRows rows; the answer stays tandem::groupby's,
  // on one thread and on four, with the rows to expect told or not.
  const std::size_t chunk = 3 * sink::SinkConfig::kEarlyProbeRows, rows = 12 * chunk;
  std::mt19937_64 rng(43);
  Table t;
  std::vector<std::int64_t> k(rows);
  for (auto& x : k) x = static_cast<std::int64_t>(rng() >> 24);
  t.add(make_column("k", std::move(k)));
  t.add(random_column(rng, "s", ColumnType::str, rows, 5, 0.0));
  t.add(random_column(rng, "v", ColumnType::f64, rows, 1000, 0.1));
  const GroupBySpec spec{{"k", "s"}, parse_aggregations("count(),sum(v),mean(v),max(v)")};
  const Table want = whole(t, spec).table;
  for (const int threads : {1, 4}) {
    GroupBySinkOptions options;
    options.threads = threads;
    options.expected_rows = threads == 1 ? 0 : rows;
    const auto got = run_sink(spec, chunks_of(t, std::vector<std::size_t>(12, chunk)), options, threads);
    expect_same(got.table, want, spec, fmt::format("distinct keys, {} thread(s)", threads));
    if (HasFatalFailure()) return;
    EXPECT_NE(got.report.explain().find("mostly distinct in a chunk's first 16384 rows"), std::string::npos)
        << got.report.explain();
  }
}

TEST(GroupBySink, KeysThatRepeatOnlyOverTheWholeInputKeepTheirRunningGroups) {
  // 1.5·10^6 keys in 52 chunks of 2^17 rows: each chunk's keys look distinct (96 %), but every
  // key comes 4.5 times over the input. Told the rows to expect, the sink keeps its table.
  const std::size_t chunk = sink::SinkConfig::kRunningProbeRows, keys = 1'500'000, rows = 52 * chunk;
  std::mt19937_64 rng(7);
  std::vector<std::int64_t> k(rows);
  for (auto& x : k) x = static_cast<std::int64_t>(rng() % keys);
  Table t;
  t.add(make_column("k", std::move(k)));
  const GroupBySpec spec{{"k"}, parse_aggregations("count()")};
  const Table want = whole(t, spec).table;
  GroupBySinkOptions options;
  options.threads = 1;
  options.expected_rows = rows;  // untold, the table is given up (MostlyDistinctKeys... above)
  const auto got = run_sink(spec, chunks_of(t, std::vector<std::size_t>(52, chunk)), options, 1);
  expect_same(got.table, want, spec, "keys that repeat over the input");
  bool gave_up = false;
  for (const auto& stage : got.report.stages) gave_up |= stage.detail.find("mostly distinct") != std::string::npos;
  EXPECT_FALSE(gave_up) << got.report.explain();
}

TEST(GroupBySink, ALargeTableConsumedInSlicesOnSeveralThreads) {
  // Two slices of 2^20 rows and more on four threads, then a small table whole: the chunk indices
  // follow on, and the answer is the whole table's.
  std::mt19937_64 rng(11);
  const std::size_t rows = 2 * sink::kSliceRows + 3;
  Table t;
  t.add(random_column(rng, "k", ColumnType::i64, rows, 5000, 0.01));
  t.add(random_column(rng, "v", ColumnType::i64, rows, 1000, 0.1));
  const GroupBySpec spec{{"k"}, parse_aggregations("sum(v),count(),min(v)")};
  const Table small = rows_of(t, 0, 10);
  GroupBySink sink(spec);
  std::size_t next = 0;
  sink::consume_in_slices(sink, next, t, 4);
  EXPECT_EQ(next, 2u);
  sink::consume_in_slices(sink, next, small, 4);
  EXPECT_EQ(next, 3u);
  Table both = concat_tables({t, small}, t);
  expect_same(sink.finish().table, whole(both, spec).table, spec, "slices");
}

TEST(GroupByEngine, AResultInPiecesIsTheWholeResultCutInKeyOrder) {
  std::mt19937_64 rng(45);
  const std::size_t rows = 5000;
  Table t;
  t.add(random_column(rng, "k", ColumnType::str, rows, 700, 0.02));
  t.add(random_column(rng, "v", ColumnType::f64, rows, 100, 0.1));
  const GroupBySpec spec{{"k"}, parse_aggregations("sum(v),median(v),count()")};
  Report report;
  const Table want = cpu_groupby::run(t, spec, 2, report);
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, want.rows(), want.rows() + 1}) {
    std::vector<Table> got;
    cpu_groupby::run_in_pieces(t, spec, 2, report, piece, [&](Table p) { got.push_back(std::move(p)); });
    ASSERT_EQ(got.size(), (want.rows() + piece - 1) / piece);
    for (const Table& p : got) EXPECT_LE(p.rows(), piece);
    expect_same(concat_tables(got, want), want, spec, fmt::format("pieces of {}", piece));
    if (HasFatalFailure()) return;
  }
  const Table none = rows_of(t, 0, 0);
  std::size_t calls = 0;
  cpu_groupby::run_in_pieces(none, spec, 2, report, 7, [&](Table p) {
    ++calls;
    EXPECT_EQ(p.rows(), 0u);
    EXPECT_EQ(p.num_columns(), want.num_columns());
  });
  EXPECT_EQ(calls, 1u);
}

TEST(GroupBySink, TwoThreadsOfMostlyTheSameKeysMergeIntoTheLargerTable) {
  // 40 thousand keys over 240 thousand rows on two consuming threads: each thread meets nearly
  // every key, so the smaller running groups go into the larger; the answer is the engine's.
  std::mt19937_64 rng(44);
  const std::size_t rows = 240'000;
  Table t;
  t.add(random_column(rng, "k0", ColumnType::i64, rows, 40000, 0.01));
  t.add(random_column(rng, "k1", ColumnType::str, rows, 2, 0.01));
  t.add(random_column(rng, "v", ColumnType::i64, rows, 1000, 0.1));
  t.add(random_column(rng, "w", ColumnType::f64, rows, 1000, 0.1));
  for (const char* aggs : {"sum(v),mean(w),min(v),max(w),count(w),count()", "sum(w)"}) {
    const GroupBySpec spec{{"k0", "k1"}, parse_aggregations(aggs)};
    const auto got = run_sink(spec, chunks_of(t, sizes(11, rows / 12)), {}, 2);
    expect_same(got.table, whole(t, spec).table, spec, aggs);
    if (HasFatalFailure()) return;
    std::string details;
    for (const auto& stage : got.report.stages) details += stage.detail + "\n";
    EXPECT_NE(details.find("merged into the largest"), std::string::npos) << details;
  }
}

TEST(GroupBySink, ManyStringKeyedGroupsAreCombinedByPartition) {
  // 150 thousand key pairs with a string key, missing keys and values, consumed by four threads:
  // their running groups hand the combine some 10^5 partial groups, which it folds partition by
  // partition and puts in key order. With var (moments combined over every partial row) the
  // engine combines them instead; integer keys alone go by partition only when merged straight from
  // the running groups.
  std::mt19937_64 rng(43);
  const std::size_t rows = 240'000;
  Table t;
  t.add(random_column(rng, "k0", ColumnType::i64, rows, 50000, 0.01));
  t.add(random_column(rng, "k1", ColumnType::str, rows, 3, 0.01));
  for (const auto type : {ColumnType::i32, ColumnType::i64, ColumnType::u64, ColumnType::f64})
    t.add(random_column(rng, fmt::format("v_{}", to_string(type)), type, rows, 1000, 0.1));
  t.add(random_column(rng, "s", ColumnType::str, rows, 50, 0.1));
  // Without kept rows, the running groups are merged partition by partition.
  struct Case {
    GroupBySpec spec;
    bool by_partition, merged;
  };
  const std::vector<Case> cases = {
      {{{"k0", "k1"},
        parse_aggregations("sum(v_i32),sum(v_i64),sum(v_u64),mean(v_f64),min(v_i64),max(v_f64),count(s),count()")},
       true,
       true},
      {{{"k1", "k0"}, parse_aggregations("mean(v_i32),median(v_f64)")}, true, false},
      {{{"k1", "k0"}, parse_aggregations("sum(v_f64),var(v_i32),count(v_u64)")}, false, false},
      {{{"k0"}, parse_aggregations("sum(v_i64),mean(v_f64)")}, true, true},
      {{{"k0"}, parse_aggregations("sum(v_i64),median(v_f64)")}, false, false}};
  for (const auto& [spec, by_partition, merged] : cases) {
    const auto got = run_sink(spec, chunks_of(t, sizes(11, rows / 12)), {}, 4);
    const std::string what = fmt::format("by {} with {}", spec.by.front(), spec.aggs.size());
    expect_same(got.table, whole(t, spec).table, spec, what);
    if (HasFatalFailure()) return;
    std::string details;
    for (const auto& stage : got.report.stages) details += stage.detail + "\n";
    EXPECT_EQ(details.find("partition by partition") != std::string::npos, by_partition) << what << "\n" << details;
    EXPECT_EQ(details.find("straight from the running groups") != std::string::npos, merged) << what << "\n" << details;
  }
}

namespace {

// Running groups' partial groups of keys k and j, the same in any row order.
void expect_same_groups(const Table& got_groups, const Table& want_groups) {
  SortSpec order;
  order.by = {{"k"}, {"j"}};
  const Table want = tandem::sort(want_groups, order).table;
  const Table got = tandem::sort(got_groups, order).table;
  ASSERT_EQ(got.rows(), want.rows());
  ASSERT_EQ(got.num_columns(), want.num_columns());
  for (std::size_t c = 0; c < want.num_columns(); ++c)
    for (std::size_t r = 0; r < want.rows(); ++r) {
      const Value x = cell(got.column(c), r), y = cell(want.column(c), r);
      const bool same = x.present == y.present && x.i == y.i && x.u == y.u && x.s == y.s &&
                        (x.f == y.f || (std::isnan(x.f) && std::isnan(y.f)) ||
                         std::abs(x.f - y.f) <= 1e-9 * std::abs(y.f));  // float sums: rounding
      ASSERT_TRUE(same) << "column " << want.column(c).name << " row " << r;
    }
}

Table keyed_rows(std::mt19937_64& rng, std::size_t rows, std::size_t keys) {
  Table t;
  t.add(random_column(rng, "k", ColumnType::str, rows, keys, 0.01));
  t.add(random_column(rng, "j", ColumnType::i32, rows, 3, 0.01));
  t.add(random_column(rng, "v", ColumnType::i64, rows, 1000, 0.1));
  t.add(random_column(rng, "w", ColumnType::f64, rows, 1000, 0.1));
  return t;
}

// keyed_rows' groups by k and j with the decomposable aggregations running groups merge.
struct KeyedPlan {
  explicit KeyedPlan(const Table& t)
      : plan(sink::plan_sink({{"k", "j"}, parse_aggregations("sum(v),min(v),max(w),mean(w),count(v),count()")})),
        input(sink::engine_input(t, plan)) {}
  sink::SinkPlan plan;
  Table input;  // every row's engine_input
};

}  // namespace

TEST(GroupBySink, RunningGroupsAbsorbATableOfMostlyTheirKeys) {
  // A table over the first half of the rows takes in one over the second half (the same keys,
  // long string keys among them): the groups of one table over every row, on 1 and 3 threads.
  // A table of other keys is declined and leaves both unchanged.
  std::mt19937_64 rng(21);
  const std::size_t rows = 40'000;
  const Table t = keyed_rows(rng, rows, 3000);
  const KeyedPlan keyed(t);
  const auto& [plan, input] = keyed;
  for (const int threads : {1, 3}) {
    sink::RunningGroups whole_groups(plan, input), a(plan, input), b(plan, input);
    whole_groups.add(input);
    a.add(sink::engine_input(rows_of(t, 0, rows / 2), plan));
    b.add(sink::engine_input(rows_of(t, rows / 2, rows), plan));
    const std::size_t b_groups = b.groups();
    ASSERT_TRUE(a.absorb(b, threads, 0.25));
    EXPECT_EQ(a.groups(), whole_groups.groups());
    EXPECT_EQ(b.groups(), b_groups);  // unchanged
    expect_same_groups(a.take(), whole_groups.take());
    if (HasFatalFailure()) return;
  }
  const Table first = rows_of(t, 0, 1000);
  Table other;
  other.add(random_column(rng, "k", ColumnType::str, 1000, 500, 0.0));  // keys of another pool
  for (const char* c : {"j", "v", "w"}) other.add(first.column(c));
  sink::RunningGroups a(plan, input), c(plan, input);
  a.add(sink::engine_input(first, plan));
  c.add(sink::engine_input(other, plan));
  const std::size_t before = a.groups();
  EXPECT_FALSE(a.absorb(c, 2, 0.25));
  EXPECT_EQ(a.groups(), before);
}

TEST(GroupBySink, RunningGroupsMergePartitionByPartition) {
  // Two tables over the first third and the rest of the rows, merged partition by partition (by
  // the top bits of each key's hash) into a third, hold the groups one table over every row holds.
  std::mt19937_64 rng(9);
  const std::size_t rows = 30'000;
  const Table t = keyed_rows(rng, rows, 5000);
  const KeyedPlan keyed(t);
  const auto& [plan, input] = keyed;
  const Table first = sink::engine_input(rows_of(t, 0, rows / 3), plan);
  const Table second = sink::engine_input(rows_of(t, rows / 3, rows), plan);
  sink::RunningGroups whole_groups(plan, input), a(plan, input), b(plan, input), merged(plan, input);
  whole_groups.add(input);
  a.add(first);
  b.add(second);
  const int bits = 5;
  const sink::GroupPartitions pa = a.partitions(bits), pb = b.partitions(bits);
  ASSERT_EQ(pa.starts.size(), (std::size_t{1} << bits) + 1);
  ASSERT_EQ(pa.starts.back(), a.groups());
  ASSERT_EQ(pb.starts.back(), b.groups());
  for (std::size_t p = 0; p + 1 < pa.starts.size(); ++p) {
    for (const auto* part : {&pa, &pb}) {
      const std::span<const std::uint32_t> ids(part->ids.data() + part->starts[p],
                                               part->starts[p + 1] - part->starts[p]);
      EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
      merged.merge(part == &pa ? a : b, ids);
    }
  }
  EXPECT_EQ(merged.rows(), a.groups() + b.groups());
  expect_same_groups(merged.take(), whole_groups.take());
  if (HasFatalFailure()) return;
  // Table a's groups, row g for group g: each partition's ids hash to it.
  const Table groups_a = a.take();
  std::vector<std::uint64_t> hashes(groups_a.rows());
  const std::vector<std::size_t> keys{0, 1};
  hash_rows(groups_a, keys, hashes);
  for (std::size_t p = 0; p + 1 < pa.starts.size(); ++p)
    for (std::size_t j = pa.starts[p]; j < pa.starts[p + 1]; ++j) ASSERT_EQ(hashes[pa.ids[j]] >> (64 - bits), p);
}

TEST(GroupBySink, ArenaRoomIsAlignedApartAndOutlivesTheArena) {
  // Four threads take rooms of 1 byte to 9 MiB (past a quarter block: a block of its own) and
  // fill each with their own byte; every room is 64-byte aligned, none overlaps another, and
  // each still holds its bytes after the arena is gone (its blocks live on in the buffers).
  std::vector<Buffer> buffers[4];
  std::vector<std::size_t> sizes_seen[4];
  {
    sink::PieceArena arena;
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t)
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(t);
        for (int i = 0; i < 40; ++i) {
          const std::size_t n = i % 13 == 0 ? (std::size_t{9} << 20) : 1 + rng() % (1 << 20);
          buffers[t].push_back(sink::filled_buffer<std::uint8_t>(&arena, n, [&](std::uint8_t* p) {
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
            std::memset(p, 'a' + t, n);
          }));
          sizes_seen[t].push_back(n);
        }
      });
    for (auto& th : pool) th.join();
  }
  for (int t = 0; t < 4; ++t)
    for (std::size_t i = 0; i < buffers[t].size(); ++i) {
      const Buffer& b = buffers[t][i];
      ASSERT_EQ(b.size(), sizes_seen[t][i]);
      const auto bytes = b.as<std::uint8_t>();
      ASSERT_TRUE(std::all_of(bytes.begin(), bytes.end(), [&](std::uint8_t c) { return c == 'a' + t; }))
          << "thread " << t << " room " << i << " was written by another";
    }
}

TEST(GroupBySink, GeneratedBenchmarkDataInSixteenChunks) {
  GroupByDataSpec data;
  data.rows = 100'000;
  data.k = 10;
  data.nas_percent = 5;
  const Table t = generate_groupby_table(data);
  const std::vector<GroupBySpec> specs = {
      {{"id1"}, parse_aggregations("sum(v1)")},
      {{"id3"}, parse_aggregations("sum(v1),mean(v3)")},
      {{"id2", "id4"}, parse_aggregations("median(v3),std(v3)")},
      {{"id6"}, parse_aggregations("top(v3,2)")},
      {{"id1", "id2", "id3", "id4", "id5", "id6"}, parse_aggregations("sum(v3),count()")}};
  for (const auto& spec : specs) {
    expect_same(run_sink(spec, chunks_of(t, sizes(15, t.rows() / 16))).table, whole(t, spec).table, spec,
                spec.by.front());
  }
}

TEST(GroupBySink, TheSignalCleanupRemovesTheSpillFolder) {
  std::mt19937_64 rng(41);
  const Table t = random_table(rng, 500, 1, 0.0);
  const TempDir dir;
  GroupBySinkOptions tiny;
  tiny.memory_limit = 1;
  tiny.temp_dir = dir.path.string();
  GroupBySink sink(spec_of(t, {aggregation(AggOp::median, "v_f64")}), tiny);
  sink.consume(0, t);
  ASSERT_GT(files_in(dir.path.string()), 0u);
  io::remove_temporaries();  // what the CLI's SIGINT/SIGTERM handler calls
  EXPECT_EQ(files_in(dir.path.string()), 0u);
}

TEST(CombinePlan, RanksCombineOnlyWhatNeedsNoRowOrder) {
  for (const char* text : {"count(),count(v),sum(v),min(v),max(v)", "mean(v)"}) {
    const auto plan = plan_combine(parse_aggregations(text));
    EXPECT_TRUE(plan.combinable) << text;
    EXPECT_TRUE(plan.kept.empty() && plan.as_f64.empty()) << text;
  }
  const auto mean = plan_combine(parse_aggregations("mean(v)"));
  ASSERT_EQ(mean.partial.size(), 2u);
  EXPECT_EQ(mean.partial[0].op, AggOp::sum);
  EXPECT_EQ(mean.partial[0].column, "v");
  EXPECT_EQ(mean.outputs[0].kind, CombinePlan::Output::Kind::mean);
  for (const char* text : {"first(v)", "last(v)", "var(v)", "std(v)", "median(v)", "nunique(v)", "top(v,2)"})
    EXPECT_FALSE(plan_combine(parse_aggregations(text)).combinable) << text;
}

TEST(GroupBySink, RunningGroupsTakeIntegerAndStringKeysAndOrderFreeStates) {
  const Table t(std::vector<Column>{make_column<std::int64_t>("ki", {1, 2}), make_string_column("ks", {"a", "b"}),
                                    make_column<double>("kf", {0.5, 1.5}), make_column<double>("v", {1, 2}),
                                    make_string_column("s", {"x", "y"})});
  const auto keeps = [&](std::vector<std::string> by, const std::string& aggs) {
    const auto plan = sink::plan_sink({std::move(by), parse_aggregations(aggs)});
    return sink::keeps_running_groups(plan, sink::engine_input(t, plan));
  };
  EXPECT_TRUE(keeps({"ki", "ks"}, "sum(v),mean(v),std(v),min(v),max(v),count(s),count()"));
  EXPECT_FALSE(keeps({"kf"}, "sum(v)")) << "float keys are grouped by the engine's ranks";
  EXPECT_FALSE(keeps({"ki"}, "first(v)")) << "first needs row order";
  EXPECT_FALSE(keeps({"ki"}, "last(v)")) << "last needs row order";
  EXPECT_FALSE(keeps({"ki"}, "min(s)")) << "a string state points into its chunk";
  EXPECT_TRUE(keeps({"ki"}, "median(v),sum(v)")) << "holistic ones are kept rows, beside the running groups";
}

TEST(GroupBySink, RunningGroupsTellKeysApartPastTheirInlineBytes) {
  // Running groups compare a string key's first 12 bytes and its length in one record, the rest
  // in the byte store: keys of 11 to 40 bytes that share those bytes, empty and missing keys.
  const std::vector<std::string> keys = {"",
                                         "prefix-0123",
                                         "prefix-01234",
                                         "prefix-01235",
                                         "prefix-012345",
                                         "prefix-012346",
                                         "prefix-0123456789abcdef",
                                         "prefix-0123456789abcdeg",
                                         "prefix-0123456789abcdef and some forty b",
                                         std::string("prefix-0123\0x", 13)};
  std::mt19937_64 rng(12);
  ColumnBuilder k("k", ColumnType::str), v("v", ColumnType::i64);
  for (int r = 0; r < 5000; ++r) {
    const std::size_t j = rng() % (keys.size() + 1);
    if (j == keys.size()) k.push_missing();
    else k.push_string(keys[j]);
    v.push(static_cast<std::int64_t>(rng() % 1000));
  }
  const Table t(std::vector<Column>{k.finish(), v.finish()});
  const GroupBySpec spec{{"k"}, {aggregation(AggOp::sum, "v"), aggregation(AggOp::count_rows)}};
  const auto got = run_sink(spec, chunks_of(t, odd_sizes(rng, t.rows())));
  EXPECT_EQ(got.table.rows(), keys.size() + 1);
  expect_same(got.table, whole(t, spec).table, spec, "shared inline bytes");
}

TEST(GroupBySink, RunningGroupsClearedHoldOnlyTheRowsAddedAfter) {
  // clear() drops the groups without checking their sums: two rows whose i64 sum overflows are
  // dropped quietly (take() would throw), and a range of a later table is folded alone.
  const std::int64_t big = std::int64_t{1} << 62;
  const Table first(
      std::vector<Column>{make_column<std::int64_t>("k", {7, 7, 8}), make_column<std::int64_t>("v", {big, big, 1})});
  const Table later(
      std::vector<Column>{make_column<std::int64_t>("k", {7, 9, 9, 10}), make_column<std::int64_t>("v", {5, 1, 2, 4})});
  const GroupBySpec spec{{"k"}, parse_aggregations("sum(v),count()")};
  const auto plan = sink::plan_sink(spec);
  sink::RunningGroups g(plan, sink::engine_input(first, plan));
  g.add(sink::engine_input(first, plan));
  EXPECT_EQ(g.groups(), 2u);
  g.clear();
  EXPECT_EQ(g.groups(), 0u);
  EXPECT_EQ(g.rows(), 0u);
  g.add(sink::engine_input(later, plan), 1, 3);  // rows 1 and 2: key 9 twice
  const Table got = g.take();
  ASSERT_EQ(got.rows(), 1u);
  EXPECT_EQ(got.column("k").numbers<std::int64_t>()[0], 9);
  g.add(sink::engine_input(first, plan));
  EXPECT_THROW((void)g.take(), InputError) << "take() checks the sums";
}

TEST(GroupBySink, RunningGroupsKeepTheirGroupsWhenRoomIsReservedBetweenChunks) {
  // reserve() places the groups already held in a bigger table: later rows must find them.
  std::mt19937_64 rng(7);
  const std::size_t rows = 20'000;
  Table t;
  t.add(random_column(rng, "k", ColumnType::str, rows, 3000, 0.01));
  t.add(random_column(rng, "v", ColumnType::i64, rows, 1000, 0.1));
  const GroupBySpec spec{{"k"}, parse_aggregations("sum(v),count()")};
  const auto plan = sink::plan_sink(spec);
  const Table first = sink::engine_input(rows_of(t, 0, rows / 2), plan);
  const Table second = sink::engine_input(rows_of(t, rows / 2, rows), plan);
  sink::RunningGroups g(plan, first);
  g.add(first);
  const std::size_t held = g.groups();
  g.reserve(held);  // no more than held: nothing to do
  g.reserve(50'000);
  EXPECT_EQ(g.groups(), held);
  g.add(second);
  SortSpec order;
  order.by.push_back({"k"});
  const Table got = tandem::sort(g.take(), order).table;
  const Table want = whole(t, spec).table;
  ASSERT_EQ(got.rows(), want.rows());
  ASSERT_EQ(got.num_columns(), want.num_columns() + 1) << "the partial groups add their row count";
  for (std::size_t c = 0; c < want.num_columns(); ++c)
    for (std::size_t r = 0; r < want.rows(); ++r) {
      const Value x = cell(got.column(c), r), y = cell(want.column(c), r);
      ASSERT_TRUE(x.present == y.present && x.i == y.i && x.s == y.s) << "column " << c << " row " << r;
    }
  EXPECT_EQ(g.groups(), 0u) << "take() leaves the groups empty";
}

TEST(CombinePlan, ChunksCombineEveryAggregationOrKeepItsRows) {
  const auto plan =
      plan_combine(parse_aggregations("first(v),var(v),mean(v),median(w),top(w,2),count()"), CombineTarget::chunks);
  ASSERT_TRUE(plan.combinable);
  using Kind = CombinePlan::Output::Kind;
  ASSERT_EQ(plan.outputs.size(), 7u);  // top(w,2): two outputs
  EXPECT_EQ(plan.outputs[0].kind, Kind::column);
  EXPECT_EQ(plan.outputs[1].kind, Kind::var);
  EXPECT_EQ(plan.outputs[2].kind, Kind::mean);
  EXPECT_EQ(plan.outputs[3].kind, Kind::kept);
  EXPECT_EQ(plan.outputs[5].name, "top2_w");
  ASSERT_EQ(plan.kept.size(), 2u);
  EXPECT_EQ(plan.as_f64, std::vector<std::string>{"v"});
  EXPECT_EQ(plan.partial[4].column, as_f64_name("v"));  // mean's partial sum reads the f64 copy
}

TEST(GroupBySink, NoKeysGiveOneGroupSpilledOrNot) {
  std::mt19937_64 rng(43);
  const Table t = random_table(rng, 700, 0, 0.0);
  const auto spec = spec_of(t, random_aggregations(rng, t, 1.0));
  ASSERT_TRUE(spec.by.empty());
  const TempDir dir;
  GroupBySinkOptions tiny;
  tiny.memory_limit = 1;
  tiny.temp_dir = dir.path.string();
  const Table want = whole(t, spec).table;
  expect_same(run_sink(spec, chunks_of(t, odd_sizes(rng, 700))).table, want, spec, "in memory");
  expect_same(run_sink(spec, chunks_of(t, odd_sizes(rng, 700)), tiny).table, want, spec, "spilled");
  EXPECT_EQ(files_in(dir.path.string()), 0u);
}
