// Random tables for the table sort's tests (CPU and GPU): 1-4 keys of every type and direction,
// few distinct values (ties, so that later keys and stability matter), NaN, -0.0, infinities,
// integer extremes, strings with NUL bytes and long shared prefixes, missing values.
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tandem/table.hpp"
#include "tandem/table_sort.hpp"

namespace table_sort_cases {

using tandem::Column;
using tandem::ColumnType;
using tandem::NullOrder;
using tandem::SortSpec;
using tandem::Table;

inline std::vector<std::uint8_t> validity(std::mt19937_64& rng, std::size_t n, double missing) {
  std::bernoulli_distribution miss(missing);
  return tandem::make_validity(n, [&](std::size_t) { return !miss(rng); });
}

// Few distinct values, so that keys tie and later keys and stability matter.
inline Column random_column(std::mt19937_64& rng, std::string name, ColumnType type, std::size_t n, double missing) {
  std::uniform_int_distribution<int> pick(0, 6);
  auto valid = missing > 0 ? validity(rng, n, missing) : std::vector<std::uint8_t>{};
  switch (type) {
    case ColumnType::str: {
      static const std::vector<std::string> words = {"",
                                                     "a",
                                                     "ab",
                                                     std::string("a\0b", 3),
                                                     std::string("a\0", 2),
                                                     "shared long prefix of many bytes: x",
                                                     "shared long prefix of many bytes: y",
                                                     "shared long prefix of many bytes",
                                                     "\xc3\xa9t\xc3\xa9",
                                                     "zz"};
      std::vector<std::string> v(n);
      std::uniform_int_distribution<std::size_t> w(0, words.size() - 1);
      for (auto& s : v) s = words[w(rng)];
      return tandem::make_string_column(std::move(name), v, std::move(valid));
    }
    case ColumnType::f64:
    case ColumnType::f32: {
      const double specials[] = {0.0,
                                 -0.0,
                                 std::nan(""),
                                 -std::nan(""),
                                 std::numeric_limits<double>::infinity(),
                                 -std::numeric_limits<double>::infinity(),
                                 -1.5};
      std::vector<double> v(n);
      for (auto& x : v) x = pick(rng) < 4 ? specials[pick(rng)] : double(pick(rng)) - 3.25;
      if (type == ColumnType::f64) return tandem::make_column(std::move(name), v, std::move(valid));
      return tandem::make_column(std::move(name), std::vector<float>(v.begin(), v.end()), std::move(valid));
    }
    default:
      return tandem::visit_numeric(type, [&](auto t) {
        using T = decltype(t);
        std::vector<T> v(n);
        for (auto& x : v) {
          const int p = pick(rng);
          x = p == 0 ? std::numeric_limits<T>::min() : p == 1 ? std::numeric_limits<T>::max() : T(p * 1000 - 3000);
        }
        return tandem::make_column(std::move(name), std::move(v), std::move(valid));
      });
  }
}

constexpr ColumnType kTypes[] = {ColumnType::i32, ColumnType::i64, ColumnType::u32, ColumnType::u64,
                                 ColumnType::f32, ColumnType::f64, ColumnType::str};

inline void expect_same_tables(const Table& got, const Table& want) {
  ASSERT_EQ(got.num_columns(), want.num_columns());
  ASSERT_EQ(got.rows(), want.rows());
  for (std::size_t c = 0; c < got.num_columns(); ++c) {
    const Column &g = got.column(c), &w = want.column(c);
    ASSERT_EQ(g.name, w.name);
    ASSERT_EQ(g.type, w.type);
    for (std::size_t i = 0; i < g.length; ++i) {
      ASSERT_EQ(g.present(i), w.present(i)) << g.name << " row " << i;
      if (!g.present(i)) continue;
      if (g.type == ColumnType::str) ASSERT_EQ(g.string(i), w.string(i)) << g.name << " row " << i;
      else {
        const std::size_t b = tandem::value_width(g.type);
        ASSERT_EQ(std::memcmp(g.values.data() + i * b, w.values.data() + i * b, b), 0) << g.name << " row " << i;
      }
    }
  }
}

// A random table with a payload column and 1-4 random keys of random types and directions.
struct Case {
  Table table;
  SortSpec spec;
};

inline Case random_case(std::mt19937_64& rng, std::size_t n) {
  Case c;
  std::uniform_int_distribution<int> keys(1, 4), type(0, 6), coin(0, 1);
  std::bernoulli_distribution has_missing(0.5);
  std::vector<std::int64_t> payload(n);
  std::iota(payload.begin(), payload.end(), 0);
  c.table.add(tandem::make_column("payload", payload));
  const int k = keys(rng);
  for (int i = 0; i < k; ++i) {
    const std::string name = fmt::format("k{}", i);
    c.table.add(random_column(rng, name, kTypes[type(rng)], n, has_missing(rng) ? 0.2 : 0));
    c.spec.by.push_back({name, coin(rng) ? tandem::descending : tandem::ascending});
  }
  c.spec.nulls = coin(rng) ? NullOrder::first : NullOrder::last;
  return c;
}

}  // namespace table_sort_cases
