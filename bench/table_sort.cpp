// Table sorts by several keys on the db-benchmark group-by data: tandem::sort (normalised keys,
// radix sort of the row order, one gather of every column) against DuckDB at the same thread
// count, both compute only (table in memory, whole table gathered), DuckDB's order checked on
// every 997th row's keys; and --limit 100 against the full sort of the same keys.
//
//   bench_table_sort [--rows N] [--k K] [--threads T] [--reps R] [--data-dir DIR]
//                    [--duckdb-script bench/duckdb/sort.mjs] [--no-duckdb] [--explain] [--gpu]
//
// --gpu (CUDA builds, a GPU present): no DuckDB; per query the CPU sort at --threads (the
// anchor) against the GPU sort of the host table (keys uploaded, order found on the GPU, gather
// on the host) and of a DeviceTable uploaded once (every column gathered on the GPU, the result
// left there), each checked equal to the CPU's rows (both sorts are stable).
//
// Run from the repository root after `npm install` in bench/duckdb. The table is written once as
// CSV (DIR/tandem-tablesort-N-K.csv, kept for the next run); a Node script loads it into DuckDB
// and times `CREATE TABLE s AS SELECT * FROM x ORDER BY ...` per query.
//
// Floor at 10^7 rows (two cores streaming ~10 GB/s): the gather reads and writes every column
// once in key order, ~0.5 GB each way (id1..id3: 8-byte offsets + 5/5/12 bytes; six 4-byte and
// one 8-byte number), random reads of rows ~100 ns a miss with ~10 in flight per core: ~60 ms
// for 10^7 rows x 9 columns on two cores. The key: id3 encodes to 12 bytes (2 words), a radix
// sort of 10^7 (word, row) pairs moves ~4 x 160 MB per pass over the varying digits.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/device_table.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"
#include "tandem/table_sort.hpp"

using namespace tandem;

namespace {

struct Query {
  std::string name;
  std::string sql;  // ORDER BY … [LIMIT …]
  SortSpec spec;
};

const std::vector<Query>& queries() {
  static const std::vector<Query> q = {
      {"id3", "ORDER BY id3", {.by = {{"id3"}}}},
      {"id1_id2_v3desc", "ORDER BY id1, id2, v3 DESC", {.by = {{"id1"}, {"id2"}, {"v3", descending}}}},
      {"v3", "ORDER BY v3", {.by = {{"v3"}}}},
      {"id3_limit100", "ORDER BY id3 LIMIT 100", {.by = {{"id3"}}, .limit = 100}},
  };
  return q;
}

nlohmann::json run_duckdb(const bench::Bench& b, const std::string& csv, const std::string& out, int threads) {
  std::filesystem::create_directories(out);
  std::string list;
  for (const auto& q : queries()) list += (list.empty() ? "" : ";") + q.name + "=" + q.sql;
  const std::string cmd = fmt::format("node {} --csv {} --threads {} --reps {} --out {} --queries {}",
                                      b.get("--duckdb-script", "bench/duckdb/sort.mjs"), csv, threads, b.reps(), out,
                                      bench::shell_quote(list));
  return bench::run_json_command("DuckDB", cmd);
}

// Compares the key columns of DuckDB's sampled rows with tandem's rows at the same positions
// (ties may come in another order: DuckDB's sort is not stable, so only the keys are compared).
std::string check(const Query& q, const Table& got, const std::string& sample_csv) {
  std::string schema = "row:i64";
  for (const auto& k : q.spec.by)
    schema += "," + k.column + (k.column == "v3" ? ":f64" : k.column[2] < '4' ? ":str" : ":i64");
  const Table want = read_csv(sample_csv, {.schema = parse_csv_schema(schema)});
  const auto rows = want.column("row").numbers<std::int64_t>();
  std::size_t expected_rows = q.spec.limit ? std::min(*q.spec.limit, got.rows()) : got.rows();
  if (got.rows() != expected_rows) return fmt::format("{} rows, expected {}", got.rows(), expected_rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto r = static_cast<std::size_t>(rows[i]);
    for (const auto& k : q.spec.by) {
      const Column &g = got.column(k.column), &w = want.column(k.column);
      bool same = false;
      if (g.type == ColumnType::str) same = g.string(r) == w.string(i);
      else if (g.type == ColumnType::f64) same = g.numbers<double>()[r] == w.numbers<double>()[i];
      else same = std::int64_t(g.numbers<std::int32_t>()[r]) == w.numbers<std::int64_t>()[i];
      if (!same) return fmt::format("row {}: column {} differs from DuckDB's", r, k.column);
    }
  }
  return {};
}

// -1, 0, 1: row a's value against row b's (missing last; the generated data has no NaN).
int compare_cells(const Column& c, std::size_t a, std::size_t b) {
  if (!c.present(a) || !c.present(b)) return int(!c.present(a)) - int(!c.present(b));
  if (c.type == ColumnType::str) return c.string(a).compare(c.string(b)) < 0 ? -1 : c.string(a) == c.string(b) ? 0 : 1;
  return visit_numeric(c.type, [&](auto t) {
    const auto x = c.numbers<decltype(t)>()[a], y = c.numbers<decltype(t)>()[b];
    return x < y ? -1 : y < x ? 1 : 0;
  });
}

// Every row's key tuple at most the next row's.
bool in_key_order(const Table& t, const SortSpec& spec) {
  for (std::size_t i = 1; i < t.rows(); ++i) {
    for (const auto& k : spec.by) {
      const int c = compare_cells(t.column(k.column), i - 1, i) * (k.order == descending ? -1 : 1);
      if (c < 0) break;
      if (c > 0) return false;
    }
  }
  return true;
}

// Equal columns, row by row (strings by bytes, numbers by bits, missing cells alike).
bool same_tables(const Table& a, const Table& b) {
  if (a.rows() != b.rows() || a.num_columns() != b.num_columns()) return false;
  for (std::size_t c = 0; c < a.num_columns(); ++c) {
    const Column &x = a.column(c), &y = b.column(c);
    const std::size_t w = value_width(x.type);
    for (std::size_t i = 0; i < x.length; ++i) {
      if (x.present(i) != y.present(i)) return false;
      if (!x.present(i)) continue;
      if (x.type == ColumnType::str ? x.string(i) != y.string(i)
                                    : std::memcmp(x.values.data() + i * w, y.values.data() + i * w, w) != 0)
        return false;
    }
  }
  return true;
}

// The GPU sorts against the CPU sort at `threads` (--gpu).
int run_gpu(bench::Bench& b, const Table& data, int threads) {
  Stopwatch up;
  const DeviceTable on_gpu(data, {}, threads);
  fmt::print("DeviceTable upload {:.3f} s ({} of device memory)\n", up.seconds(), on_gpu.device_bytes());
  std::vector<std::string> lines;
  for (const auto& q : queries()) {
    const std::string c = fmt::format("{} 1e{:.0f}", q.name, std::log10(double(data.rows())));
    TableSortResult cpu, host;
    const auto sc = b.time([&] { cpu = sort(data, q.spec, {.threads = threads}); });
    const auto sh = b.time([&] { host = sort(data, q.spec, {.threads = threads, .device = Device::gpu}); });
    std::optional<DeviceSortResult> dev;
    const auto sd = b.time([&] { dev.emplace(sort(on_gpu, q.spec)); });
    if (b.has_flag("--explain")) fmt::print("{}{}", host.report.explain(), dev->report.explain());
    const bool host_ok = same_tables(host.table, cpu.table), dev_ok = same_tables(dev->table.host(), cpu.table);
    b.record(c, fmt::format("tandem CPU {}t", threads), sc, double(data.rows()), "rows", true);
    b.record(c, "tandem GPU, host table", sh, double(data.rows()), "rows", host_ok);
    b.record(c, "tandem GPU, device table", sd, double(data.rows()), "rows", dev_ok);
    if (!host_ok) b.fail(c + ": the GPU sort of the host table differs from the CPU sort");
    if (!dev_ok) b.fail(c + ": the GPU sort of the device table differs from the CPU sort");
    b.goal(c + " device table vs CPU", sc.median / sd.median, 10.0);
    lines.push_back(fmt::format("| {} | {:.4f} | {:.4f} | {:.4f} | {:.2f}x | {:.1f}x |", q.sql, sc.median, sh.median,
                                sd.median, sc.median / sh.median, sc.median / sd.median));
  }
  fmt::print(
      "\n| query | CPU s | GPU host table s | GPU device table s | CPU / host | CPU / device |\n"
      "|---|---|---|---|---|---|\n{}\n",
      fmt::join(lines, "\n"));
  return b.finish();
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("table_sort", argc, argv);
  const auto rows = static_cast<std::size_t>(b.get_int("--rows", b.quick() ? 100000 : 10000000));
  const auto k = static_cast<std::size_t>(b.get_int("--k", 100));
  const int threads = static_cast<int>(b.get_int("--threads", 2));
  Stopwatch w;
  const Table data = generate_groupby_table({.rows = rows, .k = k});
  fmt::print("generated {} rows, K = {} in {:.2f} s\n", rows, k, w.seconds());
  if (b.has_flag("--gpu")) return run_gpu(b, data, threads);
  const std::string csv = fmt::format("{}/tandem-tablesort-{}-{}.csv", b.get("--data-dir", "/tmp"), rows, k);
  const bool duckdb = !b.has_flag("--no-duckdb");
  nlohmann::json duck;
  if (duckdb) {
    if (!std::filesystem::exists(csv)) {
      std::ofstream f(csv + ".tmp", std::ios::binary);
      write_csv(f, data);
      f.close();
      std::filesystem::rename(csv + ".tmp", csv);
    }
    duck = run_duckdb(b, csv, csv + ".answers", threads);
    fmt::print("DuckDB {} loaded the CSV in {:.2f} s\n", duck["version"].get<std::string>(),
               duck["load_s"].get<double>());
  }
  std::map<std::string, double> medians;
  std::vector<std::string> lines;
  for (const auto& q : queries()) {
    TableSortResult r;
    const auto s = b.time([&] { r = sort(data, q.spec, {.threads = threads}); });
    medians[q.name] = s.median;
    if (b.has_flag("--explain")) fmt::print("{}", r.report.explain());
    const std::string c = fmt::format("{} 1e{:.0f} {}t", q.name, std::log10(double(rows)), threads);
    if (!duckdb) {  // no anchor: the result is checked to be in key order
      const bool ordered = in_key_order(r.table, q.spec);
      b.record(c, "tandem CPU", s, double(rows), "rows", ordered);
      if (!ordered) b.fail(c + ": rows out of key order");
      continue;
    }
    const auto why = check(q, r.table, fmt::format("{}.answers/{}.csv", csv, q.name));
    const Stats d = summarize(duck["times"][q.name].get<std::vector<double>>());
    b.record(c, "DuckDB", d, double(rows), "rows", true);
    b.record(c, "tandem CPU", s, double(rows), "rows", why.empty());
    if (!why.empty()) b.fail(fmt::format("{}: {}", c, why));
    b.goal(fmt::format("{} vs DuckDB", c), d.median / s.median, 2.0);
    lines.push_back(fmt::format("| {} | {:.3f} | {:.3f} | {:.2f}x |", q.sql, s.median, d.median, d.median / s.median));
  }
  b.goal("id3 limit 100 vs full sort of id3", medians["id3"] / medians["id3_limit100"], 10.0);
  if (!lines.empty())
    fmt::print("\n| query | tandem s | DuckDB s | DuckDB / tandem |\n|---|---|---|---|\n{}\n", fmt::join(lines, "\n"));
  return b.finish();
}
