// tandem::sort_csv against tandem::argsort of the whole table: random tables written to CSV,
// sorted file to file with a memory limit so small that every few rows make a run (and with one
// the file fits), the output compared byte for byte with the input's records in the argsort's
// order (the records are written as they were read); the temporary folder left empty.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tandem/core/error.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table_sort.hpp"
#include "test_util.hpp"

namespace {

using tandem::ColumnType;
using tandem::NullOrder;
using tandem::SortSpec;
using tandem::Table;

// k1: strings with a long shared prefix (some empty, some missing); k2: few distinct integers
// with missing values; k3: floats with NaN, -0.0 and 0.0, duplicates and missing values; row:
// the input position (ties keep it, so any instability shows in the text).
Table random_table(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> k1(n);
  std::vector<std::int64_t> k2(n), row(n);
  std::vector<double> k3(n);
  std::vector<std::uint8_t> p1(n), p2(n), p3(n);
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0, 1.5, -2.25, 1e300};
  for (std::size_t i = 0; i < n; ++i) {
    const auto r = rng();
    k1[i] = r % 17 == 0 ? "" : fmt::format("shared-prefix-longer-than-sixteen-{}", rng() % 40);
    p1[i] = r % 13 != 0;
    k2[i] = static_cast<std::int64_t>(rng() % 9) - 4;
    p2[i] = r % 11 != 0;
    k3[i] = rng() % 3 == 0 ? specials[rng() % 6] : static_cast<double>(rng() % 50) / 8.0 - 3;
    p3[i] = r % 7 != 0;
    row[i] = static_cast<std::int64_t>(i);
  }
  auto bits = [&](const std::vector<std::uint8_t>& p) {
    return tandem::make_validity(n, [&](std::size_t i) { return p[i] != 0; });
  };
  std::vector<tandem::Column> cols;
  cols.push_back(tandem::make_string_column("k1", k1, bits(p1)));
  cols.push_back(tandem::make_column<std::int64_t>("k2", k2, bits(p2)));
  cols.push_back(tandem::make_column<double>("k3", k3, bits(p3)));
  cols.push_back(tandem::make_column<std::int64_t>("row", row));
  return Table(std::move(cols));
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string csv_of(const Table& t) {
  std::ostringstream s;
  tandem::write_csv(s, t);
  return s.str();
}

// The answer: the file's records (one per line in these files) in the order tandem::argsort
// gives the whole table, as they were written; a last line without its line feed gets one.
std::string whole_sort(const std::string& path, const SortSpec& spec) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  std::string out = lines.empty() ? "\n" : lines.front();
  for (const std::size_t row : tandem::argsort(tandem::read_csv(path), spec).rows) out += lines.at(row + 1);
  return out;
}

tandem::CsvSortResult file_sort(const std::string& path, const SortSpec& spec, std::size_t limit,
                                const std::string& temp, std::string& text) {
  tandem::CsvSortOptions o;
  o.memory_limit = limit;
  o.temp_dir = temp;
  o.sort.threads = 2;
  o.csv.threads = 2;
  std::ostringstream out;
  auto r = tandem::sort_csv(path, spec, out, o);
  text = out.str();
  return r;
}

bool empty_dir(const std::filesystem::path& p) { return std::filesystem::is_empty(p); }

TEST(TableSortCsv, RunsMatchTheWholeSort) {
  TempDir dir;
  const std::string in = dir.file("t.csv"), temp = dir.file("tmp");
  std::filesystem::create_directory(temp);
  const std::vector<std::vector<tandem::SortKey>> specs = {
      {{"k1"}},
      {{"k2", tandem::descending}},
      {{"k3"}},
      {{"k3", tandem::descending}},
      {{"k2"}, {"k1", tandem::descending}},
      {{"k1"}, {"k3", tandem::descending}, {"k2"}},
  };
  for (std::uint64_t seed = 1; seed <= 2; ++seed) {
    const std::size_t n = 500 + 1200 * seed;
    write_file(in, csv_of(random_table(n, seed)));
    for (const auto& by : specs) {
      for (const auto nulls : {NullOrder::last, NullOrder::first}) {
        for (const std::optional<std::size_t> limit :
             {std::optional<std::size_t>{}, std::optional<std::size_t>{0}, std::optional<std::size_t>{1},
              std::optional<std::size_t>{777}}) {
          const SortSpec spec{by, nulls, limit};
          SCOPED_TRACE(
              fmt::format("seed {} keys {} nulls {} limit {}", seed, by.size(), int(nulls), limit ? int(*limit) : -1));
          const std::string want = whole_sort(in, spec);
          std::string got;
          const auto r = file_sort(in, spec, 8192, temp, got);
          EXPECT_GT(r.runs, 10u);
          EXPECT_EQ(r.rows_read, n);
          EXPECT_EQ(got, want);
          EXPECT_TRUE(empty_dir(temp));
          const auto fits = file_sort(in, spec, std::size_t{1} << 30, temp, got);
          EXPECT_EQ(fits.runs, 0u);
          EXPECT_EQ(got, want);
        }
      }
    }
  }
}

TEST(TableSortCsv, HeaderOnlyAndOneRow) {
  TempDir dir;
  const std::string in = dir.file("t.csv"), temp = dir.file("tmp");
  std::filesystem::create_directory(temp);
  const SortSpec spec{{{"b", tandem::descending}}};
  for (const std::string text : {"a,b\n", "a,b", "a,b\n1,x\n", "a,b\n1,\"x,y\""}) {
    write_file(in, text);
    std::string got;
    const auto r = file_sort(in, spec, 4, temp, got);
    EXPECT_EQ(r.runs, 1u) << text;
    EXPECT_EQ(got, whole_sort(in, spec)) << text;
    EXPECT_TRUE(empty_dir(temp));
  }
}

// A column's type widens late in the file (i64 -> f64 -> str), a piece holds only quoted empty
// fields or only missing values in a number column: the runs still take the whole file's types.
TEST(TableSortCsv, TypesOfTheWholeFile) {
  TempDir dir;
  const std::string in = dir.file("t.csv"), temp = dir.file("tmp");
  std::filesystem::create_directory(temp);
  std::string text = "k,v,e\n";
  for (int i = 0; i < 3000; ++i) {
    const std::string v = i == 2500 ? "2.5" : i == 2900 ? "abc" : std::to_string((i * 7919) % 101);
    const std::string e = i < 1000 ? "\"\"" : i < 2000 ? "" : std::to_string(i % 5);
    text += fmt::format("{},{},{}\n", (i * 31) % 97, v, e);
  }
  write_file(in, text);
  for (const auto& by :
       std::vector<std::vector<tandem::SortKey>>{{{"v"}}, {{"e"}, {"k"}}, {{"k", tandem::descending}}}) {
    const SortSpec spec{by};
    std::string got;
    const auto r = file_sort(in, spec, 6000, temp, got);
    EXPECT_GT(r.runs, 10u);
    EXPECT_EQ(got, whole_sort(in, spec));
    EXPECT_TRUE(empty_dir(temp));
  }
}

// The records come out as they were written: the BOM and the header's CRLF, quotes a writer
// would drop, numbers as typed, a line break inside quotes; blank lines go, and the last record,
// written without a line end, gets the header's. In memory (with chunks of a few bytes, so that
// chunk edges fall inside quotes and CRLFs) and by runs alike.
TEST(TableSortCsv, RecordsAsWritten) {
  TempDir dir;
  const std::string in = dir.file("t.csv"), temp = dir.file("tmp");
  std::filesystem::create_directory(temp);
  write_file(in,
             "\xEF\xBB\xBFk,v,s\r\nb,1.50,\"quoted\"\r\n\r\na,02,\"multi\r\nline\"\r\nc,-0,plain\r\n"
             "a,1e0,\"x,y\"");
  const std::string want =
      "\xEF\xBB\xBFk,v,s\r\na,02,\"multi\r\nline\"\r\na,1e0,\"x,y\"\r\nb,1.50,\"quoted\"\r\nc,-0,plain\r\n";
  for (const std::size_t chunk : {std::size_t{0}, std::size_t{3}, std::size_t{7}}) {
    for (const std::size_t limit : {std::size_t{1} << 30, std::size_t{64}}) {
      SCOPED_TRACE(fmt::format("chunk {} limit {}", chunk, limit));
      tandem::CsvSortOptions o;
      o.memory_limit = limit;
      o.temp_dir = temp;
      o.csv.chunk_bytes = chunk;
      std::ostringstream out;
      const auto r = tandem::sort_csv(in, SortSpec{{{"k"}}}, out, o);
      EXPECT_EQ(out.str(), want);
      EXPECT_EQ(r.rows_written, 4u);
      EXPECT_EQ(r.runs > 0, limit < 1000);
    }
  }
}

// A column the schema names is checked though it is no key: its values are not written anew,
// but a value that is not of its type is still an error naming the line.
TEST(TableSortCsv, SchemaColumnsAreChecked) {
  TempDir dir;
  const std::string in = dir.file("t.csv");
  write_file(in, "k,v\n1,2\n0,x\n");
  tandem::CsvSortOptions o;
  o.csv.schema = tandem::parse_csv_schema("v:i64");
  std::ostringstream out;
  const std::string e = input_error([&] { tandem::sort_csv(in, SortSpec{{{"k"}}}, out, o); });
  EXPECT_NE(e.find(":3:"), std::string::npos) << e;
  EXPECT_NE(e.find("'v'"), std::string::npos) << e;
}

// Two sorts by runs at once, in one temporary directory: each its own folder, both right.
TEST(TableSortCsv, TwoAtOnce) {
  TempDir dir;
  const std::string in = dir.file("t.csv"), temp = dir.file("tmp");
  std::filesystem::create_directory(temp);
  write_file(in, csv_of(random_table(3000, 9)));
  const SortSpec a{{{"k1"}, {"k3", tandem::descending}}}, b{{{"k3"}}, NullOrder::first};
  std::string got_a, got_b;
  std::size_t runs_a = 0, runs_b = 0;
  std::thread other([&] { runs_b = file_sort(in, b, 8192, temp, got_b).runs; });
  runs_a = file_sort(in, a, 8192, temp, got_a).runs;
  other.join();
  EXPECT_GT(runs_a, 10u);
  EXPECT_GT(runs_b, 10u);
  EXPECT_EQ(got_a, whole_sort(in, a));
  EXPECT_EQ(got_b, whole_sort(in, b));
  EXPECT_TRUE(empty_dir(temp));
}

TEST(TableSortCsv, MalformedInputNamesTheLineAndLeavesNoFiles) {
  TempDir dir;
  const std::string in = dir.file("t.csv"), temp = dir.file("tmp");
  std::filesystem::create_directory(temp);
  std::string text = "a,b\n";
  for (int i = 0; i < 2000; ++i) text += i == 1500 ? "1,2,3\n" : fmt::format("{},{}\n", i % 7, i);
  write_file(in, text);
  const std::string want = input_error([&] { tandem::read_csv(in); });
  ASSERT_NE(want.find(":1502:"), std::string::npos) << want;
  std::string got;
  EXPECT_EQ(input_error([&] { file_sort(in, SortSpec{{{"a"}}}, 3000, temp, got); }), want);
  EXPECT_TRUE(empty_dir(temp));
  EXPECT_THROW(file_sort(dir.file("absent.csv"), SortSpec{{{"a"}}}, 3000, temp, got), tandem::InputError);
  text = "a,b\n";
  for (int i = 0; i < 2000; ++i) text += fmt::format("{},{}\n", i % 7, i);
  write_file(in, text);
  EXPECT_THROW(file_sort(in, SortSpec{{{"c"}}}, 3000, temp, got), tandem::UsageError);
  EXPECT_TRUE(empty_dir(temp));
  EXPECT_THROW(file_sort(in, SortSpec{{{"a"}}}, 3000, dir.file("no-such-dir"), got), tandem::UsageError);
}

}  // namespace
