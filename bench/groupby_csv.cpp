// The db-benchmark group-by questions straight from a CSV file: the whole `tandem groupby FILE.csv`
// process against DuckDB's `CREATE TABLE ans AS SELECT ... FROM read_csv(FILE) GROUP BY ...` at
// the same thread count, the file in the page cache, both answers checked equal.
//
//   bench_groupby_csv [--rows N] [--k K] [--threads T] [--reps R] [--questions q1,q3]
//                     [--data-dir DIR] [--tandem build/cpu/tandem] [--no-duckdb] [--device gpu]
//                     [--duckdb-lib libduckdb.so] [--duckdb-writes]
//
// --device gpu runs tandem with the file parsed and grouped on the GPU, and tandem's CPU path
// (--device cpu, same threads) in the same run as a second anchor, both answers checked equal.
// Run from the repository root after `npm install` in bench/duckdb. The CSV is the one
// bench_groupby_db writes (DIR/tandem-groupby-N-K.csv), made here when absent.
// What is timed: tandem, the whole process (start-up, scan, group-by, writing ans.csv);
// DuckDB, the query inside a Node process started for the question just before tandem's runs of
// it (Node's and DuckDB's start-up and the answer's export not timed; with --duckdb-writes the
// timed query writes its answer to a CSV file, `COPY (query) TO`, as tandem's does). Process
// start thus counts against tandem only (`tandem --version`'s time is printed beside it). q9 (r²
// of v1 and v2) needs products of columns, which a CSV query through the CLI cannot name; it is
// left out. Floor: one core's bytes per second over the first 256 MiB of the file in memory, for
// the structural masks alone, the chunk walk stepping over every column, and the walk reading
// q1's two columns.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "harness.hpp"
#include "processes.hpp"
#include "scan/chunk_parser.hpp"
#include "table/csv_dialect.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"

using namespace tandem;

namespace {

struct Question {
  std::string id;
  std::string by;
  std::string aggs;
};

const std::vector<Question> kQuestions = {
    {"q1", "id1", "sum(v1)"},
    {"q2", "id1,id2", "sum(v1)"},
    {"q3", "id3", "sum(v1),mean(v3)"},
    {"q4", "id4", "mean(v1),mean(v2),mean(v3)"},
    {"q5", "id6", "sum(v1),sum(v2),sum(v3)"},
    {"q6", "id4,id5", "median(v3),std(v3)"},
    {"q7", "id3", "max(v1),min(v2)"},
    {"q8", "id6", "top(v3,2)"},
    {"q10", "id1,id2,id3,id4,id5,id6", "sum(v3),count()"},
};

// An answer as rows of key texts and numbers, in DuckDB's shape (q7 subtracts, q8 has a row per
// value), sorted as DuckDB's export is.
using Row = std::pair<std::vector<std::string>, std::vector<double>>;

std::vector<Row> answer(const std::string& path, std::size_t keys, const std::string& q, bool ours) {
  const Table t = read_csv(path, {.threads = 1});
  std::vector<Row> rows;
  for (std::size_t i = 0; i < t.rows(); ++i) {
    Row r;
    for (std::size_t c = 0; c < t.num_columns(); ++c) {
      const Column& col = t.column(c);
      if (c < keys) {
        r.first.push_back(!col.present(i)               ? ""
                          : col.type == ColumnType::str ? std::string(col.string(i))
                                                        : fmt::format("{}", col.numbers<std::int64_t>()[i]));
        continue;
      }
      double v = NAN;
      if (col.present(i))
        v = col.type == ColumnType::f64 ? col.numbers<double>()[i]
                                        : static_cast<double>(col.numbers<std::int64_t>()[i]);
      r.second.push_back(v);
    }
    if (ours && q == "q7") r.second = {r.second[0] - r.second[1]};
    if (ours && q == "q8") {
      for (double v : r.second)
        if (!std::isnan(v)) rows.push_back({r.first, {v}});
      continue;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string compare(const std::vector<Row>& ours, const std::vector<Row>& theirs) {
  if (ours.size() != theirs.size()) return fmt::format("{} rows, DuckDB {}", ours.size(), theirs.size());
  for (std::size_t i = 0; i < ours.size(); ++i) {
    if (ours[i].first != theirs[i].first) return fmt::format("row {}: keys differ", i);
    for (std::size_t j = 0; j < ours[i].second.size(); ++j) {
      const double x = ours[i].second[j], y = theirs[i].second.at(j);
      if (!(std::fabs(x - y) <= 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)})))
        return fmt::format("row {} value {}: {} vs DuckDB {}", i, j, x, y);
    }
  }
  return {};
}

// One core's bytes/s over the first 256 MiB of the file: masks alone, every column stepped
// over, q1's columns read.
void floor_rates(bench::Bench& b, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(std::size_t{256} << 20, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  const std::size_t header = text.find('\n') + 1;
  const std::size_t end =
      static_cast<std::size_t>(csv::last_record_end(text.data(), text.data() + text.size(), ',') - text.data());
  text.append(64, '\0');
  const char* body = text.data() + header;
  const double bytes = static_cast<double>(end - header);
  const auto level = scan::detected_simd_level();
  const auto masks = scan::mask_function(level);
  std::uint64_t sink = 0;
  const auto m = b.time([&] {
    for (std::size_t off = 0; off + 64 <= end - header; off += 64) {
      const auto x = masks(body + off, ',');
      sink += static_cast<std::uint64_t>(__builtin_popcountll(x.delimiter | x.lf));
    }
  });
  b.record("floor: structural masks", fmt::format("1 core, {}", scan::to_string(level)), m, bytes, "bytes", sink > 0);
  std::vector<std::string> names{"id1", "id2", "id3", "id4", "id5", "id6", "v1", "v2", "v3"};
  for (const bool q1 : {false, true}) {
    std::vector<scan::ColumnPlan> plans;
    std::vector<int> slot(9, -1);
    if (q1) {
      plans = {{0, "id1", ColumnType::str, false}, {6, "v1", ColumnType::i64, false}};
      slot[0] = 0;
      slot[6] = 1;
    }
    const scan::ChunkInput ci{body, text.data() + end, ',', 9, &plans, &slot, level};
    std::size_t rows = 0;
    const auto s = b.time([&] { rows = scan::parse_chunk(ci).rows; });
    b.record(q1 ? "floor: chunk walk reading id1, v1" : "floor: chunk walk stepping over all columns", "1 core", s,
             bytes, "bytes", rows > 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("groupby_csv", argc, argv);
  const auto rows = static_cast<std::size_t>(b.get_int("--rows", b.quick() ? 100000 : 10000000));
  const auto k = static_cast<std::size_t>(b.get_int("--k", 100));
  const int threads = static_cast<int>(b.get_int("--threads", 2));
  const std::string tandem_bin = std::filesystem::absolute(b.get("--tandem", "build/cpu/tandem")).string();
  const std::string wanted = b.get("--questions", "");
  std::vector<Question> qs;
  std::vector<std::string> ids;
  for (const auto& q : kQuestions)
    if (wanted.empty() || ("," + wanted + ",").find("," + q.id + ",") != std::string::npos)
      qs.push_back(q), ids.push_back(q.id);
  const std::string csv = bench::groupby_csv_file(b.get("--data-dir", "/tmp"), rows, k);
  const double file_bytes = static_cast<double>(std::filesystem::file_size(csv));
  const std::string out = (std::filesystem::temp_directory_path() / "tandem-groupby-csv-answers").string();
  std::filesystem::create_directories(out);
  const bool with_duckdb = !b.has_flag("--no-duckdb");
  const std::string device = b.get("--device", "cpu");
  if (device != "cpu" && device != "gpu") throw UsageError("--device: cpu or gpu");
  const auto run_tandem = [&](const Question& q, const std::string& ans, const std::string& on) {
    return bench::spawn_quiet({tandem_bin, "groupby", csv, "--by", q.by, "--agg", q.aggs, "--out", ans, "--threads",
                               std::to_string(threads), "--device", on, "--quiet"});
  };
  // DuckDB's runs of a question just before tandem's, so that both meet the same load.
  // Node runs groupby_csv.mjs; with --duckdb-lib (a machine without Node) the C API program beside
  // this benchmark runs the same questions through that libduckdb.so.
  const std::string duckdb_lib = b.get("--duckdb-lib", "");
  const std::string duckdb_program =
      bench::duckdb_command(std::string(TANDEM_SOURCE_DIR) + "/bench/duckdb/groupby_csv.mjs", duckdb_lib, argv[0]);
  // --duckdb-writes: DuckDB's timed query writes its answer to a CSV file (COPY ... TO), as
  // tandem's process does, instead of keeping it in a table (the db-benchmark's convention).
  const bool duckdb_writes = b.has_flag("--duckdb-writes");
  const std::string duckdb_timed = duckdb_writes ? "DuckDB COPY (query) TO file s" : "DuckDB read_csv query s";
  const std::string duckdb_column = duckdb_writes ? "query to a file" : "query";
  auto duckdb = [&](const std::string& q) {
    const auto r =
        bench::run_command(fmt::format("{} --csv {} --threads {} --reps {} --warmup {} --out {} --questions {}{}",
                                       duckdb_program, bench::shell_quote(csv), threads, b.reps(), b.warmup(),
                                       bench::shell_quote(out), q, duckdb_writes ? " --write 1" : ""));
    if (r.status != 0) throw Error("DuckDB run failed: " + r.text);
    return nlohmann::json::parse(r.text.substr(r.text.find('{')));
  };
  const auto start = b.time([&] { (void)bench::spawn_quiet({tandem_bin, "--version"}); });
  b.record("process start", "tandem --version", start, 1, "runs", true);
  std::vector<std::string> lines;
  for (const auto& q : qs) {
    nlohmann::json duck;
    if (with_duckdb) duck = duckdb(q.id);
    if (with_duckdb && &q == &qs.front()) fmt::print("DuckDB {}\n", duck["version"].get<std::string>());
    const std::string ans = fmt::format("{}/tandem-{}.csv", out, q.id);
    std::filesystem::remove(ans);  // a run that fails must not be checked against an earlier answer
    int status = 0;
    const auto t = b.time([&] { status = run_tandem(q, ans, device); });
    const std::string what = fmt::format("{} 1e{:.0f} K={} {}t{}", q.id, std::log10(double(rows)), k, threads,
                                         device == "gpu" ? " gpu" : "");
    if (status != 0) b.fail(fmt::format("{}: tandem exited {}", what, status));
    b.record(what, "tandem groupby FILE.csv (whole process)", t, file_bytes, "bytes", status == 0);
    const std::size_t keys = static_cast<std::size_t>(std::count(q.by.begin(), q.by.end(), ',') + 1);
    if (device == "gpu") {  // tandem's CPU path on the same file, same threads
      const std::string cpu_ans = fmt::format("{}/tandem-cpu-{}.csv", out, q.id);
      std::filesystem::remove(cpu_ans);
      int cpu_status = 0;
      const auto c = b.time([&] { cpu_status = run_tandem(q, cpu_ans, "cpu"); });
      if (cpu_status != 0) b.fail(fmt::format("{}: tandem --device cpu exited {}", what, cpu_status));
      const std::string why = status != 0 || cpu_status != 0
                                  ? "a run failed"
                                  : compare(answer(ans, keys, q.id, true), answer(cpu_ans, keys, q.id, true));
      if (!why.empty()) b.fail(fmt::format("{}: GPU and CPU answers differ: {}", what, why));
      b.info(what + " tandem --device cpu s", c.median, "s");
      if (status == 0 && cpu_status == 0 && why.empty()) b.goal(what + " tandem CPU / GPU", c.median / t.median, 3.0);
      lines.push_back(fmt::format("| {} | {:.3f} | {:.3f} | {:.2f}x | {} | (CPU path) |", q.id, t.median, c.median,
                                  c.median / t.median, why.empty() ? "yes" : why));
    }
    if (duck.is_null()) continue;
    std::vector<double> d = duck["times"][q.id].get<std::vector<double>>();
    std::sort(d.begin(), d.end());
    const double duck_median = d[d.size() / 2];
    const std::string why = status != 0 ? "tandem failed"
                                        : compare(answer(ans, keys, q.id, true),
                                                  answer(fmt::format("{}/{}.csv", out, q.id), keys, q.id, false));
    if (!why.empty()) b.fail(fmt::format("{}: {}", what, why));
    b.info(what + " " + duckdb_timed, duck_median, "s");
    // A ratio only for answers checked equal (a failed run's time is no answer's).
    if (status == 0 && why.empty())
      b.goal(what + " DuckDB / tandem", duck_median / t.median, device == "gpu" ? 5.0 : 1.5);  // issues 44 and 43
    lines.push_back(fmt::format("| {} | {:.3f} | {:.3f} | {:.2f}x | {} | {:.0f} |", q.id, t.median, duck_median,
                                duck_median / t.median, why.empty() ? "yes" : why,
                                file_bytes / t.median / threads / 1e6));
  }
  fmt::print(
      "\n| question | tandem s (process) | {} | answers equal | tandem MB/s per core |\n"
      "|---|---|---|---|---|---|\n{}\n",
      device == "gpu" ? fmt::format("tandem --device cpu s, or DuckDB s ({}) | the other / tandem GPU", duckdb_column)
                      : fmt::format("DuckDB s ({}) | DuckDB / tandem", duckdb_column),
      fmt::join(lines, "\n"));
  if (!b.has_flag("--no-floor")) floor_rates(b, csv);
  return b.finish();
}
