// dist::groupby equals a plain group-by of every rank's rows together, partitioned (each group
// on one rank) and gathered on rank 0, for aggregations that combine and ones that do not.
#include <gtest/gtest.h>

#include <memory>

#include "dist_helpers.hpp"
#include "groupby_reference.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"

namespace tandem::dist::test {
namespace {

// Every rank's table, rows in rank order, on every rank.
Table gather_table(const Table& t) {
  std::vector<std::byte> mine;
  if (t.rows() > 0) write_table(t, mine);
  auto all = std::make_shared<std::vector<std::byte>>(gather_all(mine, MPI_COMM_WORLD));
  return read_tables(all, t);
}

// Rows of a result ordered by its keys (the partitions joined, then grouped again with first()).
Table ordered(const Table& t, const std::vector<std::string>& by) {
  GroupBySpec spec{by, {}};
  for (const Column& c : t.columns())
    if (std::find(by.begin(), by.end(), c.name) == by.end())
      spec.aggs.push_back({AggOp::first, c.name, 0.5, 1, c.name});
  return tandem::groupby(t, spec).table;
}

// id_pool > 0: a third key, k_id, of that many values (about a group per row when it is large).
Table shard(int rank, std::size_t rows, double missing, std::size_t id_pool = 0) {
  std::mt19937_64 rng(99 + std::uint64_t(rank));
  using groupby_test::random_column;
  std::vector<Column> cols;
  cols.push_back(random_column(rng, "k_str", ColumnType::str, rows, 6, missing));
  cols.push_back(random_column(rng, "k_int", ColumnType::i32, rows, 5, missing));
  if (id_pool) cols.push_back(random_column(rng, "k_id", ColumnType::i64, rows, id_pool, missing));
  cols.push_back(random_column(rng, "v_int", ColumnType::i64, rows, 1000, missing));
  cols.push_back(random_column(rng, "v_f64", ColumnType::f64, rows, 50, missing));
  return Table(std::move(cols));
}

// The path dist::groupby says it took, from its report's notes: "partial groups", "rows shuffled
// as they are" or "" (aggregations that do not combine).
std::string path_taken(const GroupByResult& r) {
  for (const std::string& n : r.report.report.notes)
    for (const char* path : {"partial groups on each rank", "rows shuffled as they are"})
      if (n.find(path) != std::string::npos) return path;
  return "";
}

void check(const std::string& aggs, std::size_t rows_per_rank, double missing, bool empty_odd_ranks = false,
           std::size_t id_pool = 0, const std::string& want_path = "") {
  const Context& ctx = context();
  SCOPED_TRACE(aggs);
  const std::size_t rows = empty_odd_ranks && ctx.rank() % 2 == 1 ? 0 : rows_per_rank + 13 * std::size_t(ctx.rank());
  const Table mine = shard(ctx.rank(), rows, missing, id_pool);
  const Table all = gather_table(mine);
  GroupBySpec spec{{"k_str", "k_int"}, parse_aggregations(aggs)};
  if (id_pool) spec.by.push_back("k_id");
  const auto want = groupby_test::reference_groupby(all, spec);
  const Table single = tandem::groupby(all, spec).table;

  const GroupByResult partitioned = dist::groupby(ctx, mine, spec);
  if (!want_path.empty()) {
    EXPECT_EQ(path_taken(partitioned), want_path);
  }
  const Table joined = ordered(gather_table(partitioned.table), spec.by);
  groupby_test::expect_matches(joined, want, "partitioned");
  EXPECT_EQ(joined.num_columns(), single.num_columns());
  for (std::size_t c = 0; c < single.num_columns(); ++c) {
    EXPECT_EQ(joined.column(c).name, single.column(c).name);
    EXPECT_EQ(joined.column(c).type, single.column(c).type) << single.column(c).name;
  }

  const GroupByResult gathered = dist::groupby(ctx, mine, spec, {}, true);
  if (ctx.rank() == 0) groupby_test::expect_matches(gathered.table, want, "gathered");
  else EXPECT_EQ(gathered.table.rows(), 0u);
  EXPECT_EQ(gathered.table.num_columns(), single.num_columns());
}

TEST(DistGroupBy, CombinableAggregations) {
  check("count(),count(v_int),sum(v_int),sum(v_f64),min(v_f64),max(v_int),mean(v_f64),mean(v_int),min(k_str)", 3000, 0,
        false, 0, "partial groups on each rank");
}

TEST(DistGroupBy, CombinableAggregationsOfAboutAGroupPerRowShuffleRows) {
  // A key of 10^6 values over a few thousand rows a rank: partial groups would not shrink the
  // rows, so they go to the owners as they are; the answer is the same.
  check("count(),count(v_int),sum(v_int),sum(v_f64),min(v_f64),max(v_int),mean(v_f64),mean(v_int),min(k_str)", 3000, 0,
        false, 1000000, "rows shuffled as they are");
  check("count(),sum(v_int),mean(v_f64),max(v_f64),count(v_f64)", 2000, 0.2, false, 1000000,
        "rows shuffled as they are");
}

TEST(DistGroupBy, CombinableWithMissingValuesAndKeys) {
  check("count(),sum(v_int),mean(v_f64),max(v_f64),count(v_f64)", 2000, 0.2);
}

TEST(DistGroupBy, AggregationsThatDoNotCombineShuffleRows) {
  check("first(v_int),last(v_f64),median(v_f64),nunique(v_int),var(v_f64),quantile(v_f64,0.9),top(v_int,2)", 1500, 0.1);
}

TEST(DistGroupBy, EmptyRanks) {
  check("count(),sum(v_int),mean(v_f64)", 1000, 0, true);
  check("median(v_f64)", 1000, 0, true);
}

TEST(DistGroupBy, MissingColumnOnOneRankFailsEveryRank) {
  const Context& ctx = context();
  const Table mine = shard(ctx.rank(), 100, 0);
  GroupBySpec spec{{"k_str"}, parse_aggregations("sum(v_int)")};
  if (ctx.rank() == ctx.size() - 1) spec.by = {"k_nope"};
  EXPECT_THROW(dist::groupby(ctx, mine, spec), UsageError);
}

TEST(DistGroupBy, DifferentColumnsOnOneRankFailEveryRank) {
  const Context& ctx = context();
  if (ctx.size() == 1) GTEST_SKIP() << "needs two ranks";
  Table mine = shard(ctx.rank(), 100, 0);
  if (ctx.rank() == 1) mine.add(make_column<double>("extra", std::vector<double>(100, 1.0)));
  try {
    dist::groupby(ctx, mine, {{"k_str"}, parse_aggregations("sum(v_int)")});
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 1: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("extra f64"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::dist::test
