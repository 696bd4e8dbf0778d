// A plain group-by for the tests: a std::map from key tuples to the group's row indices, then
// every aggregation computed from the group's values in row order with wide arithmetic. Also
// random tables with awkward keys and values, and a cell-by-cell comparison of result tables.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "groupby/ops/registry.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table.hpp"

namespace groupby_test {

using namespace tandem;

// One cell of any column type.
struct Value {
  bool present{false};
  ColumnType type{ColumnType::i64};
  std::int64_t i{0};
  std::uint64_t u{0};
  double f{0};
  std::string s;
};

inline Value cell(const Column& c, std::size_t row) {
  Value v;
  v.type = c.type;
  v.present = c.present(row);
  if (!v.present) return v;
  switch (c.type) {
    case ColumnType::i32: v.i = c.numbers<std::int32_t>()[row]; break;
    case ColumnType::i64: v.i = c.numbers<std::int64_t>()[row]; break;
    case ColumnType::u32: v.u = c.numbers<std::uint32_t>()[row]; break;
    case ColumnType::u64: v.u = c.numbers<std::uint64_t>()[row]; break;
    case ColumnType::f32: v.f = c.numbers<float>()[row]; break;
    case ColumnType::f64: v.f = c.numbers<double>()[row]; break;
    case ColumnType::str: v.s = std::string(c.string(row)); break;
  }
  return v;
}

inline bool is_signed_int(ColumnType t) { return t == ColumnType::i32 || t == ColumnType::i64; }

// Key order: numbers by value (-0.0 = 0.0, NaNs equal and last), strings by bytes, missing last.
struct KeyPart {
  bool missing;
  std::uint64_t ord;
  std::string s;
  auto operator<=>(const KeyPart&) const = default;
};

inline double normalise(double x) { return std::isnan(x) ? NAN : x == 0 ? 0.0 : x; }

inline KeyPart key_part(const Value& v) {
  if (!v.present) return {true, 0, {}};
  if (v.type == ColumnType::str) return {false, 0, v.s};
  if (is_signed_int(v.type)) return {false, to_ordered(v.i), {}};
  if (is_integer(v.type)) return {false, v.u, {}};
  return {false, to_ordered(normalise(v.f)), {}};
}

inline bool value_before(const Value& a, const Value& b) { return key_part(a) < key_part(b); }

// An expected result cell; approx: floats may differ by rounding (sums in another order).
struct Expected {
  Value v;
  bool approx{false};
};

inline Expected missing_cell(ColumnType t) {
  Expected e;
  e.v.type = t;
  return e;
}
inline Expected number_cell(double x, bool approx = true) {
  Expected e{{}, approx};
  e.v.present = true;
  e.v.type = ColumnType::f64;
  e.v.f = x;
  return e;
}
inline Expected int_cell(std::int64_t x) {
  Expected e;
  e.v.present = true;
  e.v.i = x;
  return e;
}

// An aggregation of a column (none for count()).
inline Aggregation aggregation(AggOp op, std::string column = {}) {
  Aggregation a;
  a.op = op;
  a.column = std::move(column);
  return a;
}

struct Overflow {};

// The min/max order of the engines (tandem::agg_less): NaN skipped unless all are NaN,
// -0.0 below +0.0; strings by bytes.
inline bool extreme_better(const Value& a, const Value& b, bool smaller) {
  if (a.type == ColumnType::str) return smaller ? a.s < b.s : b.s < a.s;
  if (is_signed_int(a.type)) return smaller ? a.i < b.i : b.i < a.i;
  if (is_integer(a.type)) return smaller ? a.u < b.u : b.u < a.u;
  if (std::isnan(a.f)) return false;
  if (std::isnan(b.f)) return true;
  if (a.f == b.f) return smaller ? std::signbit(a.f) && !std::signbit(b.f) : !std::signbit(a.f) && std::signbit(b.f);
  return smaller ? a.f < b.f : a.f > b.f;
}

inline double as_double(const Value& v) {
  if (is_signed_int(v.type)) return static_cast<double>(v.i);
  if (is_integer(v.type)) return static_cast<double>(v.u);
  return v.f;
}

inline std::optional<double> quantile(std::vector<Value> v, double q) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end(), value_before);
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(pos);
  const double a = normalise(as_double(v[lo]));
  if (pos == static_cast<double>(lo) || lo + 1 >= v.size()) return a;
  const double b = normalise(as_double(v[lo + 1]));
  return a + (b - a) * (pos - static_cast<double>(lo));
}

inline Expected sum_of(const std::vector<Value>& v, ColumnType t) {
  if (v.empty()) return missing_cell(t);
  if (is_signed_int(t)) {
    __int128 s = 0;
    for (const auto& x : v) s += x.i;
    if (s > INT64_MAX || s < INT64_MIN) throw Overflow{};
    return int_cell(static_cast<std::int64_t>(s));
  }
  if (is_integer(t)) {
    unsigned __int128 s = 0;
    for (const auto& x : v) s += x.u;
    if (s > UINT64_MAX) throw Overflow{};
    Expected e = int_cell(0);
    e.v.type = ColumnType::u64;
    e.v.u = static_cast<std::uint64_t>(s);
    return e;
  }
  double s = -0.0;
  for (const auto& x : v) s += x.f;
  return number_cell(s);
}

inline std::optional<double> variance(const std::vector<Value>& v) {
  if (v.size() < 2) return std::nullopt;
  long double mean = 0;
  for (const auto& x : v) mean += as_double(x);
  mean /= static_cast<long double>(v.size());
  long double ss = 0;
  for (const auto& x : v) ss += (as_double(x) - mean) * (as_double(x) - mean);
  return static_cast<double>(ss / static_cast<long double>(v.size() - 1));
}

// The expected output cells of one aggregation for one group: its rows' values in row order.
inline std::vector<Expected> reference_aggregate(const Aggregation& a, const Column* c,
                                                 const std::vector<std::size_t>& rows) {
  if (a.op == AggOp::count_rows) return {int_cell(static_cast<std::int64_t>(rows.size()))};
  std::vector<Value> v;
  for (auto r : rows)
    if (c->present(r)) v.push_back(cell(*c, r));
  const ColumnType t = c->type;
  const auto opt = [](std::optional<double> x) { return x ? number_cell(*x) : missing_cell(ColumnType::f64); };
  switch (a.op) {
    case AggOp::count: return {int_cell(static_cast<std::int64_t>(v.size()))};
    case AggOp::sum: return {sum_of(v, t)};
    case AggOp::mean: {
      if (v.empty()) return {missing_cell(ColumnType::f64)};
      double s = 0;
      for (const auto& x : v) s += as_double(x);
      return {number_cell(s / static_cast<double>(v.size()))};
    }
    case AggOp::min:
    case AggOp::max: {
      if (v.empty()) return {missing_cell(t)};
      Value best = v[0];
      for (const auto& x : v)
        if (extreme_better(x, best, a.op == AggOp::min)) best = x;
      return {{best, false}};
    }
    case AggOp::var: return {opt(variance(v))};
    case AggOp::std: {
      const auto x = variance(v);
      return {opt(x ? std::optional(std::sqrt(*x)) : std::nullopt)};
    }
    case AggOp::first: return {v.empty() ? missing_cell(t) : Expected{v.front(), false}};
    case AggOp::last: return {v.empty() ? missing_cell(t) : Expected{v.back(), false}};
    case AggOp::nunique: {
      std::set<KeyPart> s;
      for (const auto& x : v) s.insert(key_part(x));
      return {int_cell(static_cast<std::int64_t>(s.size()))};
    }
    case AggOp::median: return {opt(quantile(v, 0.5))};
    case AggOp::quantile: return {opt(quantile(v, a.q))};
    case AggOp::top: {
      std::stable_sort(v.begin(), v.end(), [](const Value& x, const Value& y) { return value_before(y, x); });
      std::vector<Expected> out;
      // approx: -0.0 and +0.0 tie in this order, so either may come first
      for (std::size_t k = 0; k < a.n; ++k) out.push_back(k < v.size() ? Expected{v[k], true} : missing_cell(t));
      return out;
    }
    default: break;
  }
  return {};
}

// The expected result: rows in key order; each row the key cells, then the aggregation cells.
// Throws Overflow when an integer sum overflows.
inline std::vector<std::vector<Expected>> reference_groupby(const Table& t, const GroupBySpec& spec) {
  std::map<std::vector<KeyPart>, std::vector<std::size_t>> groups;
  for (std::size_t r = 0; r < t.rows(); ++r) {
    std::vector<KeyPart> key;
    for (const auto& k : spec.by) key.push_back(key_part(cell(t.column(k), r)));
    groups[key].push_back(r);
  }
  std::vector<std::vector<Expected>> out;
  for (const auto& [key, rows] : groups) {
    std::vector<Expected> row;
    for (const auto& k : spec.by) {
      Value v = cell(t.column(k), rows.front());
      if (is_floating(v.type) && v.present) v.f = normalise(v.f);
      row.push_back({v, false});
    }
    for (const auto& a : spec.aggs) {
      const Column* c = a.op == AggOp::count_rows ? nullptr : &t.column(a.column);
      for (auto& e : reference_aggregate(a, c, rows)) row.push_back(e);
    }
    out.push_back(std::move(row));
  }
  return out;
}

inline bool same_float(double want, double got, bool approx) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (!approx) return want == got && std::signbit(want) == std::signbit(got);
  if (std::isinf(want) || std::isinf(got)) return want == got;
  return std::fabs(want - got) <= 1e-9 * std::max(1.0, std::max(std::fabs(want), std::fabs(got)));
}

// Compares a result table with the reference cell by cell (types: the engine's output types).
inline void expect_matches(const Table& got, const std::vector<std::vector<Expected>>& want, const std::string& what) {
  ASSERT_EQ(got.rows(), want.size()) << what;
  for (std::size_t r = 0; r < want.size(); ++r) {
    ASSERT_EQ(want[r].size(), got.num_columns()) << what;
    for (std::size_t c = 0; c < want[r].size(); ++c) {
      const Value g = cell(got.column(c), r);
      const Expected& e = want[r][c];
      const std::string where = what + ": row " + std::to_string(r) + " column " + got.column(c).name;
      ASSERT_EQ(e.v.present, g.present) << where;
      if (!g.present) continue;
      if (is_floating(g.type)) {
        ASSERT_TRUE(same_float(as_double(e.v), g.f, e.approx))
            << where << ": want " << as_double(e.v) << " got " << g.f;
      } else if (g.type == ColumnType::str) {
        ASSERT_EQ(e.v.s, g.s) << where;
      } else if (is_signed_int(g.type)) {
        ASSERT_EQ(is_signed_int(e.v.type) ? e.v.i : static_cast<std::int64_t>(e.v.u), g.i) << where;
      } else {
        ASSERT_EQ(is_signed_int(e.v.type) ? static_cast<std::uint64_t>(e.v.i) : e.v.u, g.u) << where;
      }
    }
  }
}

// Exactly equal tables (bit for bit in floats), as two runs of one engine must give.
inline void expect_identical(const Table& a, const Table& b, const std::string& what) {
  ASSERT_EQ(a.num_columns(), b.num_columns()) << what;
  ASSERT_EQ(a.rows(), b.rows()) << what;
  for (std::size_t c = 0; c < a.num_columns(); ++c) {
    ASSERT_EQ(a.column(c).name, b.column(c).name) << what;
    ASSERT_EQ(a.column(c).type, b.column(c).type) << what;
    for (std::size_t r = 0; r < a.rows(); ++r) {
      const Value x = cell(a.column(c), r), y = cell(b.column(c), r);
      ASSERT_EQ(x.present, y.present) << what << " row " << r;
      ASSERT_TRUE(x.i == y.i && x.u == y.u && x.s == y.s &&
                  (std::memcmp(&x.f, &y.f, sizeof x.f) == 0 || (std::isnan(x.f) && std::isnan(y.f))))
          << what << ": column " << a.column(c).name << " row " << r;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Random tables.

inline const std::vector<std::string>& awkward_strings() {
  static const std::vector<std::string> s = {"",
                                             "a",
                                             "a,b",
                                             "\"q\"",
                                             "line\nbreak",
                                             "\xc3\xa9t\xc3\xa9",
                                             "b",
                                             "ab",
                                             std::string("a\0b", 3),
                                             "id001",
                                             "a much longer string than sixteen bytes",
                                             "zz",
                                             " ",
                                             "\t,\r\n"};
  return s;
}

inline std::vector<double> awkward_doubles() {
  return {0.0, -0.0, 1.5, -2.25, NAN, -NAN, INFINITY, -INFINITY, 1e300, 3.0, 7.0};
}

// A column of `type` drawing from `pool` distinct values (numbers) or strings; missing with
// probability `missing`.
inline Column random_column(std::mt19937_64& rng, const std::string& name, ColumnType type, std::size_t n,
                            std::size_t pool, double missing, bool long_strings = true) {
  std::uniform_real_distribution<double> unit(0, 1);
  ColumnBuilder b(name, type, n);
  std::vector<std::int64_t> ints(pool);
  std::uniform_int_distribution<std::int64_t> wide(-(std::int64_t{1} << 40), std::int64_t{1} << 40);
  for (auto& x : ints) x = pool <= 4 ? wide(rng) % 7 : wide(rng);
  const auto doubles = awkward_doubles();
  auto strs = awkward_strings();
  if (!long_strings)
    strs.erase(std::remove_if(strs.begin(), strs.end(), [](const std::string& s) { return s.size() > 15; }),
               strs.end());
  for (std::size_t r = 0; r < n; ++r) {
    if (unit(rng) < missing) {
      b.push_missing();
      continue;
    }
    const std::size_t j = rng() % pool;
    switch (type) {
      case ColumnType::i32: b.push(static_cast<std::int32_t>(ints[j] % 100000)); break;
      case ColumnType::i64: b.push(ints[j]); break;
      case ColumnType::u32: b.push(static_cast<std::uint32_t>(ints[j] < 0 ? -ints[j] : ints[j])); break;
      case ColumnType::u64: b.push(static_cast<std::uint64_t>(ints[j] < 0 ? -ints[j] : ints[j]) << 10); break;
      case ColumnType::f32:
        b.push(static_cast<float>(j < doubles.size() ? doubles[j] : static_cast<double>(ints[j]) / 7));
        break;
      case ColumnType::f64: b.push(j < doubles.size() ? doubles[j] : static_cast<double>(ints[j]) / 7); break;
      case ColumnType::str: b.push_string(j < strs.size() ? strs[j] : "s" + std::to_string(ints[j])); break;
    }
  }
  return b.finish();
}

inline constexpr ColumnType kAllTypes[] = {ColumnType::i32, ColumnType::i64, ColumnType::u32, ColumnType::u64,
                                           ColumnType::f32, ColumnType::f64, ColumnType::str};

// Every operator on every value column it accepts, each with probability `share`.
inline std::vector<Aggregation> random_aggregations(std::mt19937_64& rng, const Table& t, double share) {
  std::vector<Aggregation> aggs{aggregation(AggOp::count_rows)};
  std::uniform_real_distribution<double> unit(0, 1);
  for (const auto& c : t.columns()) {
    if (c.name[0] != 'v') continue;
    for (const auto& o : agg::operators()) {
      if (!o.reads_column || !o.accepts(c.type) || unit(rng) > share) continue;
      Aggregation a = aggregation(o.op, c.name);
      a.q = unit(rng);
      a.n = 1 + rng() % 3;
      aggs.push_back(a);
    }
  }
  return aggs;
}

inline Table random_table(std::mt19937_64& rng, std::size_t rows, std::size_t keys, double missing) {
  Table t;
  for (std::size_t k = 0; k < keys; ++k)
    t.add(random_column(rng, fmt::format("k{}", k), kAllTypes[rng() % 7], rows, 1 + rng() % 6, missing));
  for (const auto type : kAllTypes)
    t.add(random_column(rng, fmt::format("v_{}", to_string(type)), type, rows, 40, 0.1));
  return t;
}

inline GroupBySpec spec_of(const Table& t, std::vector<Aggregation> aggs) {
  GroupBySpec s;  // every column named k… is a key
  for (const auto& c : t.columns())
    if (c.name[0] == 'k') s.by.push_back(c.name);
  s.aggs = std::move(aggs);
  return s;
}

// ~50K groups of a wide integer key and a 3-string key, with f64 and i32 values: past the engines'
// small-group paths (the CPU engine's partitions, the GPU's shared-memory tables).
inline Table many_groups_table(std::mt19937_64& rng, std::size_t rows) {
  Table t;
  t.add(random_column(rng, "k0", ColumnType::i64, rows, 50000, 0.01));
  t.add(random_column(rng, "k1", ColumnType::str, rows, 3, 0.0));
  t.add(random_column(rng, "v_f64", ColumnType::f64, rows, 1000, 0.1));
  t.add(random_column(rng, "v_i32", ColumnType::i32, rows, 1000, 0.1));
  return t;
}

}  // namespace groupby_test
