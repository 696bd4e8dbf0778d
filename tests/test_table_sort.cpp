// Table sorts by several keys against a plain reference: std::stable_sort of the row indices with
// a comparator written on the values directly (not on the normalised keys).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "sort/table/gpu_key_plan.hpp"
#include "sort/table/key_layout.hpp"
#include "sort/table/row_order.hpp"
#include "sort/table/run_block.hpp"
#include "sort/table/run_merge.hpp"
#include "table/table_wire.hpp"
#include "table_sort_cases.hpp"
#include "tandem/core/error.hpp"
#include "tandem/table_sort.hpp"

namespace {

using tandem::Column;
using tandem::ColumnType;
using tandem::NullOrder;
using tandem::SortSpec;
using tandem::Table;
using namespace table_sort_cases;

template <class T>
int three_way(T x, T y) {
  return x < y ? -1 : y < x ? 1 : 0;
}

int compare_strings(std::string_view x, std::string_view y) {
  const bool less = std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end(), [](char a, char b) {
    return static_cast<unsigned char>(a) < static_cast<unsigned char>(b);
  });
  if (less) return -1;
  return x == y ? 0 : 1;
}

// SQL's order on one column: NaN after every number (-0.0 equal to 0.0), missing values at the
// requested end whatever the direction.
int reference_compare(const Column& c, bool descending, NullOrder nulls, bool nan_missing, std::size_t a,
                      std::size_t b) {
  bool ma = !c.present(a), mb = !c.present(b);
  if (nan_missing && c.type == ColumnType::f64) ma = ma || std::isnan(c.numbers<double>()[a]);
  if (nan_missing && c.type == ColumnType::f64) mb = mb || std::isnan(c.numbers<double>()[b]);
  if (nan_missing && c.type == ColumnType::f32) ma = ma || std::isnan(c.numbers<float>()[a]);
  if (nan_missing && c.type == ColumnType::f32) mb = mb || std::isnan(c.numbers<float>()[b]);
  if (ma || mb) {
    if (ma && mb) return 0;
    const int after = nulls == NullOrder::last ? 1 : -1;
    return ma ? after : -after;
  }
  int r = 0;
  if (c.type == ColumnType::str) {
    r = compare_strings(c.string(a), c.string(b));
  } else {
    r = tandem::visit_numeric(c.type, [&](auto t) {
      using T = decltype(t);
      const T x = c.numbers<T>()[a], y = c.numbers<T>()[b];
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y) ? 0 : std::isnan(x) ? 1 : -1;
      }
      return three_way(x, y);
    });
  }
  return descending ? -r : r;
}

std::vector<std::size_t> reference_order(const Table& t, const SortSpec& spec, bool nan_missing = false) {
  std::vector<std::size_t> rows(t.rows());
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
    for (const auto& k : spec.by) {
      const int c = reference_compare(t.column(k.column), k.order == tandem::descending, spec.nulls, nan_missing, a, b);
      if (c != 0) return c < 0;
    }
    return false;
  });
  if (spec.limit && *spec.limit < rows.size()) rows.resize(*spec.limit);
  return rows;
}

TEST(TableSort, RandomTablesMatchTheReference) {
  std::mt19937_64 rng(46);
  for (int round = 0; round < 300; ++round) {
    const std::size_t n = round % 3 == 0 ? rng() % 5 : rng() % 3000;
    auto c = random_case(rng, n);
    tandem::TableSortOptions o;
    o.threads = 1 + round % 3;
    o.string_prefix = 1 + round % 20;  // short prefixes force the tie-break on whole strings
    const auto want = reference_order(c.table, c.spec);
    ASSERT_EQ(tandem::argsort(c.table, c.spec, o).rows, want) << "round " << round;
    expect_same_tables(tandem::sort(c.table, c.spec, o).table, c.table.gather(want));
  }
}

TEST(TableSort, LargeTablesUseTheMsdPassesAndThreads) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 6; ++round) {
    auto c = random_case(rng, 200'000 + rng() % 1000);
    tandem::TableSortOptions o;
    o.threads = 2 + round % 3;
    o.string_prefix = round % 2 ? 4 : 16;
    const auto want = reference_order(c.table, c.spec);
    ASSERT_EQ(tandem::argsort(c.table, c.spec, o).rows, want) << "round " << round;
    c.spec.limit = round % 2 ? 1 : 1000;  // each thread's candidate buffer fills and is cut many times
    ASSERT_EQ(tandem::argsort(c.table, c.spec, o).rows,
              std::vector<std::size_t>(want.begin(), want.begin() + *c.spec.limit))
        << "round " << round << " limit";
  }
}

TEST(TableSort, LimitSelectsTheFirstRows) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 200; ++round) {
    const std::size_t n = rng() % 5000;
    auto c = random_case(rng, n);
    const std::size_t limits[] = {0, 1, n / 2, n, n + 1, 5000, 3};
    c.spec.limit = limits[round % 7];
    tandem::TableSortOptions o;
    o.threads = 1 + round % 4;
    o.string_prefix = 1 + round % 12;
    const auto want = reference_order(c.table, c.spec);
    ASSERT_EQ(tandem::argsort(c.table, c.spec, o).rows, want) << "round " << round << " limit " << *c.spec.limit;
    expect_same_tables(tandem::sort(c.table, c.spec, o).table, c.table.gather(want));
  }
}

TEST(TableSort, NanAsMissingIsPandasOrder) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 50; ++round) {
    Table t;
    t.add(random_column(rng, "f", round % 2 ? ColumnType::f64 : ColumnType::f32, 500, round % 3 ? 0.1 : 0));
    SortSpec spec{.by = {{"f", round % 4 < 2 ? tandem::ascending : tandem::descending}}};
    spec.nulls = round % 5 < 2 ? NullOrder::first : NullOrder::last;
    tandem::TableSortOptions o{.nan_is_missing = true};
    ASSERT_EQ(tandem::argsort(t, spec, o).rows, reference_order(t, spec, true)) << "round " << round;
  }
}

TEST(TableSort, StableOnAllEqualKeysAndSmallTables) {
  Table t;
  t.add(tandem::make_column("k", std::vector<double>{0.0, -0.0, 0.0, -0.0, 0.0}));
  t.add(tandem::make_string_column("s", {"x", "x", "x", "x", "x"}));
  const auto r = tandem::argsort(t, {.by = {{"k", tandem::descending}, {"s"}}});
  EXPECT_EQ(r.rows, (std::vector<std::size_t>{0, 1, 2, 3, 4}));
  const Table one({tandem::make_column("k", std::vector<std::int32_t>{5})});
  EXPECT_EQ(tandem::argsort(one, {.by = {{"k"}}}).rows, std::vector<std::size_t>{0});
  const Table empty({tandem::make_column("k", std::vector<std::int32_t>{}),
                     tandem::make_string_column("s", std::vector<std::string>{})});
  const auto e = tandem::sort(empty, {.by = {{"s"}, {"k"}}});
  EXPECT_EQ(e.table.rows(), 0u);
  EXPECT_EQ(e.table.num_columns(), 2u);
}

TEST(TableSort, EmptyStringsComeBeforeOthersAndMissingLast) {
  Table t;
  t.add(tandem::make_string_column("s", {"b", "", "a", "", "z"},
                                   tandem::make_validity(5, [](std::size_t i) { return i != 3; })));
  EXPECT_EQ(tandem::argsort(t, {.by = {{"s"}}}).rows, (std::vector<std::size_t>{1, 2, 0, 4, 3}));
  EXPECT_EQ(tandem::argsort(t, {.by = {{"s"}}, .nulls = NullOrder::first}).rows,
            (std::vector<std::size_t>{3, 1, 2, 0, 4}));
  EXPECT_EQ(tandem::argsort(t, {.by = {{"s", tandem::descending}}}).rows, (std::vector<std::size_t>{4, 0, 2, 1, 3}));
}

TEST(TableSort, NanAfterNumbersFirstWhenDescending) {
  const double nan = std::nan("");
  const Table t({tandem::make_column("v", std::vector<double>{1.0, nan, -INFINITY, INFINITY, -nan})});
  EXPECT_EQ(tandem::argsort(t, {.by = {{"v"}}}).rows, (std::vector<std::size_t>{2, 0, 3, 1, 4}));
  EXPECT_EQ(tandem::argsort(t, {.by = {{"v", tandem::descending}}}).rows, (std::vector<std::size_t>{1, 4, 3, 0, 2}));
}

TEST(TableSort, BadKeysNameTheColumn) {
  const Table t({tandem::make_column("a", std::vector<std::int32_t>{1, 2})});
  try {
    (void)tandem::sort(t, {.by = {{"nope"}}});
    FAIL();
  } catch (const tandem::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
  }
  EXPECT_THROW((void)tandem::sort(t, {.by = {{"a"}, {"a"}}}), tandem::UsageError);
  EXPECT_THROW((void)tandem::sort(t, {}), tandem::UsageError);
}

TEST(TableSort, ParsesKeyLists) {
  const auto k = tandem::parse_sort_keys("id3,v3:desc,id1:asc");
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].column, "id3");
  EXPECT_EQ(k[1].order, tandem::descending);
  EXPECT_EQ(k[2].order, tandem::ascending);
  try {
    (void)tandem::parse_sort_keys("id3,v3:down");
    FAIL();
  } catch (const tandem::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("v3:down"), std::string::npos);
  }
  EXPECT_THROW((void)tandem::parse_sort_keys("id3,"), tandem::UsageError);
}

// The layout: a null byte only where values are missing, string prefixes as wide as the longest
// string up to the cap, and the tie-break marked where a prefix cannot decide.
TEST(TableSortKeys, LayoutPlansWidthsAndTieBreaks) {
  Table t;
  t.add(tandem::make_column("i", std::vector<std::int32_t>{1, 2}, tandem::make_validity(2, [](auto i) { return i; })));
  t.add(tandem::make_string_column("short", {"ab", "abc"}));
  t.add(tandem::make_string_column("long", {"0123456789abcdefXYZ", "x"}));
  t.add(tandem::make_string_column("zero", {std::string("a\0", 2), "a"}));
  const auto l = tandem::detail::plan_key_layout(t, {.by = {{"i"}, {"short"}, {"long"}, {"zero"}}}, {});
  ASSERT_EQ(l.fields.size(), 4u);
  EXPECT_TRUE(l.fields[0].null_byte);
  EXPECT_EQ(l.fields[0].width, 4u);
  EXPECT_EQ(l.fields[1].width, 3u);
  EXPECT_FALSE(l.fields[1].tie_break);
  EXPECT_EQ(l.fields[2].width, 16u);
  EXPECT_TRUE(l.fields[2].tie_break);
  EXPECT_TRUE(l.fields[3].tie_break);
  EXPECT_EQ(l.first_tie_break, 2);
  EXPECT_EQ(l.exact_bytes, 5u + 3u + 16u);
  EXPECT_EQ(l.bytes, 5u + 3u + 16u + 2u);
  EXPECT_EQ(l.words, 4u);
}

// Encoded keys compare as the values do, row against row (strings holding a zero byte through
// the tie-break).
TEST(TableSortKeys, EncodedBytesOrderAsTheValues) {
  std::mt19937_64 rng(5);
  for (const auto type : kTypes) {
    for (const bool desc : {false, true}) {
      Table t;
      t.add(random_column(rng, "c", type, 300, 0.1));
      const SortSpec spec{.by = {{"c", desc ? tandem::descending : tandem::ascending}}};
      const auto l = tandem::detail::plan_key_layout(t, spec, {.string_prefix = 64});
      const auto k = tandem::detail::encode_keys(t, l, 2);
      for (std::size_t a = 0; a < t.rows(); ++a)
        for (std::size_t b = 0; b < t.rows(); b += 7)
          ASSERT_EQ(tandem::detail::compare_keys(t, l, k, a, b),
                    reference_compare(t.column(0), desc, NullOrder::last, false, a, b))
              << tandem::to_string(type) << " rows " << a << ", " << b;
    }
  }
}

}  // namespace

namespace {

// The GPU sort's passes run on the CPU: each row's ordered value (strings by their rank among the
// column's distinct strings, as the GPU ranks them), the facts and the plan of gpu_key_plan.hpp,
// then one std::stable_sort per pass by gpu_pass_key.
std::vector<std::size_t> simulated_gpu_order(const Table& t, const SortSpec& spec, bool nan_missing) {
  const std::size_t n = t.rows();
  std::vector<std::vector<std::uint64_t>> value(spec.by.size(), std::vector<std::uint64_t>(n));
  std::vector<std::vector<bool>> missing(spec.by.size(), std::vector<bool>(n));
  std::vector<tandem::detail::GpuKeyFacts> facts(spec.by.size());
  for (std::size_t k = 0; k < spec.by.size(); ++k) {
    const Column& c = t.column(spec.by[k].column);
    std::map<std::string, std::uint64_t> rank;
    if (c.type == ColumnType::str) {
      for (std::size_t i = 0; i < n; ++i)
        if (c.present(i)) rank[std::string(c.string(i))] = 0;
      std::uint64_t r = 0;
      for (auto& [s, code] : rank) code = r++;
    }
    auto& f = facts[k];
    f.descending = spec.by[k].order == tandem::descending;
    f.min = ~std::uint64_t{0};
    for (std::size_t i = 0; i < n; ++i) {
      bool present = c.present(i);
      if (present && c.type == ColumnType::str) value[k][i] = rank[std::string(c.string(i))];
      else if (present)
        present = tandem::visit_numeric(c.type, [&](auto x) {
          return tandem::detail::ordered_key_value(c.numbers<decltype(x)>()[i], nan_missing, value[k][i]);
        });
      missing[k][i] = !present;
      if (!present) {
        ++f.missing;
        continue;
      }
      ++f.present;
      f.min = std::min(f.min, value[k][i]);
      f.max = std::max(f.max, value[k][i]);
    }
  }
  std::vector<std::size_t> rows(n);
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  for (const auto& p : tandem::detail::plan_gpu_key_passes(facts)) {
    const auto& f = facts[p.key];
    const auto key = [&](std::size_t r) {
      return tandem::detail::gpu_pass_key(p.nulls_only, p.value_bits, p.null_bit, f.descending, f.min, f.max,
                                          spec.nulls == NullOrder::first, missing[p.key][r], value[p.key][r]);
    };
    for (std::size_t r = 0; r < n; ++r) EXPECT_LT(key(r) >> 1, std::uint64_t{1} << (p.end_bit() - 1));
    std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  }
  return rows;
}

}  // namespace

TEST(TableSortGpuPlan, PassesOrderRowsAsTheReference) {
  std::mt19937_64 rng(4606);
  for (int round = 0; round < 200; ++round) {
    const auto c = random_case(rng, round % 3 == 0 ? rng() % 5 : rng() % 800);
    const bool nan_missing = round % 4 == 0;
    ASSERT_EQ(simulated_gpu_order(c.table, c.spec, nan_missing), reference_order(c.table, c.spec, nan_missing))
        << "round " << round;
  }
}

TEST(TableSortGpuPlan, KeysTakeOnlyTheBitsTheirValuesNeed) {
  using tandem::detail::GpuKeyFacts;
  // ids 1..100 ascending; a 64-bit column with missing values; a constant; an all-missing key.
  const std::vector<GpuKeyFacts> facts = {
      {false, 1000, 0, 1, 100}, {true, 900, 100, 0, ~std::uint64_t{0}}, {false, 1000, 0, 5, 5}, {false, 0, 1000, 0, 0}};
  const auto passes = tandem::detail::plan_gpu_key_passes(facts);
  ASSERT_EQ(passes.size(), 3u);  // the last two keys need no pass; the second needs two
  EXPECT_EQ(passes[0].key, 1u);
  EXPECT_EQ(passes[0].end_bit(), 64);
  EXPECT_TRUE(passes[1].nulls_only);
  EXPECT_EQ(passes[1].end_bit(), 1);
  EXPECT_EQ(passes[2].key, 0u);
  EXPECT_EQ(passes[2].end_bit(), 7);
  EXPECT_FALSE(passes[2].wide());
}

// The merge's order: a layout joined over two tables (one without missing values and with short
// strings, one with both and long strings) encodes both so that rows compare across the tables
// as their values do, the second key deciding where the first ties.
TEST(TableSortKeys, JoinedLayoutComparesAcrossTables) {
  std::mt19937_64 rng(11);
  auto sign = [](int c) { return (c > 0) - (c < 0); };
  for (const auto type : kTypes) {
    for (const bool desc : {false, true}) {
      for (const auto nulls : {NullOrder::last, NullOrder::first}) {
        Table a, b;
        if (type == ColumnType::str) a.add(tandem::make_string_column("c", {"ab", "", "a", "zz", "ab", "a"}));
        else a.add(random_column(rng, "c", type, 40, 0));
        a.add(random_column(rng, "d", ColumnType::i32, a.rows(), 0));
        b.add(random_column(rng, "c", type, 150, 0.2));
        b.add(random_column(rng, "d", ColumnType::i32, 150, 0.1));
        const SortSpec spec{.by = {{"c", desc ? tandem::descending : tandem::ascending}, {"d"}}, .nulls = nulls};
        auto layout = tandem::detail::plan_key_layout(a, spec, {});
        tandem::detail::join_layout(layout, tandem::detail::plan_key_layout(b, spec, {}));
        const tandem::detail::RowComparator cmp(layout);
        const auto ka = cmp.encode(a), kb = cmp.encode(b);
        const Table both = tandem::concat_tables({a, b}, a);
        for (std::size_t i = 0; i < a.rows(); ++i) {
          for (std::size_t j = 0; j < b.rows(); ++j) {
            int want = reference_compare(both.column(0), desc, nulls, false, i, a.rows() + j);
            if (want == 0) want = reference_compare(both.column(1), false, nulls, false, i, a.rows() + j);
            ASSERT_EQ(sign(cmp.compare(a, ka, i, b, kb, j)), want)
                << tandem::to_string(type) << " desc " << desc << " rows " << i << ", " << j;
            ASSERT_EQ(sign(cmp.compare(b, kb, j, a, ka, i)), -want);
          }
        }
      }
    }
  }
}

// Run blocks (run_block.hpp) read back as the rows they were written from: every column type,
// integers over their whole range and narrow ones (1, 2 and 4 bytes, negative bases), missing
// values, empty strings and zero bytes, NaN and -0.0 bit for bit; blocks of one row and more.
TEST(TableSortRunBlocks, ReadBackAsWritten) {
  std::mt19937_64 rng(3);
  const std::size_t n = 3000;
  Table t;
  for (const auto type : kTypes)
    t.add(random_column(rng, fmt::format("c{}", static_cast<int>(type)), type, n, type == ColumnType::u32 ? 0 : 0.1));
  std::vector<std::int64_t> narrow(n), mid(n), wide(n);
  std::vector<std::int32_t> negative(n);
  for (std::size_t i = 0; i < n; ++i) {
    narrow[i] = static_cast<std::int64_t>(rng() % 100) + 1;
    mid[i] = static_cast<std::int64_t>(rng() % 60000) - 30000;
    wide[i] = static_cast<std::int64_t>(rng() % 100000) + 1;
    negative[i] = -static_cast<std::int32_t>(rng() % 200) - 1000;
  }
  t.add(tandem::make_column("narrow", narrow));
  t.add(tandem::make_column("mid", mid, validity(rng, n, 0.3)));
  t.add(tandem::make_column("wide", wide));
  t.add(tandem::make_column("negative", negative));
  const auto codings = tandem::detail::plan_codings(t, 2);
  EXPECT_EQ(codings[t.num_columns() - 4].width, 1u);
  EXPECT_EQ(codings[t.num_columns() - 3].width, 2u);
  EXPECT_EQ(codings[t.num_columns() - 2].width, 4u);
  EXPECT_EQ(codings[t.num_columns() - 1].width, 1u);
  std::vector<std::size_t> rows(n);
  std::iota(rows.begin(), rows.end(), std::size_t{0});
  std::shuffle(rows.begin(), rows.end(), rng);
  const std::vector<std::size_t> starts = {0, 1, 2, 700, 2999, 3000};
  const auto im = tandem::detail::encode_blocks(t, codings, rows, starts, 2);
  ASSERT_EQ(im.sizes.size(), starts.size() - 1);
  std::size_t at = 0;
  for (std::size_t d = 0; d + 1 < starts.size(); ++d) {
    std::shared_ptr<std::byte> bytes(new std::byte[im.sizes[d]], std::default_delete<std::byte[]>());
    std::memcpy(bytes.get(), im.bytes.data() + at, im.sizes[d]);
    at += im.sizes[d];
    const Table got = tandem::detail::decode_block(bytes, im.sizes[d], tandem::empty_like(t));
    const auto part = std::span<const std::size_t>(rows).subspan(starts[d], starts[d + 1] - starts[d]);
    expect_same_tables(got, tandem::detail::gather_rows(t, part, 1));
    EXPECT_THROW((void)tandem::detail::decode_block(bytes, im.sizes[d] - 8, tandem::empty_like(t)), tandem::Error);
  }
  EXPECT_EQ(at, im.bytes.size());
}
