// groupby_csv with device gpu: the file parsed and grouped on the GPU gives the reference's
// answer (the db-benchmark questions with missing values, string and integer keys, holistic
// aggregations); where the device cannot decide a field (a literal quote), the file streams on
// the CPU with a note; a malformed file gives the CPU reader's error; a header-only file gives
// an empty answer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "groupby_reference.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/groupby.hpp"
#include "tandem/groupby_csv.hpp"
#include "tandem/table/csv.hpp"
#include "test_util.hpp"

using namespace groupby_test;

namespace {

GroupByCsvOptions on_gpu() {
  GroupByCsvOptions o;
  o.device = Device::gpu;
  return o;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool ran_on_gpu(const GroupByResult& r) { return r.report.explain().find("parse CSV") != std::string::npos; }

}  // namespace

TEST(GpuCsvGroupBy, TheDbBenchmarkQuestionsMatchTheReference) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  GroupByDataSpec data;
  data.rows = 30000;
  data.k = 10;
  data.nas_percent = 5;
  std::ostringstream text;
  write_csv(text, generate_groupby_table(data));
  const std::string path = dir.file("g.csv");
  write_file(path, text.str());
  const Table t = read_csv(path);
  const std::pair<const char*, const char*> questions[] = {
      {"id1", "sum(v1)"},
      {"id1,id2", "sum(v1)"},
      {"id3", "sum(v1),mean(v3)"},
      {"id4", "mean(v1),mean(v2),mean(v3)"},
      {"id6", "sum(v1),sum(v2),sum(v3)"},
      {"id4,id5", "median(v3),std(v3)"},
      {"id3", "max(v1),min(v2)"},
      {"id6", "top(v3,2)"},
      {"id1,id2,id3,id4,id5,id6", "sum(v3),count()"},
      {"id3", "nunique(id1),first(id2),last(v3),min(id1),max(id2)"},
  };
  for (const auto& [by, aggs] : questions) {
    GroupBySpec spec;
    std::stringstream keys(by);
    for (std::string k; std::getline(keys, k, ',');) spec.by.push_back(k);
    spec.aggs = parse_aggregations(aggs);
    const auto r = groupby_csv(path, spec, on_gpu());
    const std::string what = std::string(by) + ": " + aggs;
    EXPECT_TRUE(ran_on_gpu(r)) << what << "\n" << r.report.explain();
    expect_matches(r.table, reference_groupby(t, spec), what);
  }
}

TEST(GpuCsvGroupBy, FieldsOnlyTheCpuReaderDecidesStreamOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  const std::string path = dir.file("quote.csv");
  write_file(path, "k,v\nsay \"hi\",1\nb,2\nsay \"hi\",3\n");  // a literal quote in an unquoted field
  const GroupBySpec spec{{"k"}, parse_aggregations("sum(v)")};
  const auto r = groupby_csv(path, spec, on_gpu());
  EXPECT_FALSE(ran_on_gpu(r));
  EXPECT_NE(r.report.explain().find("CSV read on the CPU"), std::string::npos) << r.report.explain();
  expect_matches(r.table, reference_groupby(read_csv(path), spec), "literal quote");

  const std::string bad = dir.file("bad.csv");
  write_file(bad, "k,v\n\"ab\"c,1\n");
  const std::string gpu_error = input_error([&] { groupby_csv(bad, spec, on_gpu()); });
  EXPECT_FALSE(gpu_error.empty());
  EXPECT_EQ(gpu_error, input_error([&] { groupby_csv(bad, spec); }));
}

TEST(GpuCsvGroupBy, HeaderOnlyAndOneRowFiles) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  const GroupBySpec spec{{"k"}, parse_aggregations("sum(v),count()")};
  const std::string empty = dir.file("empty.csv");
  write_file(empty, "k,v\n");
  const auto e = groupby_csv(empty, spec, on_gpu());
  EXPECT_EQ(e.table.rows(), 0u);
  EXPECT_EQ(e.table.num_columns(), 3u);
  const std::string one = dir.file("one.csv");
  write_file(one, "k,v\r\nx,7");  // CRLF, no final line break
  const auto o = groupby_csv(one, spec, on_gpu());
  expect_matches(o.table, reference_groupby(read_csv(one), spec), "one row");
}
