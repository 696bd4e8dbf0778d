// groupby_csv with device gpu: the file parsed and grouped on the GPU gives the reference's
// answer (the db-benchmark questions with missing values, string and integer keys, holistic
// aggregations); where the device cannot decide a field (a literal quote), the file streams on
// the CPU with a note; a malformed file gives the CPU reader's error; a header-only file gives
// an empty answer. A file read into the GPU in pieces (forced small here), and a pipe, give the
// same answers: rows and quoted line breaks cut across pieces, types that change after the first
// piece, aggregations that do not combine across pieces, a row longer than a piece.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

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

bool in_pieces(const GroupByResult& r) { return r.report.explain().find("in pieces") != std::string::npos; }

GroupByCsvOptions in_gpu_pieces(std::size_t bytes) {
  GroupByCsvOptions o = on_gpu();
  o.gpu_piece_bytes = bytes;
  return o;
}

GroupBySpec spec_of(const std::string& by, const std::string& aggs) {
  GroupBySpec spec;
  std::stringstream keys(by);
  for (std::string k; std::getline(keys, k, ',');) spec.by.push_back(k);
  spec.aggs = parse_aggregations(aggs);
  return spec;
}

// The db-benchmark data (K = 10) as CSV text.
std::string db_benchmark_csv(std::size_t rows, double nas_percent) {
  GroupByDataSpec data;
  data.rows = rows;
  data.k = 10;
  data.nas_percent = nas_percent;
  std::ostringstream text;
  write_csv(text, generate_groupby_table(data));
  return text.str();
}

// groupby_csv over a FIFO that a thread fills with `text`.
GroupByResult through_pipe(const std::string& fifo, const std::string& text, const GroupBySpec& spec,
                           const GroupByCsvOptions& options) {
  std::thread writer([&] { write_file(fifo, text); });
  try {
    GroupByResult r = groupby_csv(fifo, spec, options);
    writer.join();
    return r;
  } catch (...) {
    writer.join();
    throw;
  }
}

}  // namespace

TEST(GpuCsvGroupBy, TheDbBenchmarkQuestionsMatchTheReference) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  const std::string path = dir.file("g.csv");
  write_file(path, db_benchmark_csv(30000, 5));
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
    const GroupBySpec spec = spec_of(by, aggs);
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

TEST(GpuCsvGroupByPieces, TheQuestionsThatCombineMatchTheReference) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  const std::string path = dir.file("g.csv");
  write_file(path, db_benchmark_csv(20000, 5));
  const Table t = read_csv(path);
  const std::pair<const char*, const char*> questions[] = {
      {"id1", "sum(v1)"},
      {"id1,id2", "sum(v1),count()"},
      {"id3", "sum(v1),mean(v3)"},
      {"id4", "mean(v1),mean(v2),mean(v3)"},
      {"id6", "sum(v1),sum(v2),sum(v3)"},
      {"id3", "max(v1),min(v2),min(id1),max(id2),count(v3)"},
      {"id1,id2,id3,id4,id5,id6", "sum(v3),count()"},
  };
  for (const std::size_t piece : {std::size_t{4096}, std::size_t{100000}}) {
    for (const auto& [by, aggs] : questions) {
      const GroupBySpec spec = spec_of(by, aggs);
      const auto r = groupby_csv(path, spec, in_gpu_pieces(piece));
      const std::string what = std::string(by) + ": " + aggs + ", pieces of " + std::to_string(piece);
      EXPECT_TRUE(ran_on_gpu(r) && in_pieces(r)) << what << "\n" << r.report.explain();
      expect_matches(r.table, reference_groupby(t, spec), what);
    }
  }
}

TEST(GpuCsvGroupByPieces, QuotedLineBreaksAndCrlfAcrossPieces) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  std::string text = "\xEF\xBB\xBFk,note,v\r\n";
  for (int i = 0; i < 3000; ++i) {
    const std::string key = i % 7 == 0 ? "\"a,\r\nb\"" : "k" + std::to_string(i % 13);
    const std::string note = i % 5 == 0 ? "\"line\nbreak \"\"quoted\"\"\"" : "plain";
    text += key + "," + note + "," + std::to_string(i % 11 - 3) + "\r\n";
    if (i % 97 == 0) text += "\r\n";  // a blank line
  }
  text += "last,x,5";  // no final line break
  const std::string path = dir.file("q.csv");
  write_file(path, text);
  const GroupBySpec spec = spec_of("k", "sum(v),min(note),count()");
  const auto want = reference_groupby(read_csv(path), spec);
  for (const std::size_t piece : {std::size_t{61}, std::size_t{256}, std::size_t{4099}}) {
    const auto r = groupby_csv(path, spec, in_gpu_pieces(piece));
    EXPECT_TRUE(ran_on_gpu(r) && in_pieces(r)) << piece << "\n" << r.report.explain();
    expect_matches(r.table, want, "pieces of " + std::to_string(piece));
  }
}

TEST(GpuCsvGroupByPieces, APipeIsReadInPieces) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  const std::string text = db_benchmark_csv(5000, 0);
  const std::string fifo = dir.file("g.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string file = dir.file("g.csv");
  write_file(file, text);
  const GroupBySpec spec = spec_of("id2", "sum(v1),mean(v3),max(v2)");
  const auto r = through_pipe(fifo, text, spec, in_gpu_pieces(8192));
  EXPECT_TRUE(ran_on_gpu(r) && in_pieces(r)) << r.report.explain();
  expect_matches(r.table, reference_groupby(read_csv(file), spec), "pipe");
  // Pieces of the default size (a share of the GPU's memory): one piece.
  const auto whole = through_pipe(fifo, text, spec, on_gpu());
  EXPECT_TRUE(ran_on_gpu(whole)) << whole.report.explain();
  expect_matches(whole.table, reference_groupby(read_csv(file), spec), "pipe, one piece");
  // A header and no rows.
  const auto empty = through_pipe(fifo, "id2,v1,v2,v3\n", spec, in_gpu_pieces(8192));
  EXPECT_EQ(empty.table.rows(), 0u);
  EXPECT_EQ(empty.table.num_columns(), 4u);
}

TEST(GpuCsvGroupByPieces, TypesThatChangeAfterTheFirstPiece) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  // Narrower later: decimals first, then integers only; an all-missing stretch of a string key.
  std::string narrower = "k,v\n";
  for (int i = 0; i < 400; ++i) narrower += "a" + std::to_string(i % 5) + "," + std::to_string(i) + ".5\n";
  for (int i = 0; i < 400; ++i)
    narrower += (i < 200 ? std::string() : "b" + std::to_string(i % 3)) + "," + std::to_string(i) + "\n";
  const std::string n_path = dir.file("narrower.csv");
  write_file(n_path, narrower);
  const GroupBySpec spec = spec_of("k", "sum(v),count()");
  const auto n = groupby_csv(n_path, spec, in_gpu_pieces(1024));
  EXPECT_TRUE(ran_on_gpu(n) && in_pieces(n)) << n.report.explain();
  expect_matches(n.table, reference_groupby(read_csv(n_path), spec), "narrower");

  // Wider later: integers first, then a decimal; and a leading zero, which makes a column text.
  for (const std::string late : {"7.25", "0812"}) {
    std::string wider = "k,v\n";
    for (int i = 0; i < 800; ++i) wider += "a" + std::to_string(i % 5) + "," + std::to_string(i) + "\n";
    wider += "a1," + late + "\n";
    const std::string w_path = dir.file("wider.csv");
    write_file(w_path, wider);
    const GroupBySpec by_v = late == "0812" ? spec_of("v", "count()") : spec;
    const auto w = groupby_csv(w_path, by_v, in_gpu_pieces(1024));
    EXPECT_FALSE(ran_on_gpu(w)) << late;
    EXPECT_NE(w.report.explain().find("streamed on the CPU from the start"), std::string::npos) << w.report.explain();
    expect_matches(w.table, reference_groupby(read_csv(w_path), by_v), "wider: " + late);
    // A stream cannot be read again: an error that names it and the way out.
    const std::string fifo = dir.file("w" + late + ".fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string m = input_error([&] { through_pipe(fifo, wider, by_v, in_gpu_pieces(1024)); });
    EXPECT_NE(m.find(fifo), std::string::npos) << m;
    EXPECT_NE(m.find("column 'v'"), std::string::npos) << m;
    EXPECT_NE(m.find("schema"), std::string::npos) << m;
  }
}

TEST(GpuCsvGroupByPieces, WhatPiecesCannotTakeStreamsOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  TempDir dir;
  std::string rows;
  for (int i = 0; i < 500; ++i) rows += "k" + std::to_string(i % 9) + "," + std::to_string(i % 17) + "\n";
  const std::string text = "k,v\n" + rows;
  std::string long_row = "k" + std::string(5000, 'x');
  const std::string path = dir.file("g.csv");
  write_file(path, text + long_row + ",3\n" + rows);
  const Table t = read_csv(path);
  // Aggregations that do not combine across pieces.
  const GroupBySpec holistic = spec_of("k", "median(v),nunique(v)");
  const auto h = groupby_csv(path, holistic, in_gpu_pieces(1024));
  EXPECT_FALSE(ran_on_gpu(h));
  EXPECT_NE(h.report.explain().find("do not combine across pieces"), std::string::npos) << h.report.explain();
  expect_matches(h.table, reference_groupby(t, holistic), "holistic");
  // A row longer than a piece.
  const GroupBySpec sums = spec_of("k", "sum(v)");
  const auto l = groupby_csv(path, sums, in_gpu_pieces(1024));
  EXPECT_FALSE(ran_on_gpu(l));
  EXPECT_NE(l.report.explain().find("a row longer than"), std::string::npos) << l.report.explain();
  expect_matches(l.table, reference_groupby(t, sums), "long row");
  // A malformed row after the first piece: the CPU reader's error, as for the whole file.
  const std::string bad = dir.file("bad.csv");
  write_file(bad, text + "k1,2,3\n");
  const std::string gpu_error = input_error([&] { groupby_csv(bad, sums, in_gpu_pieces(1024)); });
  EXPECT_FALSE(gpu_error.empty());
  EXPECT_EQ(gpu_error, input_error([&] { groupby_csv(bad, sums); }));
}
