// Tables: columns, validity, builders, gathering rows, joining parts, the db-benchmark generator.
#include <cmath>
#include <numeric>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "table/table_wire.hpp"
#include "tandem/core/error.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table.hpp"

using namespace tandem;

TEST(Table, BuilderKeepsValuesAndMissingRows) {
  ColumnBuilder b("x", ColumnType::i64);
  b.push<std::int64_t>(5);
  b.push<std::int64_t>(-7);
  for (int i = 0; i < 9; ++i) b.push<std::int64_t>(i);  // crosses a validity byte
  b.push_missing();
  const Column c = b.finish();
  ASSERT_EQ(c.length, 12u);
  EXPECT_EQ(c.numbers<std::int64_t>()[1], -7);
  EXPECT_EQ(c.missing_count(), 1u);
  EXPECT_TRUE(c.present(10));
  EXPECT_FALSE(c.present(11));
  EXPECT_THROW((void)c.numbers<double>(), UsageError);
}

TEST(Table, StringColumnsKeepEmptyAndMissingApart) {
  ColumnBuilder b("s", ColumnType::str);
  b.push_string("a,\"b\"\n");
  b.push_string("");
  b.push_missing();
  b.push_string("\xc3\xa9t\xc3\xa9");
  const Column c = b.finish();
  ASSERT_EQ(c.length, 4u);
  EXPECT_EQ(c.string(0), "a,\"b\"\n");
  EXPECT_TRUE(c.present(1));
  EXPECT_EQ(c.string(1), "");
  EXPECT_FALSE(c.present(2));
  EXPECT_EQ(c.string(3), "\xc3\xa9t\xc3\xa9");
  EXPECT_THROW(b.push<std::int32_t>(1), UsageError);
}

TEST(Table, ColumnsByNameLengthsAndClashes) {
  Table t;
  t.add(make_column<std::int32_t>("a", {1, 2, 3}));
  t.add(make_string_column("b", {"x", "y", "z"}));
  EXPECT_EQ(t.rows(), 3u);
  EXPECT_EQ(t.column("b").string(2), "z");
  EXPECT_EQ(t.find("c"), nullptr);
  try {
    (void)t.column("c");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("columns: a, b"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.add(make_column<double>("a", {1, 2, 3})), UsageError);
  EXPECT_THROW(t.add(make_column<double>("c", {1, 2})), UsageError);
}

TEST(Table, ValidateRejectsBrokenBuffers) {
  EXPECT_THROW(make_string_column("s", std::vector<char>{'a'}, {0, 2}), InputError);          // past the bytes
  EXPECT_THROW(make_string_column("s", std::vector<char>{'a', 'b'}, {0, 2, 1}), InputError);  // decreasing
  Column c;
  c.name = "n";
  c.type = ColumnType::f64;
  c.length = 4;
  c.values = Buffer::take(std::vector<double>{1, 2, 3});
  EXPECT_THROW(c.validate(), InputError);
  // A table made from a caller's columns checks every string offset's order (on every core for
  // a long column), and names the first row where they decrease.
  std::vector<std::uint64_t> o(std::size_t{1} << 22);
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = i;
  o[o.size() - 10] = 0;
  Column s;
  s.name = "s";
  s.type = ColumnType::str;
  s.length = o.size() - 1;
  s.values = Buffer::take(std::vector<char>(o.size()));
  s.offsets = Buffer::take(std::move(o));
  try {
    const Table t({s});
    ADD_FAILURE() << "decreasing offsets accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("string offsets decrease at row 4194293"), std::string::npos) << e.what();
  }
}

TEST(Table, BorrowedBufferIsNotCopied) {
  std::vector<float> data{1.5f, -0.0f, 3.0f};
  Column c;
  c.name = "f";
  c.type = ColumnType::f32;
  c.length = data.size();
  c.values = Buffer::borrow(data.data(), data.size() * sizeof(float));
  c.validate();
  EXPECT_EQ(c.numbers<float>().data(), data.data());
}

TEST(Table, GatherReordersEveryColumnWithValidity) {
  Table t;
  t.add(make_column<std::uint64_t>("k", {10, 20, 30}, make_validity(3, [](std::size_t i) { return i != 1; })));
  t.add(make_string_column("s", {"a", "bb", ""}));
  const std::vector<std::size_t> rows{2, 1, 1, 0};
  const Table g = t.gather(rows);
  ASSERT_EQ(g.rows(), 4u);
  EXPECT_EQ(g.column("k").numbers<std::uint64_t>()[0], 30u);
  EXPECT_FALSE(g.column("k").present(1));
  EXPECT_FALSE(g.column("k").present(2));
  EXPECT_EQ(g.column("s").string(1), "bb");
  EXPECT_EQ(g.column("s").string(3), "a");
}

TEST(Table, ColumnTypesParseAndPrint) {
  for (auto t : {ColumnType::i32, ColumnType::i64, ColumnType::u32, ColumnType::u64, ColumnType::f32, ColumnType::f64,
                 ColumnType::str})
    EXPECT_EQ(parse_column_type(to_string(t)), t);
  EXPECT_THROW(parse_column_type("u8"), UsageError);
  EXPECT_EQ(column_type_of(DType::u8), std::nullopt);
  EXPECT_THROW(to_dtype(ColumnType::str), UsageError);
}

TEST(GroupByData, MatchesTheBenchmarkDefinition) {
  const Table t = generate_groupby_table({.rows = 20000, .k = 10, .nas_percent = 0, .sorted = false, .seed = 3});
  ASSERT_EQ(t.num_columns(), 9u);
  ASSERT_EQ(t.rows(), 20000u);
  std::set<std::string> id1;
  for (std::size_t i = 0; i < t.rows(); ++i) id1.insert(std::string(t.column("id1").string(i)));
  EXPECT_EQ(id1.size(), 10u);
  EXPECT_EQ(*id1.begin(), "id001");
  EXPECT_EQ(t.column("id3").string(0).size(), 12u);  // 'id' + 10 digits
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const auto id6 = t.column("id6").numbers<std::int32_t>()[i];
    ASSERT_TRUE(id6 >= 1 && id6 <= 2000);
    const auto v1 = t.column("v1").numbers<std::int32_t>()[i];
    ASSERT_TRUE(v1 >= 1 && v1 <= 5);
    const auto v2 = t.column("v2").numbers<std::int32_t>()[i];
    ASSERT_TRUE(v2 >= 1 && v2 <= 15);
    const double v3 = t.column("v3").numbers<double>()[i];
    ASSERT_TRUE(v3 >= 0 && v3 <= 100);
    ASSERT_DOUBLE_EQ(std::round(v3 * 1e6) / 1e6, v3);
  }
}

TEST(GroupByData, SameSeedSameTableSortedAndMissing) {
  const GroupByDataSpec spec{.rows = 5000, .k = 7, .nas_percent = 10, .sorted = true, .seed = 9};
  const Table a = generate_groupby_table(spec);
  const Table b = generate_groupby_table(spec);
  for (std::size_t i = 0; i < a.rows(); ++i) {
    ASSERT_EQ(a.column("id3").string(i), b.column("id3").string(i));
    ASSERT_EQ(a.column("v3").numbers<double>()[i], b.column("v3").numbers<double>()[i]);
  }
  // 10% of id4's 7 values: none (floor); 10% of id6's 714 values: 71 missing values.
  EXPECT_EQ(a.column("id4").missing_count(), 0u);
  EXPECT_GT(a.column("id6").missing_count(), 0u);
  const double v1_missing = static_cast<double>(a.column("v1").missing_count()) / 5000;
  EXPECT_NEAR(v1_missing, 0.10, 0.03);
  // Sorted by id1 (missing first), then id2.
  const Column& id1 = a.column("id1");
  for (std::size_t i = 1; i < a.rows(); ++i) {
    if (!id1.present(i - 1)) continue;
    ASSERT_TRUE(id1.present(i));
    ASSERT_LE(id1.string(i - 1), id1.string(i));
  }
  EXPECT_THROW(generate_groupby_table({.rows = 10, .k = 0}), UsageError);
  EXPECT_THROW(generate_groupby_table({.rows = 10, .k = 5, .first_row = 95, .total_rows = 100}), UsageError);
  EXPECT_THROW(generate_groupby_table({.rows = 10, .k = 5, .sorted = true, .total_rows = 100}), UsageError);
}

TEST(GroupByData, APartOfATableIsThoseRowsOfTheWholeTable) {
  // Parts that start and end inside a 65,536-row chunk, span chunks, and take none.
  const GroupByDataSpec whole_spec{.rows = 200000, .k = 30, .nas_percent = 4, .seed = 5};
  const Table whole = generate_groupby_table(whole_spec);
  for (const auto& [first, rows] :
       {std::pair<std::size_t, std::size_t>{0, 1000}, {70000, 65536}, {65535, 2}, {123457, 76543}, {200000, 0}}) {
    SCOPED_TRACE(testing::Message() << "rows " << first << " + " << rows);
    GroupByDataSpec part_spec = whole_spec;
    part_spec.rows = rows;
    part_spec.first_row = first;
    part_spec.total_rows = whole_spec.rows;
    const Table part = generate_groupby_table(part_spec);
    std::vector<std::size_t> idx(rows);
    std::iota(idx.begin(), idx.end(), first);
    const Table want = whole.gather(idx);
    ASSERT_EQ(part.rows(), rows);
    ASSERT_EQ(part.num_columns(), want.num_columns());
    for (std::size_t c = 0; c < want.num_columns(); ++c)
      for (std::size_t i = 0; i < rows; ++i) {
        const Column &a = part.column(c), &b = want.column(c);
        ASSERT_EQ(a.present(i), b.present(i)) << a.name << " row " << i;
        if (!a.present(i)) continue;
        if (a.type == ColumnType::str) ASSERT_EQ(a.string(i), b.string(i)) << a.name << " row " << i;
        else if (a.type == ColumnType::f64) ASSERT_EQ(a.numbers<double>()[i], b.numbers<double>()[i]) << a.name;
        else ASSERT_EQ(a.numbers<std::int32_t>()[i], b.numbers<std::int32_t>()[i]) << a.name << " row " << i;
      }
  }
}

namespace {

// A part of `rows` rows: i64 and string columns with missing values and empty strings, f64 with
// none; the same rows also pushed to `all` (the joined table built row by row).
Table random_part(std::mt19937_64& rng, std::size_t rows, std::vector<ColumnBuilder>& all) {
  std::vector<ColumnBuilder> b;
  b.emplace_back("i", ColumnType::i64);
  b.emplace_back("s", ColumnType::str);
  b.emplace_back("f", ColumnType::f64);
  for (std::size_t r = 0; r < rows; ++r) {
    const auto x = static_cast<std::int64_t>(rng() % 1000);
    const std::string s(rng() % 20, static_cast<char>('a' + rng() % 26));
    for (auto* builders : {&b, &all}) {
      auto& bs = *builders;
      if (x % 7 == 0) bs[0].push_missing();
      else bs[0].push(x);
      if (x % 5 == 0) bs[1].push_missing();
      else bs[1].push_string(s);
      bs[2].push(static_cast<double>(x) / 3);
    }
  }
  std::vector<Column> cols;
  for (auto& c : b) cols.push_back(c.finish());
  return Table(std::move(cols));
}

}  // namespace

TEST(Table, PartsJoinInOrderOnAnyThreadCount) {
  // Parts of 0 to 300 rows (so that no part starts on a byte of the validity bits), joined a
  // (column, part) pair a thread: the same table as the rows pushed one by one.
  std::mt19937_64 rng(5);
  for (int round = 0; round < 4; ++round) {
    std::vector<ColumnBuilder> all;
    all.emplace_back("i", ColumnType::i64);
    all.emplace_back("s", ColumnType::str);
    all.emplace_back("f", ColumnType::f64);
    std::vector<Table> parts;
    for (int p = 0; p < 3 + round * 20; ++p) parts.push_back(random_part(rng, rng() % 4 == 0 ? 0 : rng() % 301, all));
    std::vector<Column> cols;
    for (auto& c : all) cols.push_back(c.finish());
    const Table want(std::move(cols));
    for (const int threads : {1, 4}) {
      const Table got = concat_tables(parts, parts.front(), threads);
      ASSERT_EQ(got.rows(), want.rows());
      for (std::size_t c = 0; c < want.num_columns(); ++c)
        for (std::size_t r = 0; r < want.rows(); ++r) {
          const Column &g = got.column(c), &w = want.column(c);
          ASSERT_EQ(g.present(r), w.present(r)) << "round " << round << " column " << w.name << " row " << r;
          if (!w.present(r)) continue;
          if (w.type == ColumnType::str) ASSERT_EQ(g.string(r), w.string(r));
          else if (w.type == ColumnType::i64) ASSERT_EQ(g.numbers<std::int64_t>()[r], w.numbers<std::int64_t>()[r]);
          else ASSERT_EQ(g.numbers<double>()[r], w.numbers<double>()[r]);
        }
    }
  }
  const Table a({make_column<std::int64_t>("n", {1})}), b({make_column<double>("n", {1.0})});
  EXPECT_THROW(concat_tables({a, b}, a, 2), UsageError) << "a column's type differs between parts";
  EXPECT_EQ(concat_tables({}, a, 2).rows(), 0u);
}
