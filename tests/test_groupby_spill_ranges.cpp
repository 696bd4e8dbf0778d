// The group-by sink's spill by key range: the key order of the ranges (the group-by's own, with
// NaN, -0.0, missing keys and strings), splitters that follow the sample (a single key, a key
// holding most rows), and groupby_csv spilled under a tiny memory limit giving byte for byte the
// CSV of the in-memory run, its result handed over in pieces, the spill folder empty after.
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include "groupby/sink/key_ranges.hpp"
#include "groupby_reference.hpp"
#include "table/table_wire.hpp"
#include "tandem/groupby_csv.hpp"
#include "tandem/groupby_sink.hpp"
#include "tandem/table/csv.hpp"
#include "test_util.hpp"

using namespace groupby_test;
using sink::compare_keys;
using sink::KeyRanges;

namespace {

std::size_t files_in(const std::string& dir) {
  std::size_t n = 0;
  for (auto it = std::filesystem::recursive_directory_iterator(dir); it != std::filesystem::end(it); ++it) ++n;
  return n;
}

Table one_column(Column c) {
  std::vector<Column> cols;
  cols.push_back(std::move(c));
  return Table(std::move(cols));
}

// What the CLI writes: the header with the first piece, then each piece's rows.
struct Written {
  std::string csv;
  std::string explain;
  std::size_t pieces{0};
};

Written run_csv(const std::string& path, const GroupBySpec& spec, std::size_t limit, const std::string& temp) {
  GroupByCsvOptions o;
  o.csv.threads = 2;
  o.csv.chunk_bytes = 4096;  // many chunks, so that pieces pile up before and after the first spill
  o.memory_limit = limit;
  o.temp_dir = temp;
  std::ostringstream out;
  Written w;
  o.on_result = [&](const Table& piece) {
    EXPECT_GT(piece.rows(), 0u);
    if (w.pieces++ == 0) write_csv(out, piece);
    else write_csv_rows(out, piece);
  };
  const GroupByResult r = groupby_csv(path, spec, o);
  EXPECT_EQ(r.table.rows(), 0u);
  if (w.pieces == 0) write_csv(out, r.table);
  w.csv = out.str();
  w.explain = r.report.explain();
  return w;
}

// The spilled run's CSV equals the in-memory run's, byte for byte; the spill folder ends empty.
// `tiny_says`: what the report must say under the tiny limit (empty: that nothing spilled).
void expect_spill_same(const std::string& text, const GroupBySpec& spec, const std::string& what,
                       const std::string& tiny_says = "key ranges") {
  const TempDir dir;
  const std::string path = dir.file("t.csv");
  std::ofstream(path, std::ios::binary) << text;
  const std::string temp = dir.file("tmp");
  std::filesystem::create_directory(temp);
  GroupByCsvOptions whole;
  whole.csv.threads = 2;
  std::ostringstream want;
  write_csv(want, groupby_csv(path, spec, whole).table);
  for (const std::size_t limit : {std::size_t{1}, std::size_t{200000}}) {
    const Written got = run_csv(path, spec, limit, temp);
    const std::string where = fmt::format("{}, memory limit {}", what, limit);
    EXPECT_EQ(got.csv, want.str()) << where << "\n" << got.explain;
    if (limit == 1) {
      // tiny_says: alternatives separated by '|', one of which the report must hold.
      bool said = false;
      for (std::size_t at = 0; !tiny_says.empty() && at <= tiny_says.size();) {
        const std::size_t bar = std::min(tiny_says.find('|', at), tiny_says.size());
        said |= got.explain.find(tiny_says.substr(at, bar - at)) != std::string::npos;
        at = bar + 1;
      }
      if (tiny_says.empty()) said = got.explain.find("spilled") == std::string::npos;
      EXPECT_TRUE(said) << where << ": the report does not say '" << tiny_says << "'\n" << got.explain;
    }
    EXPECT_EQ(files_in(temp), 0u) << where;
  }
}

// Exact aggregations only (sums of halves, no var/std), so that the CSV compares byte for byte.
const char* kExactAggs =
    "sum(v),count(),min(w),max(w),first(w),last(v),mean(v),median(w),quantile(w,0.25),nunique(w),top(v,2)";

std::string random_keys_csv(std::mt19937_64& rng, std::size_t rows) {
  const std::vector<std::string> strs = {"a", "\"q,\"\"x\"\"\"", "b b", "id001", "", "zz", "\xc3\xa9"};
  const std::vector<std::string> floats = {"0", "-0", "0.0", "nan", "-nan", "inf", "-inf", "1.5", "-2.25", ""};
  std::string text = "ki,ks,kf,v,w\n";
  for (std::size_t r = 0; r < rows; ++r) {
    const auto maybe = [&](std::string s) { return rng() % 12 == 0 ? std::string() : s; };
    text += fmt::format("{},{},{},{},{}\n", maybe(std::to_string(static_cast<std::int64_t>(rng() % 400) - 200)),
                        maybe(strs[rng() % strs.size()]), floats[rng() % floats.size()], rng() % 1000,
                        maybe(fmt::format("{}", static_cast<double>(rng() % 64) / 2 - 8)));
  }
  return text;
}

// A sink that spills at every chunk (a one-byte limit), on two threads.
GroupBySinkOptions spill_everything(const std::string& temp_dir) {
  GroupBySinkOptions o;
  o.memory_limit = 1;
  o.temp_dir = temp_dir;
  o.threads = 2;
  return o;
}

}  // namespace

TEST(SpillRanges, KeysCompareInTheGroupByResultOrder) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 12; ++round) {
    const Table t = random_table(rng, 3000, 1 + round % 3, 0.1);
    const GroupBySpec spec = spec_of(t, {aggregation(AggOp::count_rows)});
    const Table r = groupby(t, spec, GroupByOptions{Device::cpu, 2}).table;
    for (std::size_t i = 1; i < r.rows(); ++i)
      ASSERT_LT(compare_keys(r, i - 1, r, i, spec.by.size()), 0) << "round " << round << " row " << i;
  }
  ColumnBuilder b("k", ColumnType::f64);
  for (const double v : {-0.0, 0.0, double(NAN), -double(NAN), 1.0}) b.push(v);
  b.push_missing();
  const Table f = one_column(b.finish());
  EXPECT_EQ(compare_keys(f, 0, f, 1, 1), 0);  // -0.0 groups with 0.0
  EXPECT_EQ(compare_keys(f, 2, f, 3, 1), 0);  // every NaN one key
  EXPECT_LT(compare_keys(f, 4, f, 2, 1), 0);  // NaN after the numbers
  EXPECT_LT(compare_keys(f, 2, f, 5, 1), 0);  // a missing key last
  EXPECT_GT(compare_keys(f, 5, f, 0, 1), 0);
}

TEST(SpillRanges, RangesFollowTheKeyOrderAndIsolateAHeavyKey) {
  std::mt19937_64 rng(7);
  ColumnBuilder b("k", ColumnType::i64);
  for (int i = 0; i < 100000; ++i) b.push(rng() % 10 < 9 ? std::int64_t{500} : static_cast<std::int64_t>(rng() % 1000));
  const Table t = one_column(b.finish());
  const KeyRanges ranges = KeyRanges::sample({&t}, 1, 64, 16384);
  EXPECT_GT(ranges.parts(), 8u);
  const Table sorted = groupby(t, {{"k"}, {}}, GroupByOptions{Device::cpu, 1}).table;
  const auto of = ranges.assign(sorted);
  for (std::size_t i = 1; i < of.size(); ++i) ASSERT_LE(of[i - 1], of[i]) << i;
  // The heavy key's range holds it and at most a few keys between it and the splitter below.
  const auto heavy = static_cast<std::size_t>(
      std::find(sorted.column(0).numbers<std::int64_t>().begin(), sorted.column(0).numbers<std::int64_t>().end(), 500) -
      sorted.column(0).numbers<std::int64_t>().begin());
  EXPECT_LE(std::count(of.begin(), of.end(), of[heavy]), 4);
  // A single key cannot be split; no rows, or no keys, give one range.
  ColumnBuilder one("k", ColumnType::str);
  for (int i = 0; i < 50; ++i) one.push_string("same");
  const Table single = one_column(one.finish());
  EXPECT_EQ(KeyRanges::sample({&single}, 1, 64, 1000).parts(), 1u);
  EXPECT_EQ(KeyRanges::sample({&single}, 0, 64, 1000).parts(), 1u);
  const Table none = empty_like(single);
  EXPECT_EQ(KeyRanges::sample({&none}, 1, 64, 1000).parts(), 1u);
}

TEST(SpillRanges, SinkPiecesAreTheResultInKeyOrder) {
  std::mt19937_64 rng(11);
  const Table t = many_groups_table(rng, 40000);
  const GroupBySpec spec = spec_of(t, parse_aggregations("sum(v_i32),count(),median(v_f64)"));
  const TempDir dir;
  GroupBySink sink(spec, spill_everything(dir.path.string()));
  for (std::size_t c = 0; c < 8; ++c) {
    std::vector<std::size_t> rows;
    for (std::size_t r = c * 5000; r < (c + 1) * 5000; ++r) rows.push_back(r);
    sink.consume(c, t.gather(rows));
  }
  std::vector<Table> pieces;
  const GroupByResult r = sink.finish([&](Table p) { pieces.push_back(std::move(p)); });
  EXPECT_GT(pieces.size(), 8u) << r.report.explain();
  EXPECT_EQ(r.table.rows(), 0u);
  const Table want = groupby(t, spec, GroupByOptions{Device::cpu, 2}).table;
  std::ostringstream got_csv, want_csv;
  write_csv(got_csv, concat_tables(pieces, r.table, 1));
  write_csv(want_csv, want);
  EXPECT_EQ(got_csv.str(), want_csv.str());
  EXPECT_EQ(files_in(dir.path.string()), 0u);
}

TEST(SpillRanges, ARangeOverTheBudgetIsSplitAgain) {
  // The first chunk spills alone (limit 1) and holds keys 0..9 only, so its splitters leave every
  // later key in the last range, far over the 64 KiB a range may hold: it must be split again.
  std::mt19937_64 rng(19);
  ColumnBuilder k("k", ColumnType::i64), v("v", ColumnType::i32);
  for (int i = 0; i < 40010; ++i) {
    k.push(i < 10 ? std::int64_t{i} : static_cast<std::int64_t>(rng() % 1000000));
    v.push(static_cast<std::int32_t>(rng() % 1000));
  }
  std::vector<Column> cols;
  cols.push_back(k.finish());
  cols.push_back(v.finish());
  const Table t(std::move(cols));
  const GroupBySpec spec{{"k"}, parse_aggregations("sum(v),count(),median(v)")};
  const TempDir dir;
  GroupBySink sink(spec, spill_everything(dir.path.string()));
  for (std::size_t c = 0, at = 0; at < t.rows(); ++c) {
    const std::size_t n = c == 0 ? 10 : 5000;
    std::vector<std::size_t> rows(std::min(n, t.rows() - at));
    std::iota(rows.begin(), rows.end(), at);
    sink.consume(c, t.gather(rows));
    at += rows.size();
  }
  const GroupByResult r = sink.finish();
  EXPECT_NE(r.report.explain().find("split again"), std::string::npos) << r.report.explain();
  std::ostringstream got_csv, want_csv;
  write_csv(got_csv, r.table);
  write_csv(want_csv, groupby(t, spec, GroupByOptions{Device::cpu, 2}).table);
  EXPECT_EQ(got_csv.str(), want_csv.str());
  EXPECT_EQ(files_in(dir.path.string()), 0u);
}

TEST(SpillRanges, ManyKeyTuplesLikeQ10) {
  GroupByDataSpec data;
  data.rows = 15000;
  data.k = 10;
  data.nas_percent = 5;
  std::ostringstream text;
  write_csv(text, generate_groupby_table(data));
  expect_spill_same(text.str(), {{"id1", "id2", "id3", "id4", "id5", "id6"}, parse_aggregations("sum(v3),count()")},
                    "q10");
  expect_spill_same(text.str(), {{"id3"}, parse_aggregations("sum(v1),median(v3),nunique(id4),top(v2,2)")},
                    "q3 with holistic aggregations");
}

TEST(SpillRanges, StringIntegerFloatKeysWithMissingNanAndNegativeZero) {
  std::mt19937_64 rng(13);
  const std::string text = random_keys_csv(rng, 20000);
  expect_spill_same(text, {{"ki", "ks", "kf"}, parse_aggregations(kExactAggs)}, "three keys");
  expect_spill_same(text, {{"kf"}, parse_aggregations(kExactAggs)}, "float key");
  expect_spill_same(text, {{"ks", "ki"}, parse_aggregations("median(w),nunique(v)")}, "holistic only");
}

TEST(SpillRanges, OneKeyHoldingNinetyPercentOfTheRows) {
  std::mt19937_64 rng(17);
  std::string text = "k,v,w\n";
  for (int r = 0; r < 120000; ++r)
    text += fmt::format("{},{},{}\n", rng() % 10 < 9 ? std::string("hot") : fmt::format("c{}", rng() % 20000),
                        rng() % 100, static_cast<double>(rng() % 64) / 2);
  expect_spill_same(text, {{"k"}, parse_aggregations("sum(v),count(),max(w)")}, "skew");
  expect_spill_same(text, {{"k"}, parse_aggregations(kExactAggs)}, "skew, holistic", "a single key|split again");
}

TEST(SpillRanges, OneRowAndHeaderOnly) {
  expect_spill_same("k,v,w\nx,1,2.5\n", {{"k"}, parse_aggregations(kExactAggs)}, "one row");
  expect_spill_same("k,v,w\n", {{"k"}, parse_aggregations(kExactAggs)}, "header only", "");
}
