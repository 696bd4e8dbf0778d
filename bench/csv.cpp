// CSV reading: tandem::read_csv against DuckDB's read_csv (the anchor: the engine users pick for
// tables on one machine) on the same file with the same thread count. The file is the public
// db-benchmark group-by data (tandem::generate_groupby_table, written with tandem::write_csv);
// tandem's table is checked value by value against the generated one, DuckDB's by its row count
// and the sum of v1. Rounds alternate tandem and DuckDB so that load from other processes falls
// on both alike.
//
// Floor: the file is read once from the page cache (~10 GB/s per core) and every byte is looked
// at once; 1e7 rows x 9 fields means ~9e7 fields to delimit and convert, ~2-5 ns each on one core,
// so ~0.1-0.25 s of work per core before the columns are joined (~1 GB written).
//
//   bench_csv [--rows N] [--k K] [--threads T] [--reps R] [--file PATH] [--keep] [--quick]
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"

using namespace tandem;

namespace {

// The read table holds the generated one's values; integer columns come back as i64.
bool same_values(const Table& generated, const Table& read, std::string& why) {
  if (read.rows() != generated.rows() || read.num_columns() != generated.num_columns()) {
    why = fmt::format("{} x {} read, {} x {} written", read.rows(), read.num_columns(), generated.rows(),
                      generated.num_columns());
    return false;
  }
  for (const Column& g : generated.columns()) {
    const Column& r = read.column(g.name);
    for (std::size_t i = 0; i < g.length; ++i) {
      bool same = g.present(i) == r.present(i);
      if (same && g.present(i)) {
        if (g.type == ColumnType::str) same = r.type == ColumnType::str && g.string(i) == r.string(i);
        else if (g.type == ColumnType::i32)
          same = r.type == ColumnType::i64 && g.numbers<std::int32_t>()[i] == r.numbers<std::int64_t>()[i];
        else same = r.type == ColumnType::f64 && g.numbers<double>()[i] == r.numbers<double>()[i];
      }
      if (!same) {
        why = fmt::format("column {} row {} ({} read)", g.name, i, to_string(r.type));
        return false;
      }
    }
  }
  return true;
}

struct DuckRun {
  bool ran{false};
  double seconds{0};
  std::size_t rows{0};
  std::string sum, version, why;
};

// One DuckDB process: a warm-up read, then one timed read of `file`.
DuckRun duckdb_read(const std::string& file, int threads) {
  const std::string dir = std::string(TANDEM_SOURCE_DIR) + "/bench/duckdb";
  DuckRun r;
  if (!std::filesystem::exists(dir + "/node_modules/@duckdb/node-api")) {
    r.why = fmt::format("DuckDB is not installed: run `npm install` in {}", dir);
    return r;
  }
  const std::string cmd =
      fmt::format("cd '{}' && node read_csv.mjs '{}' --threads {} --reps 1 --warmup 1 --sum v1", dir, file, threads);
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p && std::fgets(buf, sizeof buf, p)) out += buf;
  if (!p || ::pclose(p) != 0) {
    r.why = "the DuckDB script failed: " + out;
    return r;
  }
  const auto j = nlohmann::json::parse(out);
  r.ran = true;
  r.seconds = j["seconds"][0].get<double>();
  r.rows = j["rows"].get<std::size_t>();
  r.sum = j["sum"].get<std::string>();
  r.version = j["duckdb"].get<std::string>();
  return r;
}

std::string sum_of(const Column& c) {
  std::int64_t s = 0;
  for (std::size_t i = 0; i < c.length; ++i)
    if (c.present(i)) s += c.type == ColumnType::i64 ? c.numbers<std::int64_t>()[i] : c.numbers<std::int32_t>()[i];
  return std::to_string(s);
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("csv", argc, argv);
  const auto rows = static_cast<std::size_t>(b.get_int("--rows", b.quick() ? 200'000 : 10'000'000));
  const auto k = static_cast<std::size_t>(b.get_int("--k", 100));
  const int threads = static_cast<int>(b.get_int("--threads", 2));
  const std::string file = b.get(
      "--file",
      (std::filesystem::temp_directory_path() / fmt::format("tandem-bench-{}-{}.csv", rows, ::getpid())).string());

  const Table generated = generate_groupby_table({.rows = rows, .k = k});
  Stopwatch w;
  {
    io::AtomicOutput out(file);
    write_csv(out.stream(), generated);
    out.commit();
  }
  const double write_s = w.seconds();
  const double bytes = static_cast<double>(std::filesystem::file_size(file));
  std::cout << fmt::format("# {}: db-benchmark group-by data, {} rows, k = {}, {} written in {} ({})\n", file, rows, k,
                           human_bytes(static_cast<std::uint64_t>(bytes)), human_seconds(write_s),
                           human_rate(bytes / write_s, "B"));

  const CsvOptions options{.threads = threads};
  std::string why;
  const bool ok = same_values(generated, read_csv(file, options), why);  // also tandem's warm-up
  if (!ok) b.fail("tandem's table differs from the generated one: " + why);
  const std::string expected_sum = sum_of(generated.column("v1"));

  std::vector<double> ours, theirs;
  DuckRun duck;
  for (int r = 0; r < b.reps(); ++r) {
    Stopwatch t;
    const Table table = read_csv(file, options);
    ours.push_back(t.seconds());
    if (table.rows() != rows) b.fail("tandem read a different number of rows");
    duck = duckdb_read(file, threads);
    if (!duck.ran) break;
    theirs.push_back(duck.seconds);
    if (duck.rows != rows || duck.sum != expected_sum)
      b.fail(
          fmt::format("DuckDB read {} rows, sum(v1) {}; expected {} and {}", duck.rows, duck.sum, rows, expected_sum));
  }
  const std::string c = fmt::format("read_csv {}M rows, {} threads", static_cast<double>(rows) / 1e6, threads);
  const Stats s_ours = summarize(ours);
  b.record(c, "tandem::read_csv", s_ours, bytes, "B", ok);
  b.info(fmt::format("tandem read_csv MB/s, {} threads", threads), bytes / s_ours.median / 1e6, " MB/s");
  if (duck.ran) {
    const Stats s_duck = summarize(theirs);
    b.record(c, fmt::format("DuckDB {} read_csv", duck.version), s_duck, bytes, "B",
             duck.rows == rows && duck.sum == expected_sum);
    b.info(fmt::format("DuckDB read_csv MB/s, {} threads", threads), bytes / s_duck.median / 1e6, " MB/s");
    b.goal(fmt::format("read_csv {}M rows, {} threads: DuckDB time / tandem time", static_cast<double>(rows) / 1e6,
                       threads),
           s_duck.median / s_ours.median, 1.0);
  } else {
    std::cout << "# no DuckDB anchor: " << duck.why << '\n';
  }
  if (!b.has_flag("--keep") && !b.has_flag("--file")) std::filesystem::remove(file);
  return b.finish();
}
