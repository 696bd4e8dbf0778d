// File-to-file table sorts: the whole `tandem sort FILE.csv --by ... --out s.csv` process against
// DuckDB's `COPY (SELECT * FROM read_csv(FILE) ORDER BY ...) TO 's.csv'` at the same thread count,
// the file in the page cache, both outputs checked.
//
//   bench_table_sort_csv [--rows N] [--k K] [--threads T] [--reps R] [--warmup W]
//                        [--queries id3,id1_id2_v3desc,v3] [--data-dir DIR] [--tandem build/cpu/tandem]
//                        [--memory-limit 200M --temp-dir DIR] [--no-duckdb | --duckdb-lib libduckdb.so]
//
// Run from the repository root after `npm install` in bench/duckdb. The CSV is the db-benchmark
// group-by data that bench_groupby_csv uses (DIR/tandem-groupby-N-K.csv), made here when absent.
// What is timed: tandem, the whole process (start-up, reading, sorting, writing s.csv); DuckDB, the
// COPY statement inside a Node process started for the query just before tandem's runs of it
// (Node's and DuckDB's start-up not timed, so process start counts against tandem only).
// --memory-limit gives both the same limit (tandem's --memory-limit and --temp-dir, DuckDB's
// memory_limit and temp_directory).
// The check: DuckDB's ORDER BY is not stable, so the outputs must hold the same keys row by row and
// the same rows (as a multiset) within each run of equal keys; fields are compared as numbers
// where they parse as numbers (the two writers may spell a double differently).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness.hpp"
#include "processes.hpp"
#include "tandem/core/error.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"

using namespace tandem;

namespace {

struct Query {
  std::string name;
  std::string by;                 // tandem's --by
  std::string order;              // DuckDB's ORDER BY list
  std::vector<std::size_t> keys;  // the key columns' positions (id1..id6, v1..v3)
};

const std::vector<Query> kQueries = {
    {"id3", "id3", "id3", {2}},
    {"id1_id2_v3desc", "id1,id2,v3:desc", "id1, id2, v3 DESC", {0, 1, 8}},
    {"v3", "v3", "v3", {8}},
};

// A CSV file's records as fields, numbers spelt one way ("4.50" and "4.5" alike). The data has
// no quoted fields.
class Records {
 public:
  explicit Records(const std::string& path) : in_(path, std::ios::binary) {
    if (!in_) throw Error(fmt::format("cannot open '{}'", path));
  }
  bool next(std::vector<std::string>& fields) {
    if (!std::getline(in_, line_)) return false;
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    fields.clear();
    for (std::size_t at = 0;;) {
      const std::size_t comma = std::min(line_.find(',', at), line_.size());
      fields.push_back(normalised(std::string_view(line_).substr(at, comma - at)));
      if (comma == line_.size()) break;
      at = comma + 1;
    }
    return true;
  }

 private:
  static std::string normalised(std::string_view f) {
    double d = 0;
    const auto r = std::from_chars(f.data(), f.data() + f.size(), d);
    if (f.empty() || r.ec != std::errc() || r.ptr != f.data() + f.size()) return std::string(f);
    return fmt::format("{}", d);
  }
  std::ifstream in_;
  std::string line_;
};

std::string joined(const std::vector<std::string>& fields, std::span<const std::size_t> which) {
  std::string s;
  for (const auto i : which) s += fields.at(i) + '\x1f';
  return s;
}

// Empty when `theirs` holds the rows of `ours` with the same keys row by row (rows of equal keys
// in any order); else what differs.
std::string compare_outputs(const std::string& ours, const std::string& theirs, const Query& q) {
  Records a(ours), b(theirs);
  std::vector<std::string> fa, fb;
  if (!a.next(fa) || !b.next(fb)) return "an output has no header";
  if (fa != fb) return "the headers differ";
  std::vector<std::size_t> all(fa.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::vector<std::string> rows_a, rows_b;
  std::size_t row = 0;
  for (bool more = a.next(fa); more;) {
    const std::string key = joined(fa, q.keys);
    rows_a.clear(), rows_b.clear();
    for (; more && joined(fa, q.keys) == key; more = a.next(fa)) rows_a.push_back(joined(fa, all));
    for (std::size_t i = 0; i < rows_a.size(); ++i) {
      if (!b.next(fb)) return fmt::format("DuckDB's output ends at row {}", row + i);
      if (joined(fb, q.keys) != key) return fmt::format("row {}: the keys differ", row + i);
      rows_b.push_back(joined(fb, all));
    }
    std::sort(rows_a.begin(), rows_a.end());
    std::sort(rows_b.begin(), rows_b.end());
    if (rows_a != rows_b) return fmt::format("rows {} to {} (equal keys): other rows", row, row + rows_a.size());
    row += rows_a.size();
  }
  if (b.next(fb)) return fmt::format("DuckDB's output has more than {} rows", row);
  return {};
}

// Reads the file once, so that the first program timed finds it in the page cache as the others do.
void warm(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(std::size_t{1} << 22);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {}
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("table_sort_csv", argc, argv);
  const auto rows = static_cast<std::size_t>(b.get_int("--rows", b.quick() ? 100000 : 10000000));
  const auto k = static_cast<std::size_t>(b.get_int("--k", 100));
  const int threads = static_cast<int>(b.get_int("--threads", 2));
  const std::string tandem_bin = std::filesystem::absolute(b.get("--tandem", "build/cpu/tandem")).string();
  const std::string wanted = b.get("--queries", "");
  const std::string memory_limit = b.get("--memory-limit", "");
  const std::string temp_dir = b.get("--temp-dir", std::filesystem::temp_directory_path().string());
  const std::string csv = bench::groupby_csv_file(b.get("--data-dir", "/tmp"), rows, k);
  const double file_bytes = static_cast<double>(std::filesystem::file_size(csv));
  const std::string out = (std::filesystem::temp_directory_path() / "tandem-sort-csv-outputs").string();
  std::filesystem::create_directories(out);
  const bool with_duckdb = !b.has_flag("--no-duckdb");
  // Node runs sort_csv.mjs; with --duckdb-lib (a machine without Node) the C API program beside
  // this benchmark runs the same statement through that libduckdb.so.
  const std::string duckdb_lib = b.get("--duckdb-lib", "");
  const std::string duckdb_program =
      bench::duckdb_command(std::string(TANDEM_SOURCE_DIR) + "/bench/duckdb/sort_csv.mjs", duckdb_lib, argv[0]);
  warm(csv);
  const auto start = b.time([&] { (void)bench::spawn_quiet({tandem_bin, "--version"}); });
  b.record("process start", "tandem --version", start, 1, "runs", true);
  std::vector<std::string> lines;
  for (const auto& q : kQueries) {
    if (!wanted.empty() && ("," + wanted + ",").find("," + q.name + ",") == std::string::npos) continue;
    const std::string ours = fmt::format("{}/tandem-{}.csv", out, q.name);
    const std::string theirs = fmt::format("{}/duckdb-{}.csv", out, q.name);
    nlohmann::json duck;
    if (with_duckdb) {  // DuckDB's runs of a query just before tandem's, so that both meet the same load
      std::string cmd = fmt::format("{} --csv {} --threads {} --reps {} --warmup {} --out {} --order {}",
                                    duckdb_program, bench::shell_quote(csv), threads, b.reps(), b.warmup(),
                                    bench::shell_quote(theirs), bench::shell_quote(q.order));
      if (!memory_limit.empty())
        cmd += fmt::format(" --memory-limit {}B --temp-dir {}", memory_limit, bench::shell_quote(temp_dir));
      duck = bench::run_json_command("DuckDB", cmd);
      if (lines.empty()) fmt::print("DuckDB {}\n", duck["version"].get<std::string>());
    }
    std::vector<std::string> args{
        tandem_bin, "sort", csv, "--by", q.by, "--out", ours, "--threads", std::to_string(threads)};
    if (!memory_limit.empty()) args.insert(args.end(), {"--memory-limit", memory_limit, "--temp-dir", temp_dir});
    std::filesystem::remove(ours);  // a run that fails must not be checked against an earlier output
    int status = 0;
    const auto t = b.time([&] { status = bench::spawn_quiet(args); });
    const std::string what = fmt::format("ORDER BY {} 1e{:.0f} {}t{}", q.order, std::log10(double(rows)), threads,
                                         memory_limit.empty() ? "" : " limit " + memory_limit);
    if (status != 0) b.fail(fmt::format("{}: tandem exited {}", what, status));
    b.record(what, "tandem sort FILE.csv (whole process)", t, file_bytes, "bytes", status == 0);
    if (duck.is_null()) continue;
    std::vector<double> d = duck["times"].get<std::vector<double>>();
    std::sort(d.begin(), d.end());
    const double duck_median = d[d.size() / 2];
    const std::string why = status != 0 ? "tandem failed" : compare_outputs(ours, theirs, q);
    if (!why.empty()) b.fail(fmt::format("{}: {}", what, why));
    b.info(what + " DuckDB COPY ... ORDER BY s", duck_median, "s");
    if (status == 0 && why.empty()) b.goal(what + " DuckDB / tandem", duck_median / t.median, 2.0);
    lines.push_back(fmt::format("| ORDER BY {} | {:.2f} | {:.2f} | {:.2f}x | {} |", q.order, t.median, duck_median,
                                duck_median / t.median, why.empty() ? "yes" : why));
    std::filesystem::remove(theirs);
  }
  fmt::print(
      "\n| query | tandem s (process) | DuckDB s (COPY statement) | DuckDB / tandem | outputs agree |\n"
      "|---|---|---|---|---|\n{}\n",
      fmt::join(lines, "\n"));
  return b.finish();
}
