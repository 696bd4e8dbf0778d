// groupby_csv against the table reader and groupby on the same text: the CSV edge cases of
// test_csv.cpp (quotes, CRLF, BOM, blank lines, missing values, ragged rows with the same error),
// chunk boundaries forced small (inside quoted fields and CRLF), a type that changes after the
// sample, and the two dialect rules of the scan (literal quotes, leading zeros).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "tandem/core/error.hpp"
#include "tandem/groupby_csv.hpp"
#include "tandem/table/csv.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

std::string csv_of(const Table& t) {
  std::ostringstream s;
  write_csv(s, t);
  return s.str();
}

struct Case {
  TempDir dir;
  std::string path;
  explicit Case(const std::string& text, const std::string& name = "t.csv") : path(dir.file(name)) {
    std::ofstream(path, std::ios::binary) << text;
  }
};

GroupBySpec spec_of(std::vector<std::string> by, const std::string& aggs) {
  return {std::move(by), parse_aggregations(aggs)};
}

std::string scanned(const std::string& path, const GroupBySpec& spec, std::size_t chunk, std::size_t sample = 20000,
                    CsvSchema schema = {}) {
  GroupByCsvOptions o;
  o.csv.chunk_bytes = chunk;
  o.csv.threads = 2;
  o.csv.schema = std::move(schema);
  o.sample_rows = sample;
  return csv_of(groupby_csv(path, spec, o).table);
}

std::string via_table(const std::string& text, const GroupBySpec& spec, CsvSchema schema = {}) {
  GroupByOptions g;
  g.device = Device::cpu;
  return csv_of(groupby(read_csv_text(text, {.schema = std::move(schema)}, "t.csv"), spec, g).table);
}

// The same answer as the table path on every chunk size from tiny (many chunk boundaries inside
// quoted fields and CRLF) to whole.
void expect_same(const std::string& text, const GroupBySpec& spec, CsvSchema schema = {}) {
  SCOPED_TRACE(text);
  const Case c(text);
  const std::string want = via_table(text, spec, schema);
  for (std::size_t chunk : {1, 3, 7, 16, 64, 1000, 0})
    for (std::size_t sample : {1, 20000})
      ASSERT_EQ(scanned(c.path, spec, chunk, sample, schema), want) << "chunk " << chunk << " sample " << sample;
}

}  // namespace

TEST(ScanGroupBy, EdgeCasesOfTheTableReaderGiveTheSameAnswer) {
  expect_same("name,n\n\"a,b\",1\n\"say \"\"hi\"\"\",2\n\"two\nlines\",3\n\"caf\xc3\xa9 \xff\",4\n\"\",5\n\"a,b\",6\n",
              spec_of({"name"}, "sum(n),count()"));
  expect_same("a,b\r\n1,\"x\r\ny\"\r\n2,z\r\n1,z\r\n", spec_of({"b"}, "sum(a),min(a)"));
  expect_same(
      "\xEF\xBB\xBF"
      "a,b\n1,2\n\n3,4\r\n\r\n1,5\n",
      spec_of({"a"}, "sum(b),count()"));
  expect_same("k,v,w\nx,1,\ny,,2.5\nx,3,\"\"\n,4,1\n\"\",5,nan\n", spec_of({"k"}, "sum(v),count(w),max(w),count()"));
  expect_same("k,v\n1,-0\n2,1.5\n1,2\n", spec_of({"k"}, "sum(v),min(v)"));
  expect_same("a\n1\n\n3\n1\n", spec_of({"a"}, "count()"));  // one column: a blank line is a missing key
  expect_same("k,v\na,1\nb,2", spec_of({"k"}, "sum(v)"));    // no line feed at the end
  expect_same("k,v\n", spec_of({"k"}, "count()"));           // header only
  expect_same("k\tv\tw\na\t1\tx,y\nb\t2\tz\n", spec_of({"w"}, "sum(v)"));
  expect_same("k,v\na,1\nb,2\n", spec_of({"k"}, "sum(v)"), parse_csv_schema("v:f64"));
}

TEST(ScanGroupBy, MalformedFilesGiveTheTableReadersErrors) {
  const auto spec = spec_of({"a"}, "count()");
  const auto v1 = spec_of({"a"}, "sum(v1)");
  for (const auto& [text, s] : std::vector<std::pair<std::string, GroupBySpec>>{
           {"a,b,c\n1,2,3\n4,5\n", spec},
           {"a,b,c\n1\n", spec},
           {"a,b\n1,2,3\n", spec},
           {"a,b\n1,2,\n", spec},
           {"a,b\n1,\"abc\n2,3\n", spec},
           {"a,b\n1,\"ab\"c\n", spec},
           {"a,b\n1,2\r3\n", spec},
           {"a,b,a\n", spec},
           {"a,,c\n", spec},
           {"a,v1\n\"x\ny\",1\n\"z\",q\n", v1},
       }) {
    const Case c(text);
    const CsvSchema schema = s.aggs[0].column == "v1" ? parse_csv_schema("v1:i64") : CsvSchema{};
    const std::string want = input_error([&] { (void)read_csv_text(text, {.schema = schema}, c.path); });
    for (std::size_t chunk : {1, 5, 0})
      EXPECT_EQ(input_error([&] { (void)scanned(c.path, s, chunk, 20000, schema); }), want) << text;
  }
  const Case empty("");
  EXPECT_EQ(input_error([&] { (void)scanned(empty.path, spec, 0); }),
            empty.path + ": empty file (expected a header row naming the columns)");
  EXPECT_THROW((void)groupby_csv(empty.path + "-absent", spec), InputError);
  const Case ok("a,b\n1,2\n");
  EXPECT_THROW((void)groupby_csv(ok.path, spec_of({"zz"}, "count()")), UsageError);
}

TEST(ScanGroupBy, ATypeThatChangesAfterTheSampleWidensAndRereads) {
  std::string text = "k,v\n";
  for (int i = 0; i < 5000; ++i) text += "k" + std::to_string(i % 7) + "," + std::to_string(i) + "\n";
  std::string floats = text + "k1,2.5\n";
  std::string strings = text + "k1,abc\n";
  expect_same(floats, spec_of({"k"}, "sum(v),count()"));
  expect_same(strings, spec_of({"k"}, "max(v),count()"));
  expect_same(strings, spec_of({"v"}, "count()"));
  // With the type fixed by the schema the late value is an error naming it.
  const Case c(floats);
  EXPECT_EQ(input_error([&] { (void)scanned(c.path, spec_of({"k"}, "sum(v)"), 4096, 100, parse_csv_schema("v:i64")); }),
            c.path + ":5002: column 2 ('v'): '2.5' is not an i64");
}

TEST(ScanGroupBy, LiteralQuotesAndLeadingZerosAsOtherToolsReadThem) {
  const Case c("place,zip,n\n37°36'37.8\"N 121°2'17.9\"W,08123,1\nx,00501,2\n37°36'37.8\"N 121°2'17.9\"W,10001,3\n");
  for (std::size_t chunk : {1, 8, 0}) {
    EXPECT_EQ(scanned(c.path, spec_of({"place"}, "sum(n)"), chunk),
              "place,sum_n\n\"37°36'37.8\"\"N 121°2'17.9\"\"W\",4\nx,2\n");
    EXPECT_EQ(scanned(c.path, spec_of({"zip"}, "sum(n)"), chunk), "zip,sum_n\n00501,2\n08123,1\n10001,3\n");
  }
  const Case numbers("z,n\n0,1\n0.5,2\n-0.5,3\n");
  EXPECT_EQ(scanned(numbers.path, spec_of({"z"}, "sum(n)"), 0), "z,sum_n\n-0.5,3\n0,1\n0.5,2\n");
}

// Both readers follow one dialect (table/csv_dialect.hpp): the same files give the same answers.
TEST(ScanGroupBy, BothReadersReadTheSameDialect) {
  const std::string places =
      "place,zip,n\n37°36'37.8\"N 121°2'17.9\"W,08123,1\nx,00501,2\n37°36'37.8\"N 121°2'17.9\"W,10001,3\n";
  expect_same(places, spec_of({"place"}, "sum(n),count()"));
  expect_same(places, spec_of({"zip"}, "sum(n)"));
  expect_same("z,n,w\n0,1,07\n0.5,2,1\n-0.5,3,2\n", spec_of({"z"}, "sum(n),max(w)"));
  expect_same("k,v\na\"b,\"x\ny\"\nc,\"d\"\"\"\na\"b,e\"f\n", spec_of({"k"}, "max(v),count()"));
  // A column with no value at all is i64 in both: its sum is missing, not an error.
  expect_same("k,v\na,\nb,\n", spec_of({"k"}, "sum(v),count(v)"));
  expect_same("k,v\n", spec_of({"k"}, "sum(v)"));
  const Case bad("a,b\nx\"y,1\n1,\"ab\"c\n");
  const std::string want = input_error([&] { (void)read_csv_text("a,b\nx\"y,1\n1,\"ab\"c\n", {}, bad.path); });
  EXPECT_NE(want.find(":3: column 2 ('b'): 'c' after a closing quote"), std::string::npos) << want;
  for (std::size_t chunk : {1, 5, 0})
    EXPECT_EQ(input_error([&] { (void)scanned(bad.path, spec_of({"a"}, "count()"), chunk); }), want) << chunk;
}
