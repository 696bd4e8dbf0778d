// Group-by over tables: several key columns (numbers or strings), several aggregations per
// value column, missing values skipped as in SQL.
//
//   tandem::GroupBySpec spec{.by = {"id1", "id2"},
//                            .aggs = tandem::parse_aggregations("sum(v1),mean(v3),count()")};
//   auto r = tandem::groupby(table, spec);   // r.table: id1, id2, sum_v1, mean_v3, count
//
// The result has one row per distinct key combination, sorted by the keys (numbers ascending,
// strings by bytes; NaN after every number; a missing key forms its own group, sorted last).
// Keys compare by value: -0.0 and +0.0 are one group (shown as 0), all NaNs are one group.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tandem/core/report.hpp"
#include "tandem/core/types.hpp"
#include "tandem/table.hpp"

namespace tandem {

enum class AggOp : std::uint8_t {
  count_rows,  // count(): rows in the group
  count,       // count(col): present values
  sum,
  mean,
  min,
  max,
  var,       // sample variance (n - 1), as pandas and SQL's var_samp
  std,       // sample standard deviation
  first,     // first present value in row order
  last,      // last present value in row order
  nunique,   // distinct present values
  median,    // exact
  quantile,  // exact, linear interpolation between order statistics (pandas' default)
  top,       // the n largest values: columns top1_col … topn_col
};

std::string_view to_string(AggOp op);

struct Aggregation {
  AggOp op{AggOp::count_rows};
  std::string column;  // empty for count()
  double q{0.5};       // quantile's q in [0, 1]
  std::size_t n{1};    // top's n (>= 1)
  std::string name;    // output column name; empty: "count", "sum_v1", "q0.9_v3", "top1_v3"…
};

// Parses "sum(v1),mean(v3),count(),quantile(v3,0.9),top(v3,2)"; an optional " as name" after a
// call renames its output (top's n outputs become name1 … namen). UsageError naming the part
// that does not parse.
std::vector<Aggregation> parse_aggregations(std::string_view text);

// The output column name(s) of one aggregation (top gives n names).
std::vector<std::string> output_names(const Aggregation& a);

struct GroupBySpec {
  std::vector<std::string> by;
  std::vector<Aggregation> aggs;
};

// Which GPU engine groups a device table. The hash engine (hot keys in shared memory, or
// direct-indexed accumulators for keys of a small range) applies to one integer key column and
// count(), count, sum, min, max and mean of at most one f64 or i64 column, with no missing values
// in either; the table engine runs every key and aggregation. auto_: the hash engine for counts
// only (where it was measured faster in every case), else the table engine. hash: UsageError
// saying why where it does not apply. The report says which ran and why.
enum class GpuGroupByEngine : std::uint8_t { auto_, table, hash };

struct GroupByOptions {
  Device device{Device::auto_};
  int threads{0};  // CPU threads (0: every core the process may use)
  GpuGroupByEngine gpu_engine{GpuGroupByEngine::auto_};
};

// Output types: count, count_rows, nunique → i64; sum of signed integers → i64 and of unsigned
// → u64 (InputError naming the column when a group's sum does not fit; the total is exact, so
// the answer does not depend on the order rows are added in); sum of floats → f64; mean, var,
// std, median, quantile → f64; min, max, first, last, top → the input column's type. A group
// whose inputs are all missing gets a missing result (count and nunique → 0); var and std need
// two values. NaN is a value, not a missing one: sum, mean, var and std propagate it; min and max
// skip it unless every value is NaN (and put -0.0 below +0.0), as the GPU engine does; median,
// quantile, top and nunique order values as keys are ordered (NaN after every number, -0.0 equal
// to +0.0). min, max, first, last, count and nunique also take strings (min and max by bytes).
struct GroupByResult {
  Table table;
  Report report;
};

// UsageError when a named column is absent or an aggregation does not apply to its type (sum of
// strings, say); InputError for data it cannot aggregate (an overflowing integer sum).
GroupByResult groupby(const Table& input, const GroupBySpec& spec, const GroupByOptions& options = {});

// The data of the public db-benchmark group-by task (H2O.ai's, now kept by DuckDB Labs):
//   id1, id2: 'id%03d' of 1..k      id3: 'id%010d' of 1..rows/k      (strings)
//   id4, id5: 1..k                  id6: 1..rows/k                    (i32)
//   v1: 1..5   v2: 1..15 (i32)      v3: uniform(0, 100) rounded to 6 decimals (f64)
// each drawn uniformly with replacement. nas_percent: that share of each id column's distinct
// values becomes missing wherever it occurs, and each v value is missing with that probability.
// sorted: rows ordered by id1…id6. The same seed gives the same table on any thread count.
// total_rows > 0: the `rows` rows from first_row on of the table of total_rows rows (a rank's
// share of one table, made without the rest of it); not with sorted.
struct GroupByDataSpec {
  std::size_t rows{10'000'000};
  std::size_t k{100};
  double nas_percent{0};
  bool sorted{false};
  std::uint64_t seed{1};
  std::size_t first_row{0};
  std::size_t total_rows{0};
};
Table generate_groupby_table(const GroupByDataSpec& spec);

}  // namespace tandem
