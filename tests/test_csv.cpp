// CSV reading and writing: RFC 4180 quoting, type inference and schemas, missing values, every
// malformed case with its line and column, piece boundaries inside quoted fields, round trips.
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tandem/core/error.hpp"
#include "tandem/table/csv.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

Table read(std::string_view text, CsvOptions o = {}) { return read_csv_text(text, o, "t.csv"); }

std::string error_of(std::string_view text, CsvOptions o = {}) {
  try {
    (void)read(text, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string csv_of(const Table& t, char delimiter = ',') {
  std::ostringstream s;
  write_csv(s, t, delimiter);
  return s.str();
}

CsvSchema schema_of(const Table& t) {
  CsvSchema s;
  for (const auto& c : t.columns()) s.push_back({c.name, c.type});
  return s;
}

template <class T>
bool same_number(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::memcmp(&a, &b, sizeof a) == 0;  // tells -0.0 from 0.0
  }
  return a == b;
}

// Equal names, types, missing rows and values (NaN equal to NaN, -0.0 unequal to 0.0).
::testing::AssertionResult same_table(const Table& a, const Table& b) {
  if (a.num_columns() != b.num_columns() || a.rows() != b.rows())
    return ::testing::AssertionFailure() << a.num_columns() << "x" << a.rows() << " vs " << b.num_columns() << "x"
                                         << b.rows();
  for (std::size_t j = 0; j < a.num_columns(); ++j) {
    const Column &x = a.column(j), &y = b.column(j);
    if (x.name != y.name || x.type != y.type)
      return ::testing::AssertionFailure() << "column " << j << ": " << x.name << " " << to_string(x.type) << " vs "
                                           << y.name << " " << to_string(y.type);
    for (std::size_t i = 0; i < a.rows(); ++i) {
      bool same = x.present(i) == y.present(i);
      if (same && x.present(i)) {
        if (x.type == ColumnType::str) same = x.string(i) == y.string(i);
        else
          same = visit_numeric(x.type, [&](auto t) {
            using T = decltype(t);
            return same_number(x.numbers<T>()[i], y.numbers<T>()[i]);
          });
      }
      if (!same) return ::testing::AssertionFailure() << "column " << x.name << " row " << i;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

TEST(Csv, InfersIntegersFloatsAndStrings) {
  const Table t = read("a,b,c,d\n1,x,2.5,+7\n-3,y,1e3,8\n");
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.column("a").type, ColumnType::i64);
  EXPECT_EQ(t.column("b").type, ColumnType::str);
  EXPECT_EQ(t.column("c").type, ColumnType::f64);
  EXPECT_EQ(t.column("a").numbers<std::int64_t>()[1], -3);
  EXPECT_EQ(t.column("b").string(1), "y");
  EXPECT_EQ(t.column("c").numbers<double>()[1], 1000.0);
  EXPECT_EQ(t.column("d").numbers<std::int64_t>()[0], 7);
  EXPECT_EQ(t.column("a").missing_count(), 0u);
}

TEST(Csv, QuotedFieldsKeepDelimitersQuotesLineBreaksAndBytes) {
  const Table t = read("name,n\n\"a,b\",1\n\"say \"\"hi\"\"\",2\n\"two\nlines\",3\n\"caf\xc3\xa9 \xff\",4\n\"\",5\n");
  const Column& s = t.column("name");
  ASSERT_EQ(t.rows(), 5u);
  EXPECT_EQ(s.string(0), "a,b");
  EXPECT_EQ(s.string(1), "say \"hi\"");
  EXPECT_EQ(s.string(2), "two\nlines");
  EXPECT_EQ(s.string(3), "caf\xc3\xa9 \xff");
  EXPECT_TRUE(s.present(4));
  EXPECT_EQ(s.string(4), "");
  EXPECT_EQ(t.column("n").numbers<std::int64_t>()[3], 4);
  // A quoted number is a number.
  EXPECT_EQ(read("x\n\"12\"\n").column("x").numbers<std::int64_t>()[0], 12);
}

TEST(Csv, CrlfLineEndsInsideAndOutsideQuotes) {
  const Table t = read("a,b\r\n1,\"x\r\ny\"\r\n2,z\r\n");
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.column("b").string(0), "x\r\ny");
  EXPECT_EQ(t.column("b").string(1), "z");
  EXPECT_EQ(t.column("a").numbers<std::int64_t>()[1], 2);
}

TEST(Csv, DetectsTabOrCommaFromTheHeader) {
  const Table tabs = read("a\tb,c\td\n1\tx,y\t2\n");
  ASSERT_EQ(tabs.num_columns(), 3u);
  EXPECT_EQ(tabs.column("b,c").string(0), "x,y");
  const Table commas = read("\"a\tb\",c\n1,2\n");  // the tab is quoted: not a delimiter
  ASSERT_EQ(commas.num_columns(), 2u);
  EXPECT_EQ(commas.column(0).name, "a\tb");
  const Table given = read("a;b\n1;2\n", {.delimiter = ';'});
  EXPECT_EQ(given.column("b").numbers<std::int64_t>()[0], 2);
  EXPECT_THROW(read("a\n1\n", {.delimiter = '"'}), UsageError);
}

TEST(Csv, EmptyFileIsAnErrorNamingTheFile) {
  TempDir d;
  const std::string path = d.file("empty.csv");
  std::ofstream(path).close();
  try {
    (void)read_csv(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": empty file (expected a header row naming the columns)");
  }
  EXPECT_THROW((void)read_csv(d.file("absent.csv")), InputError);
  EXPECT_THROW((void)read_csv(d.path.string()), InputError);  // a directory
}

TEST(Csv, HeaderOnlyGivesNoRows) {
  for (const char* text : {"a,b", "a,b\n", "a,b\r\n"}) {
    const Table t = read(text, {.schema = parse_csv_schema("b:f64")});
    ASSERT_EQ(t.num_columns(), 2u) << text;
    EXPECT_EQ(t.rows(), 0u);
    EXPECT_EQ(t.column("a").type, ColumnType::i64);  // no values: i64, as the streaming scan infers it
    EXPECT_EQ(t.column("b").type, ColumnType::f64);
  }
}

TEST(Csv, OneRowWithAndWithoutLineEnd) {
  for (const char* text : {"x,y\n5,z", "x,y\n5,z\n"}) {
    const Table t = read(text);
    ASSERT_EQ(t.rows(), 1u);
    EXPECT_EQ(t.column("x").numbers<std::int64_t>()[0], 5);
    EXPECT_EQ(t.column("y").string(0), "z");
  }
}

TEST(Csv, MissingAndEmptyStringsStayApart) {
  const Table t = read("s,n,f\n,,\n\"\",\"\",\"\"\nx,1,2.5\n");
  const Column& s = t.column("s");
  EXPECT_FALSE(s.present(0));
  EXPECT_TRUE(s.present(1));
  EXPECT_EQ(s.string(1), "");
  EXPECT_EQ(s.string(2), "x");
  const Column& n = t.column("n");  // in numbers both are missing
  EXPECT_EQ(n.type, ColumnType::i64);
  EXPECT_FALSE(n.present(0));
  EXPECT_FALSE(n.present(1));
  EXPECT_EQ(n.numbers<std::int64_t>()[2], 1);
  EXPECT_EQ(t.column("f").type, ColumnType::f64);
  EXPECT_EQ(t.column("f").missing_count(), 2u);
  // A column with no value at all is i64, every value missing (as the streaming scan infers it);
  // one whose only values are "" is str, and "" there is an empty string.
  const Table e = read("a,b\n,\"\"\n,\n");
  EXPECT_EQ(e.column("a").type, ColumnType::i64);
  EXPECT_EQ(e.column("b").type, ColumnType::str);
  EXPECT_EQ(e.column("a").missing_count(), 2u);
  EXPECT_EQ(e.column("b").missing_count(), 1u);
  EXPECT_TRUE(e.column("b").present(0));
}

TEST(Csv, NanSignedZeroAndInfinities) {
  const Table t = read("x\nnan\n-0.0\ninf\n-inf\n1.5\n-0\n");
  const auto x = t.column("x").numbers<double>();
  ASSERT_EQ(t.column("x").type, ColumnType::f64);
  EXPECT_TRUE(std::isnan(x[0]));
  EXPECT_EQ(x[1], 0.0);
  EXPECT_TRUE(std::signbit(x[1]));
  EXPECT_EQ(x[2], std::numeric_limits<double>::infinity());
  EXPECT_EQ(x[3], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::signbit(x[5]));  // "-0" in a float column is -0.0, wherever the column became f64
  for (std::size_t chunk : {0, 3}) {
    const Table z = read("x\n-0\n1\n2\n3\n0.5\n", {.threads = 2, .chunk_bytes = chunk});
    EXPECT_TRUE(std::signbit(z.column("x").numbers<double>()[0])) << chunk;
  }
  EXPECT_EQ(read("x\n-0\n1\n").column("x").numbers<std::int64_t>()[0], 0);
  // Tiny values round to zero or a subnormal; huge ones are out of range.
  EXPECT_EQ(read("x\n1e-400\n").column("x").numbers<double>()[0], 0.0);
  EXPECT_EQ(error_of("x\n1e400\n", {.schema = parse_csv_schema("x:f64")}),
            "t.csv:2: column 1 ('x'): '1e400' is out of the range of an f64");
}

TEST(Csv, NumbersOfEverySpelling) {
  // The first value fixes each column's type, so later ones take the one-pass path where they can.
  const Table t = read(
      "i,f,g\n"
      "1,0.5,1.5\n"
      "+5,+1.5,2\n"
      "12,.5,-inf\n"
      "-0,5.,1e-400\n"
      "1000000000000000000,1E3,nan\n"
      "-9223372036854775808,-0.0,\"7\"\n"
      "9223372036854775807,1e308,\r\n");
  const auto i = t.column("i").numbers<std::int64_t>();
  const auto f = t.column("f").numbers<double>();
  const auto g = t.column("g").numbers<double>();
  EXPECT_EQ(std::vector<std::int64_t>(i.begin(), i.end()),
            (std::vector<std::int64_t>{1, 5, 12, 0, 1'000'000'000'000'000'000, INT64_MIN, INT64_MAX}));
  EXPECT_EQ(std::vector<double>(f.begin(), f.end()), (std::vector<double>{0.5, 1.5, 0.5, 5, 1000, -0.0, 1e308}));
  EXPECT_TRUE(std::signbit(f[5]));
  EXPECT_EQ(g[1], 2.0);
  EXPECT_EQ(g[2], -INFINITY);
  EXPECT_EQ(g[3], 0.0);
  EXPECT_TRUE(std::isnan(g[4]));
  EXPECT_EQ(g[5], 7.0);
  EXPECT_FALSE(t.column("g").present(6));
  EXPECT_EQ(error_of("i\n1\n9223372036854775808\n")
                .rfind("t.csv:3: column 1 ('i'): '9223372036854775808' is an integer beyond the range of i64", 0),
            0u);
  // A number followed by text is text: the column becomes str with every value as written.
  const Table s = read("a,b\n1,2\n12x,3\n-0,4\n");
  EXPECT_EQ(s.column("a").type, ColumnType::str);
  EXPECT_EQ(s.column("a").string(1), "12x");
  EXPECT_EQ(s.column("a").string(2), "-0");
}

TEST(Csv, SchemaNamesSomeColumnsTheOthersAreInferred) {
  const Table t = read("id,v,w,u\n001,5,1.25,7\n002,6,2,8\n", {.schema = parse_csv_schema("id:str,v:f32,u:u32")});
  EXPECT_EQ(t.column("id").string(0), "001");
  EXPECT_EQ(t.column("v").numbers<float>()[1], 6.0f);
  EXPECT_EQ(t.column("w").type, ColumnType::f64);
  EXPECT_EQ(t.column("u").numbers<std::uint32_t>()[1], 8u);
  const Table big = read("n\n18446744073709551615\n", {.schema = parse_csv_schema("n:u64")});
  EXPECT_EQ(big.column("n").numbers<std::uint64_t>()[0], std::numeric_limits<std::uint64_t>::max());
  EXPECT_THROW(read("a\n1\n", {.schema = parse_csv_schema("b:i64")}), UsageError);
  EXPECT_THROW(parse_csv_schema("a:i64,a:str"), UsageError);
  EXPECT_THROW(read("a\n1\n", {.schema = {{"a", ColumnType::i64}, {"a", ColumnType::str}}}), UsageError);
  EXPECT_THROW(parse_csv_schema("a=i64"), UsageError);
  EXPECT_THROW(parse_csv_schema("a:i128"), UsageError);
  EXPECT_EQ(parse_csv_schema("a:b:str")[0].name, "a:b");  // the type follows the last colon
}

TEST(Csv, BlankLinesAndByteOrderMark) {
  const Table t = read(
      "\xEF\xBB\xBF"
      "a,b\n1,2\n\n3,4\r\n\r\n");
  EXPECT_EQ(t.column(0).name, "a");
  EXPECT_EQ(t.rows(), 2u);
  const Table one = read("a\n1\n\n3\n");  // one column: a blank line is a missing value
  ASSERT_EQ(one.rows(), 3u);
  EXPECT_FALSE(one.column("a").present(1));
}

TEST(Csv, MalformedFilesNameLineAndColumn) {
  const auto v1_i64 = CsvOptions{.schema = parse_csv_schema("v1:i64")};
  EXPECT_EQ(error_of("a,b,c\n1,2,3\n4,5\n"), "t.csv:3: column 3 ('c'): the row ends after 2 fields; the header has 3");
  EXPECT_EQ(error_of("a,b,c\n1\n"), "t.csv:2: column 2 ('b'): the row ends after 1 field; the header has 3");
  EXPECT_EQ(error_of("a,b\n1,2,3\n"), "t.csv:2: column 3: more fields than the header's 2");
  EXPECT_EQ(error_of("a,b\n1,2,\n"), "t.csv:2: column 3: more fields than the header's 2");
  EXPECT_EQ(error_of("a,v1\nx,1\nx,abc\n", v1_i64), "t.csv:3: column 2 ('v1'): 'abc' is not an i64");
  EXPECT_EQ(error_of("a,v1\nx,1.5\n", v1_i64), "t.csv:2: column 2 ('v1'): '1.5' is not an i64");
  EXPECT_EQ(error_of("v1\n\"a\"\"b\"\n", v1_i64), "t.csv:2: column 1 ('v1'): 'a\"b' is not an i64");
  EXPECT_EQ(error_of("a\n3000000000\n", {.schema = parse_csv_schema("a:i32")}),
            "t.csv:2: column 1 ('a'): '3000000000' is out of the range of an i32");
  EXPECT_EQ(error_of("a\n-1\n", {.schema = parse_csv_schema("a:u32")}), "t.csv:2: column 1 ('a'): '-1' is not a u32");
  EXPECT_EQ(error_of("a\n1\n99999999999999999999\n"),
            "t.csv:3: column 1 ('a'): '99999999999999999999' is an integer beyond the range of i64 (name the "
            "column's type in the schema to read it as f64 or str)");
  EXPECT_EQ(error_of("a,b\n1,\"abc\n2,3\n"),
            "t.csv:2: column 2 ('b'): a quoted field that never ends (its opening quote has no closing quote)");
  EXPECT_EQ(error_of("a,b\n1,\"ab\"c\n"),
            "t.csv:2: column 2 ('b'): 'c' after a closing quote (a quote inside a quoted field must be doubled)");
  EXPECT_EQ(error_of("a,b\n1,2\r3\n"), "t.csv:2: column 2 ('b'): a carriage return not followed by a line feed");
  EXPECT_EQ(error_of("a,b,a\n"), "t.csv:1: column 3: the header names column 1 'a' again");
  EXPECT_EQ(error_of("a,,c\n"), "t.csv:1: column 2: the header gives this column no name");
  EXPECT_EQ(error_of("a,\"x\xff\"\n"), "t.csv:1: column 2: the column name 'x\\xff' is not UTF-8");
  EXPECT_EQ(error_of("a,\"b\n"),
            "t.csv:1: column 2: a quoted field that never ends (its opening quote has no closing quote)");
  // Lines count the line breaks inside quoted fields.
  EXPECT_EQ(error_of("a,v1\n\"x\ny\",1\n\"z\",q\n", v1_i64), "t.csv:4: column 2 ('v1'): 'q' is not an i64");
  // Numbers and strings in one inferred column make it str; no error.
  EXPECT_EQ(read("a\n1\nabc\n").column("a").type, ColumnType::str);
}

TEST(Csv, InferenceAcrossPiecesKeepsTheText) {
  // Early pieces see integers, later ones floats or strings: every piece ends with the same type.
  std::string text = "i,f,s,e\n";
  for (int r = 0; r < 200; ++r) text += fmt::format("{},{},{:03},{}\n", r, r, r, r < 150 ? "" : "1");
  text += "7,0.5,abc,\n";
  for (std::size_t chunk : {std::size_t{0}, std::size_t{16}, std::size_t{100}}) {
    const Table t = read(text, {.threads = 3, .chunk_bytes = chunk});
    ASSERT_EQ(t.rows(), 201u);
    EXPECT_EQ(t.column("i").type, ColumnType::i64);
    EXPECT_EQ(t.column("f").type, ColumnType::f64);
    EXPECT_EQ(t.column("f").numbers<double>()[200], 0.5);
    EXPECT_EQ(t.column("f").numbers<double>()[3], 3.0);
    ASSERT_EQ(t.column("s").type, ColumnType::str);
    EXPECT_EQ(t.column("s").string(7), "007");  // the text, not the number 7
    EXPECT_EQ(t.column("e").type, ColumnType::i64);
    EXPECT_EQ(t.column("e").missing_count(), 151u);
  }
}

namespace {

// Strings that stress quoting: delimiters, quotes, CR/LF, spaces at the edges, non-ASCII bytes.
std::string tricky_string(std::mt19937_64& rng) {
  static const char* parts[] = {"a", ",", "\"", "\n", "\r\n", " ", "\t", "\xc3\xa9", "\xff", "zz", "\"\"", "1"};
  std::string s;
  const int n = static_cast<int>(rng() % 5);
  for (int i = 0; i < n; ++i) s += parts[rng() % std::size(parts)];
  return s;
}

Table random_table(std::size_t rows, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> s(rows);
  std::vector<std::int64_t> i64(rows);
  std::vector<std::int32_t> i32(rows);
  std::vector<std::uint64_t> u64(rows);
  std::vector<double> f64(rows);
  std::vector<float> f32(rows);
  const double specials[] = {0.0, -0.0, std::nan(""), INFINITY, -INFINITY, 1e300, 5e-324, 0.1, -2.5};
  for (std::size_t r = 0; r < rows; ++r) {
    s[r] = tricky_string(rng);
    i64[r] = static_cast<std::int64_t>(rng());
    i32[r] = static_cast<std::int32_t>(rng());
    u64[r] = rng();
    f64[r] =
        rng() % 3 == 0 ? specials[rng() % std::size(specials)] : std::ldexp(double(rng() >> 11), int(rng() % 80) - 60);
    f32[r] = static_cast<float>(f64[r]);
  }
  auto some_missing = [&] { return make_validity(rows, [&](std::size_t) { return rng() % 4 != 0; }); };
  Table t;
  t.add(make_string_column("s, \"quoted\"", s, some_missing()));
  t.add(make_string_column("s2", s));
  t.add(make_column("i64", std::move(i64), some_missing()));
  t.add(make_column("i32", std::move(i32)));
  t.add(make_column("u64", std::move(u64), some_missing()));
  t.add(make_column("f64", std::move(f64), some_missing()));
  t.add(make_column("f32", std::move(f32)));
  return t;
}

}  // namespace

TEST(Csv, RoundTripWithSchemaIsExact) {
  const Table t = random_table(300, 1);
  const std::string text = csv_of(t);
  const Table back = read(text, {.schema = schema_of(t)});
  EXPECT_TRUE(same_table(t, back));
  const Table tabs = read(csv_of(t, '\t'), {.schema = schema_of(t)});
  EXPECT_TRUE(same_table(t, tabs));
}

TEST(Csv, PiecesStartingInsideQuotedFieldsGiveTheSameTable) {
  const Table t = random_table(120, 2);
  const std::string text = csv_of(t);
  const Table whole = read(text, {.schema = schema_of(t), .threads = 1});
  ASSERT_TRUE(same_table(t, whole));
  for (std::size_t chunk : {1, 2, 3, 7, 16, 61, 500}) {
    for (int threads : {1, 2, 5}) {
      const Table pieces = read(text, {.schema = schema_of(t), .threads = threads, .chunk_bytes = chunk});
      ASSERT_TRUE(same_table(whole, pieces)) << "chunk " << chunk << " threads " << threads;
    }
  }
}

TEST(Csv, InferredTypesAreTheSameOnAnyPieceSize) {
  const Table all = random_table(150, 3);
  Table t;
  for (const auto& c : all.columns())
    if (c.name != "u64") t.add(c);
  const std::string text = csv_of(t);
  const Table whole = read(text, {.threads = 1});
  EXPECT_EQ(whole.column("s2").type, ColumnType::str);
  EXPECT_EQ(whole.column("i64").type, ColumnType::i64);
  EXPECT_EQ(whole.column("f64").type, ColumnType::f64);
  for (std::size_t chunk : {1, 5, 64, 999})
    EXPECT_TRUE(same_table(whole, read(text, {.threads = 4, .chunk_bytes = chunk}))) << chunk;
}

TEST(Csv, ErrorsAreTheSameOnAnyPieceSize) {
  // u64 values beyond i64 in an integer column: the first one is named, on any piece size.
  const std::string big = csv_of(random_table(150, 3));
  const std::string first = error_of(big, {.threads = 1});
  EXPECT_NE(first.find("column 5 ('u64')"), std::string::npos) << first;
  for (std::size_t chunk : {1, 5, 64, 999}) EXPECT_EQ(error_of(big, {.threads = 4, .chunk_bytes = chunk}), first);

  const std::string text = "a,b\n\"x,\n\"\"y\",1\n2,\"ok\"\n3,\"q\"r\n4,5\n\"open,6\n";
  const std::string expected =
      "t.csv:5: column 2 ('b'): 'r' after a closing quote (a quote inside a quoted field must be doubled)";
  for (std::size_t chunk : {0, 1, 2, 3, 5, 8, 13})
    EXPECT_EQ(error_of(text, {.threads = 3, .chunk_bytes = chunk}), expected) << chunk;
  const std::string ragged = "a,b\n1,2\n3,4\n5\n6,7\n";
  for (std::size_t chunk : {0, 1, 4})
    EXPECT_EQ(error_of(ragged, {.threads = 2, .chunk_bytes = chunk}),
              "t.csv:4: column 2 ('b'): the row ends after 1 field; the header has 2");
}

TEST(Csv, LastLineWithoutLineBreakCutInsideItByPieces) {
  // Pieces cut inside an unterminated last line all start at the data's end: the piece holding that
  // line is not the last one, and still has room for it (found by fuzz/csv).
  const std::string text = "a,b\n1,2\n34,56789";
  const Table whole = read(text, {.threads = 1});
  ASSERT_EQ(whole.rows(), 2u);
  for (std::size_t chunk : {1, 2, 3, 5})
    EXPECT_TRUE(same_table(whole, read(text, {.threads = 3, .chunk_bytes = chunk}))) << chunk;
  const std::string more_fields = "x,y\nnan,i,f\n1,1.5\n99999\t\t\t";  // one column when tab-separated
  const std::string expected = "t.csv:4: column 2: more fields than the header's 1";
  EXPECT_EQ(error_of(more_fields, {.delimiter = '\t', .threads = 1}), expected);
  for (std::size_t chunk : {1, 5})
    EXPECT_EQ(error_of(more_fields, {.delimiter = '\t', .threads = 3, .chunk_bytes = chunk}), expected) << chunk;
}

TEST(Csv, WriterQuotesOnlyWhereNeeded) {
  Table t;
  t.add(make_string_column("s", {"plain", "a,b", "q\"", "", "x", " lead", "trail\t", "l\nf"},
                           make_validity(8, [](std::size_t i) { return i != 4; })));
  t.add(make_column<double>("d", {0.1, -0.0, std::nan(""), INFINITY, -INFINITY, 1e20, 3, 2.5}));
  t.add(make_column<std::int32_t>("n", {1, -2, 3, 4, 5, 6, 7, 8},
                                  make_validity(8, [](std::size_t i) { return i != 2; })));
  EXPECT_EQ(csv_of(t),
            "s,d,n\n"
            "plain,0.1,1\n"
            "\"a,b\",-0,-2\n"
            "\"q\"\"\",nan,\n"
            "\"\",inf,4\n"
            ",-inf,5\n"
            "\" lead\",1e+20,6\n"
            "\"trail\t\",3,7\n"
            "\"l\nf\",2.5,8\n");
  EXPECT_EQ(csv_of(t, '\t').substr(0, 6), "s\td\tn\n");
  std::ostringstream s;
  EXPECT_THROW(write_csv(s, t, '\n'), UsageError);
  EXPECT_EQ(csv_of(Table{}), "");
}

TEST(Csv, WriterHandlesManyRowsInOrder) {
  const std::size_t n = 300'001;  // several rounds of blocks, each written while the next is formatted
  std::vector<std::int64_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int64_t>(i * 7);
  Table t;
  t.add(make_column("v", std::move(v)));
  const Table back = read(csv_of(t), {.threads = 2});
  EXPECT_TRUE(same_table(t, back));
}

// Blocks of 16384 rows are written through a pointer into room reserved for their widest
// numbers, and a block whose strings need no quotes copies them as they are: the widest values of
// every type, and quotes needed in some blocks only.
TEST(Csv, WriterKeepsTheWidestNumbersAndQuotesBlockByBlock) {
  const std::size_t n = 40'000;  // three blocks
  std::vector<std::string> s(n);
  std::vector<std::int64_t> i64(n);
  std::vector<std::uint64_t> u64(n, std::numeric_limits<std::uint64_t>::max());
  std::vector<std::int32_t> i32(n);
  std::vector<std::uint32_t> u32(n, std::numeric_limits<std::uint32_t>::max());
  std::vector<double> f64(n);
  std::vector<float> f32(n);
  const double doubles[] = {-2.2250738585072014e-308, -1.7976931348623157e308, 5e-324, -0.0, 0.0001234567890123456};
  for (std::size_t r = 0; r < n; ++r) {
    s[r] = fmt::format("k{}", r % 977);
    i64[r] = r % 2 ? std::numeric_limits<std::int64_t>::min() : std::numeric_limits<std::int64_t>::max();
    i32[r] = std::numeric_limits<std::int32_t>::min();
    f64[r] = doubles[r % 5];
    f32[r] = r % 2 ? -1.17549435e-38f : -3.4028235e38f;
  }
  s[20'000] = "a,b";
  s[39'999] = "";
  Table t;
  t.add(make_string_column("s", std::move(s), make_validity(n, [](std::size_t r) { return r != 30'000; })));
  t.add(make_column("i64", std::move(i64)));
  t.add(make_column("u64", std::move(u64)));
  t.add(make_column("i32", std::move(i32)));
  t.add(make_column("u32", std::move(u32)));
  t.add(make_column("f64", std::move(f64)));
  t.add(make_column("f32", std::move(f32)));
  const std::string text = csv_of(t);
  EXPECT_EQ(
      text.substr(0, text.find('\n', text.find('\n') + 1) + 1),
      "s,i64,u64,i32,u32,f64,f32\n"
      "k0,9223372036854775807,18446744073709551615,-2147483648,4294967295,-2.2250738585072014e-308,-3.4028235e+38\n");
  EXPECT_NE(text.find("\n\"a,b\",9223372036854775807,"), std::string::npos);
  EXPECT_NE(text.find("\n,9223372036854775807,"), std::string::npos);  // row 30000: no string
  EXPECT_TRUE(text.ends_with(",0.0001234567890123456,-1.1754944e-38\n"));
  EXPECT_NE(text.find("\n\"\",-9223372036854775808,"), std::string::npos);  // the last row's empty string
  EXPECT_TRUE(same_table(t, read(text, {.schema = schema_of(t), .threads = 2})));
}

// pandas (Debian's python3-pandas) reads the written file to the same values; pandas cannot tell
// "" from a missing string, so the strings here are never empty.
TEST(Csv, PandasReadsTheWrittenValues) {
  if (std::system("/usr/bin/python3 -c 'import pandas' 2>/dev/null") != 0) GTEST_SKIP() << "no pandas";
  const std::size_t n = 200;
  std::mt19937_64 rng(7);
  std::vector<std::string> s(n);
  std::vector<std::int64_t> i(n);
  std::vector<double> f(n);
  const double specials[] = {-0.0, std::nan(""), INFINITY, -INFINITY, 0.1, 1e-300, 123456789.125};
  for (std::size_t r = 0; r < n; ++r) {
    do s[r] = tricky_string(rng);
    while (s[r].empty() || s[r].find('\xff') != std::string::npos);        // pandas wants UTF-8
    i[r] = static_cast<std::int64_t>(rng() >> 11) * (rng() % 2 ? 1 : -1);  // pandas' Int64 passes through f64
    f[r] = rng() % 2 ? specials[rng() % std::size(specials)] : std::ldexp(double(rng() >> 11), int(rng() % 40) - 20);
  }
  Table t;
  t.add(make_string_column("s", s, make_validity(n, [](std::size_t r) { return r % 5 != 0; })));
  t.add(make_column("i", std::move(i), make_validity(n, [](std::size_t r) { return r % 7 != 0; })));
  t.add(make_column("f", std::move(f), make_validity(n, [](std::size_t r) { return r % 3 != 0; })));
  TempDir d;
  std::ofstream(d.file("t.csv")) << csv_of(t);
  const std::string cmd = fmt::format(
      "/usr/bin/python3 -c \""
      "import pandas as pd, json, math;"
      "df = pd.read_csv('{}', dtype={{'s': object, 'i': 'Int64', 'f': 'float64'}}, keep_default_na=False,"
      " na_values={{'s': [''], 'i': [''], 'f': ['', 'nan']}}, float_precision='round_trip');"
      "print(json.dumps({{'s': [None if pd.isna(x) else x for x in df.s],"
      " 'i': [None if pd.isna(x) else int(x) for x in df.i],"
      " 'f': ['nan' if math.isnan(x) else float.hex(x) for x in df.f]}}))\"",
      d.file("t.csv"));
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  ASSERT_EQ(::pclose(p), 0) << out;
  const auto j = nlohmann::json::parse(out);
  for (std::size_t r = 0; r < n; ++r) {
    const Column &cs = t.column("s"), &ci = t.column("i"), &cf = t.column("f");
    EXPECT_EQ(j["s"][r].is_null(), !cs.present(r)) << r;
    if (cs.present(r)) {
      EXPECT_EQ(j["s"][r].get<std::string>(), cs.string(r)) << r;
    }
    EXPECT_EQ(j["i"][r].is_null(), !ci.present(r)) << r;
    if (ci.present(r)) {
      EXPECT_EQ(j["i"][r].get<std::int64_t>(), ci.numbers<std::int64_t>()[r]) << r;
    }
    const double v = cf.numbers<double>()[r];
    const std::string want = !cf.present(r) || std::isnan(v) ? "nan" : fmt::format("{:a}", v);
    std::string got = j["f"][r].get<std::string>();
    if (got != "nan") got = fmt::format("{:a}", std::strtod(got.c_str(), nullptr));  // Python's hex, C's spelling
    EXPECT_EQ(got, want) << r;
  }
}

// The dialect DuckDB, pandas and Python's csv read (table/csv_dialect.hpp), from the csv-spectrum
// edge cases: leading zeros keep a value text, a quote inside an unquoted field is a literal byte.
TEST(CsvDialect, LeadingZerosKeepTheTextOtherZerosAreNumbers) {
  const std::string text = "zip,x,y,z\n08123,-0.5,0,1\n00501,0,5,2\n10001,0.5,-7,007\n";
  for (std::size_t chunk : {0, 1, 2, 5, 9, 17}) {
    const Table t = read(text, {.threads = 3, .chunk_bytes = chunk});
    ASSERT_EQ(t.column("zip").type, ColumnType::str) << chunk;
    EXPECT_EQ(t.column("zip").string(0), "08123");
    EXPECT_EQ(t.column("zip").string(1), "00501");
    ASSERT_EQ(t.column("x").type, ColumnType::f64);
    EXPECT_EQ(t.column("x").numbers<double>()[0], -0.5);
    EXPECT_EQ(t.column("x").numbers<double>()[2], 0.5);
    EXPECT_EQ(t.column("y").type, ColumnType::i64);
    ASSERT_EQ(t.column("z").type, ColumnType::str);  // 007 after two integers: text after all
    EXPECT_EQ(t.column("z").string(2), "007");
    EXPECT_EQ(csv_of(t), "zip,x,y,z\n08123,-0.5,0,1\n00501,0,5,2\n10001,0.5,-7,007\n");  // round trip
  }
  for (const char* v : {"00", "-007", "+01", "00.5", "01e3"})
    EXPECT_EQ(read(fmt::format("a\n1\n{}\n", v)).column("a").type, ColumnType::str) << v;
  for (const char* v : {"0", "-0", "0.5", "-0.5", "0e3", "+0", "10"})
    EXPECT_NE(read(fmt::format("a\n1\n{}\n", v)).column("a").type, ColumnType::str) << v;
  // A type the schema names still reads them as numbers.
  const Table fixed = read(text, {.schema = parse_csv_schema("zip:i64,z:f64")});
  EXPECT_EQ(fixed.column("zip").numbers<std::int64_t>()[0], 8123);
  EXPECT_EQ(fixed.column("z").numbers<double>()[2], 7.0);
}

namespace {

// A CSV whose unquoted fields hold literal quotes among quoted fields with line breaks, commas
// and doubled quotes: the quote parity of any byte after a literal quote says nothing. The first
// field's quote is plainly literal (a byte other than a delimiter, line end or quote on each side:
// the splitter sees it); with `plain` false only quotes that could open, close or double a
// quoted field appear (ab", x""y: only the piece parser can tell).
std::string literal_quote_csv(std::size_t rows, std::uint64_t seed, bool plain) {
  static const char* fields[] = {
      "37\u00b036'37.8\"N", "a\"", "x\"\"y", "\"q\nr\"", "\"s,\"\"t\"\"\"", "\"\"", "7", "\"\n\"", "plain",
      "\"u\r\nv\""};
  std::mt19937_64 rng(seed);
  std::string text = "p,q,n\n";
  for (std::size_t r = 0; r < rows; ++r) {
    for (int j = 0; j < 2; ++j)
      text += fields[plain ? rng() % std::size(fields) : 1 + rng() % (std::size(fields) - 1)] + std::string(",");
    text += fmt::format("{}\n", r);
  }
  return text;
}

}  // namespace

TEST(CsvDialect, LiteralQuotesReadTheSameOnAnyPieceSizeAndThreadCount) {
  const Table t = read("place,n\n37\u00b036'37.8\"N 121\u00b02'17.9\"W,1\nab\"c,2\n\"x\"\"y\",3\n");
  ASSERT_EQ(t.rows(), 3u);
  EXPECT_EQ(t.column("place").string(0), "37\u00b036'37.8\"N 121\u00b02'17.9\"W");
  EXPECT_EQ(t.column("place").string(1), "ab\"c");
  EXPECT_EQ(t.column("place").string(2), "x\"y");
  EXPECT_EQ(t.column("n").type, ColumnType::i64);
  for (std::uint64_t seed : {1, 2, 3, 4}) {
    const std::string text = literal_quote_csv(60, seed, seed % 2 == 1);
    const Table whole = read(text, {.threads = 1});
    ASSERT_EQ(whole.rows(), 60u);
    for (std::size_t r = 0; r < 60; ++r) ASSERT_EQ(whole.column("n").numbers<std::int64_t>()[r], std::int64_t(r));
    for (std::size_t chunk : {1, 2, 3, 5, 8, 13, 40, 200})
      for (int threads : {1, 2, 4})
        ASSERT_TRUE(same_table(whole, read(text, {.threads = threads, .chunk_bytes = chunk})))
            << "seed " << seed << " chunk " << chunk << " threads " << threads;
  }
}

TEST(CsvDialect, AQuoteAfterAClosingQuoteStaysAnError) {
  // Literal quotes before it do not move the error, whatever the pieces.
  const std::string text = "a,b\nx\"y,1\n\"p\nq\",2\nz\",\"ab\"c\n4,5\n";
  const std::string expected =
      "t.csv:5: column 2 ('b'): 'c' after a closing quote (a quote inside a quoted field must be doubled)";
  for (std::size_t chunk : {0, 1, 2, 3, 5, 8, 13})
    for (int threads : {1, 3}) EXPECT_EQ(error_of(text, {.threads = threads, .chunk_bytes = chunk}), expected) << chunk;
}

TEST(Csv, AFirstColumnNameStartingWithAByteOrderMarkReadsBack) {
  // Unquoted, the reader would skip those bytes as the file's byte order mark (found by fuzz/csv).
  const Table t = read("\"\xEF\xBB\xBF\",p\n1,2\n");
  ASSERT_EQ(t.column(0).name, "\xEF\xBB\xBF");
  const Table back = read(csv_of(t), {.schema = schema_of(t)});
  EXPECT_TRUE(same_table(t, back));
}
