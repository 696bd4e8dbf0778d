// Out-of-core file sorts of (u64 key, u64 value) pairs under a memory limit below the data's size:
// the whole `tandem sort --type u64 --in K --values V --out KO --values-out VO --memory-limit L` process
// against DuckDB's `CREATE OR REPLACE TABLE s AS SELECT k, v FROM t ORDER BY k` under the same
// memory limit and thread count, both results checked.
//
//   bench_sort_file [--rows 1e9] [--threads 2] [--memory-limit 4G] [--temp-dir /tmp] [--data-dir /tmp]
//                   [--tandem build/release/tandem] [--reps 1] [--warmup 0] [--explain] [--keep-data]
//                   [--no-duckdb | --duckdb-lib libduckdb.so]
//
// --duckdb-lib defaults to the one `npm install` in bench/duckdb puts in
// bench/duckdb/node_modules/@duckdb/node-bindings-linux-x64/.
//
// Run from the repository root (--rows accepts 1e7 style; --memory-limit takes K, M, G or T, powers of
// 1024, and both sides are given the same number of bytes). The data, made on each side and never
// exchanged: row i (0 <= i < n) is key (i * 6364136223846793005) mod (2^64 - 59), value i; the keys are
// distinct, so the sorted result is unique. tandem's input, DIR/tandem-sortfile-N-{keys,values}.u64
// (raw little-endian u64), is written when absent or of the wrong size; DuckDB's, table t of the
// database DIR/tandem-sortfile-N.duckdb, is made with range(n) when that does not hold t with n rows.
// Its first keys are checked against the formula here.
// What is timed: tandem, the whole process (start to exit, reading and writing its files included;
// its outputs removed between runs, untimed); DuckDB, the CREATE TABLE ... ORDER BY statement through
// its C API in this process (libduckdb.so opened at run time from --duckdb-lib, as
// bench/duckdb/groupby_csv.cpp does), with threads, memory_limit, temp_directory and
// preserve_insertion_order = true set first (s dropped between runs and at the end, untimed).
// --reps defaults to 1 and --warmup to 0 here: at 10^9 rows a run takes minutes.
// The checks (a failed one fails the program): tandem's output, read in blocks by a few threads,
// holds n strictly increasing keys and n values with key(VO[j]) == KO[j] and VO[j] < n for every j,
// which (the formula being injective) proves it is the sorted permutation; DuckDB's s holds n rows,
// and its rows at 0..4, n/2..n/2+4 and n-5..n-1 (LIMIT 5 OFFSET x: s keeps the order it was made in)
// equal tandem's at those positions. DuckDB running out of memory under the limit is reported (INFO,
// "out of memory" in the table), not a failed check; any other error is one. tandem's peak resident
// memory (the largest of its runs, from getrusage) is printed beside the limit.
// Disk: each of the four files is 8n bytes (8 GB each at 10^9); the database holds t and, while it
// is checked, s (DuckDB compresses them: ~9n bytes each at 10^6); the temporary runs take up to the
// data's size on each side. Unless --keep-data, tandem's files are removed before the
// DuckDB part and the database at the end.

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "duckdb/duck_api.hpp"
#include "harness.hpp"
#include "processes.hpp"
#include "tandem/core/error.hpp"

using namespace tandem;

namespace {

using u64 = std::uint64_t;
constexpr u64 kMultiplier = 6364136223846793005ULL;
constexpr u64 kPrime = 18446744073709551557ULL;  // 2^64 - 59
constexpr const char* kNpmDuckdb = "bench/duckdb/node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so";
constexpr std::size_t kBlock = std::size_t{1} << 20;  // elements per read or write (8 MiB)

u64 key_of(u64 i) { return static_cast<u64>(static_cast<unsigned __int128>(i) * kMultiplier % kPrime); }

// "1e9", "1000000": a count of at least 1.
u64 parse_count(const std::string& s) {
  u64 v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec == std::errc() && r.ptr == s.data() + s.size() && v > 0) return v;
  double d = 0;
  const auto rd = std::from_chars(s.data(), s.data() + s.size(), d);
  if (rd.ec != std::errc() || rd.ptr != s.data() + s.size() || d < 1 || d > 1e18 || d != std::floor(d))
    throw UsageError(fmt::format("--rows: '{}' is not a positive whole number", s));
  return static_cast<u64>(d);
}

// "4G", "64M", "512K", "1048576" (optionally "GB"/"GiB"): bytes, K = 1024 as tandem's --memory-limit reads it.
u64 parse_size(const std::string& s) {
  double d = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), d);
  std::string unit(r.ptr, s.data() + s.size());
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  const std::string units = "KMGT";
  const std::size_t at = unit.size() == 1 ? units.find(unit[0]) : std::string::npos;
  if (r.ec != std::errc() || d <= 0 || (!unit.empty() && unit != "B" && at == std::string::npos))
    throw UsageError(fmt::format("--memory-limit: '{}' is not a size (e.g. 4G, 64M)", s));
  const double bytes = d * std::pow(1024.0, unit.empty() || unit == "B" ? 0 : static_cast<double>(at + 1));
  return static_cast<u64>(std::llround(bytes));
}

// "1e9" for a power of ten, else the number.
std::string rows_label(u64 n) {
  const double e = std::log10(static_cast<double>(n));
  if (e == std::floor(e) && e >= 3) return fmt::format("1e{:.0f}", e);
  return fmt::format("{}", n);
}

// An open file descriptor, closed at the end of its scope.
class File {
 public:
  File(const std::string& path, int flags) : path_(path), fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd_ < 0) throw Error(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() { ::close(fd_); }
  void read(void* to, std::size_t bytes, u64 at) const {
    for (auto* p = static_cast<char*>(to); bytes > 0;) {
      const ssize_t r = ::pread(fd_, p, bytes, static_cast<off_t>(at));
      if (r <= 0)
        throw Error(
            fmt::format("cannot read '{}' at byte {}: {}", path_, at, r == 0 ? "end of file" : std::strerror(errno)));
      p += r, at += static_cast<u64>(r), bytes -= static_cast<std::size_t>(r);
    }
  }
  void write(const void* from, std::size_t bytes, u64 at) const {
    for (const auto* p = static_cast<const char*>(from); bytes > 0;) {
      const ssize_t r = ::pwrite(fd_, p, bytes, static_cast<off_t>(at));
      if (r < 0) throw Error(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
      p += r, at += static_cast<u64>(r), bytes -= static_cast<std::size_t>(r);
    }
  }

 private:
  std::string path_;
  int fd_;
};

// Runs f(part, begin, end) on `parts` threads over [0, n), each part a contiguous range; an exception of
// any part is thrown again here.
template <class F>
void in_parts(u64 n, unsigned parts, F&& f) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(parts);
  for (unsigned p = 0; p < parts; ++p)
    threads.emplace_back([&, p] {
      try {
        f(p, n * p / parts, n * (p + 1) / parts);
      } catch (...) {
        errors[p] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

unsigned io_threads() { return std::clamp(std::thread::hardware_concurrency(), 1U, 8U); }

// tandem's input: the keys and values files, written (through .part files renamed into place) unless
// both exist with n values.
void make_input(const std::string& keys, const std::string& values, u64 n) {
  namespace fs = std::filesystem;
  auto has_n = [&](const std::string& p) { return fs::exists(p) && fs::file_size(p) == n * sizeof(u64); };
  if (has_n(keys) && has_n(values)) return;
  fmt::print("writing {} and {} ({} pairs)\n", keys, values, n);
  {
    const File k(keys + ".part", O_WRONLY | O_CREAT | O_TRUNC), v(values + ".part", O_WRONLY | O_CREAT | O_TRUNC);
    in_parts(n, io_threads(), [&](unsigned, u64 begin, u64 end) {
      std::vector<u64> kb(kBlock), vb(kBlock);
      for (u64 at = begin; at < end; at += kBlock) {
        const std::size_t m = static_cast<std::size_t>(std::min<u64>(kBlock, end - at));
        for (std::size_t j = 0; j < m; ++j) vb[j] = at + j, kb[j] = key_of(at + j);
        k.write(kb.data(), m * sizeof(u64), at * sizeof(u64));
        v.write(vb.data(), m * sizeof(u64), at * sizeof(u64));
      }
    });
  }
  fs::rename(keys + ".part", keys);
  fs::rename(values + ".part", values);
}

// Reads a file once, so that the first run timed finds it in the page cache as the later ones do.
void warm(const std::string& path) {
  const File f(path, O_RDONLY);
  const u64 n = std::filesystem::file_size(path) / sizeof(u64);
  in_parts(n, io_threads(), [&](unsigned, u64 begin, u64 end) {
    std::vector<u64> b(kBlock);
    for (u64 at = begin; at < end; at += kBlock)
      f.read(b.data(), static_cast<std::size_t>(std::min<u64>(kBlock, end - at)) * sizeof(u64), at * sizeof(u64));
  });
}

// Empty when KO and VO hold the n pairs sorted by key (see the top of the file); else the first thing wrong.
std::string check_output(const std::string& keys, const std::string& values, u64 n) {
  namespace fs = std::filesystem;
  for (const auto& p : {keys, values}) {
    if (!fs::exists(p)) return fmt::format("{} is missing", p);
    if (fs::file_size(p) != n * sizeof(u64))
      return fmt::format("{} holds {} bytes, not {}", p, fs::file_size(p), n * sizeof(u64));
  }
  struct Part {
    u64 first{0}, last{0};
    u64 bad_at{std::numeric_limits<u64>::max()};  // the first position found wrong
    std::string why;
  };
  const File kf(keys, O_RDONLY), vf(values, O_RDONLY);
  const unsigned parts = static_cast<unsigned>(std::min<u64>(io_threads(), n));
  std::vector<Part> part(parts);
  in_parts(n, parts, [&](unsigned p, u64 begin, u64 end) {
    Part& r = part[p];
    std::vector<u64> kb(kBlock), vb(kBlock);
    for (u64 at = begin; at < end && r.why.empty(); at += kBlock) {
      const std::size_t m = static_cast<std::size_t>(std::min<u64>(kBlock, end - at));
      kf.read(kb.data(), m * sizeof(u64), at * sizeof(u64));
      vf.read(vb.data(), m * sizeof(u64), at * sizeof(u64));
      if (at == begin) r.first = kb[0];
      for (std::size_t j = 0; j < m && r.why.empty(); ++j) {
        const u64 pos = at + j;
        if (vb[j] >= n) r.why = fmt::format("VO[{}] = {} is not below n = {}", pos, vb[j], n);
        else if (key_of(vb[j]) != kb[j])
          r.why = fmt::format("KO[{}] = {} is not the key of VO[{}] = {} ({})", pos, kb[j], pos, vb[j], key_of(vb[j]));
        else if (pos > begin && kb[j] <= r.last)
          r.why = fmt::format("KO[{}] = {} is not above KO[{}] = {}", pos, kb[j], pos - 1, r.last);
        if (!r.why.empty()) r.bad_at = pos;
        r.last = kb[j];
      }
    }
  });
  const auto first_bad =
      std::min_element(part.begin(), part.end(), [](const Part& a, const Part& b) { return a.bad_at < b.bad_at; });
  if (!first_bad->why.empty()) return first_bad->why;
  for (unsigned p = 1; p < parts; ++p)
    if (part[p].first <= part[p - 1].last)
      return fmt::format("KO[{}] = {} is not above KO[{}] = {}", n * p / parts, part[p].first, n * p / parts - 1,
                         part[p - 1].last);
  return {};
}

// The positions DuckDB's result is compared at: 0..4, n/2..n/2+4, n-5..n-1 (those below n), as runs of
// at most 5 (one LIMIT 5 OFFSET x query each).
std::vector<u64> sample_starts(u64 n) { return {0, n / 2, n >= 5 ? n - 5 : 0}; }

u64 to_u64(const std::string& s) {
  u64 v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) throw Error(fmt::format("DuckDB gave '{}', not a u64", s));
  return v;
}

using Pairs = std::vector<std::pair<u64, u64>>;  // (key, value) at the sampled positions, in order

// Empty when DuckDB's s holds n rows and, at the sampled positions, rows of t in increasing key order
// equal to `tandem`'s (when given); else the first thing wrong.
std::string check_duckdb(tandem::bench::DuckDb& duck, u64 n, const Pairs* tandem) {
  if (const u64 c = to_u64(duck.rows("SELECT count(*) FROM s", 1).at(0).at(0)); c != n)
    return fmt::format("s holds {} rows, not {}", c, n);
  Pairs got;
  for (const u64 x : sample_starts(n)) {
    const auto rows = duck.rows(fmt::format("SELECT k, v FROM s LIMIT 5 OFFSET {}", x), 2);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const u64 k = to_u64(rows[i].at(0)), v = to_u64(rows[i].at(1));
      if (v >= n || key_of(v) != k) return fmt::format("s[{}] is ({}, {}): not a row of t", x + i, k, v);
      if (i > 0 && k <= got.back().first) return fmt::format("s[{}] = {} is not above s[{}]", x + i, k, x + i - 1);
      got.emplace_back(k, v);
    }
  }
  if (tandem != nullptr && got != *tandem) return "the rows at 0..4, n/2..n/2+4, n-5..n-1 differ from tandem's";
  return {};
}

// Removes the files it holds when it goes out of scope (unless --keep-data).
struct Cleanup {
  bool keep{false};
  std::vector<std::string> paths;
  void remove_now() {
    if (keep) return;
    for (const auto& p : paths) std::filesystem::remove(p);
    paths.clear();
  }
  ~Cleanup() {
    try {
      remove_now();
    } catch (...) {}
  }
};

}  // namespace

int main(int argc, char** argv) {
  // One run each unless asked for more: at 10^9 rows a run takes minutes (the harness's defaults are
  // 5 and 1; options given later override these).
  std::vector<std::string> arg_text{argv[0], "--reps", "1", "--warmup", "0"};
  arg_text.insert(arg_text.end(), argv + 1, argv + argc);
  std::vector<char*> args;
  for (auto& a : arg_text) args.push_back(a.data());
  bench::Bench b("sort_file", static_cast<int>(args.size()), args.data());
  try {
    namespace fs = std::filesystem;
    const u64 n = parse_count(b.get("--rows", b.quick() ? "1e6" : "1e9"));
    const int threads = static_cast<int>(b.get_int("--threads", 2));
    const std::string limit_text = b.get("--memory-limit", b.quick() ? "8M" : "4G");
    const u64 limit = parse_size(limit_text);
    const std::string temp_dir = fs::absolute(b.get("--temp-dir", "/tmp")).string();
    const std::string dir = fs::absolute(b.get("--data-dir", "/tmp")).string();
    const std::string tandem_bin = fs::absolute(b.get("--tandem", "build/release/tandem")).string();
    const bool explain = b.has_flag("--explain");
    const bool with_duckdb = !b.has_flag("--no-duckdb");
    const std::string duckdb_lib = b.get("--duckdb-lib", std::string(TANDEM_SOURCE_DIR) + "/" + kNpmDuckdb);
    if (with_duckdb && !fs::exists(duckdb_lib))
      throw UsageError(
          fmt::format("no {}: `npm install` in bench/duckdb, --duckdb-lib PATH or --no-duckdb", duckdb_lib));
    Cleanup tandem_files{b.has_flag("--keep-data"), {}};
    Cleanup database_files{tandem_files.keep, {}};

    const std::string base = fmt::format("{}/tandem-sortfile-{}", dir, n);
    const std::string keys = base + "-keys.u64", values = base + "-values.u64";
    const std::string keys_out = base + "-keys-out.u64", values_out = base + "-values-out.u64";
    tandem_files.paths = {keys, values, keys_out, values_out};
    const std::string what = fmt::format("sort {} pairs {}t limit {}", rows_label(n), threads, limit_text);
    const double bytes = 2.0 * sizeof(u64) * static_cast<double>(n);
    fmt::print("{} (u64 key, u64 value) pairs, {} of data, memory limit {} ({} bytes) on both sides\n", n,
               bytes / 1e9 >= 1 ? fmt::format("{:.1f} GB", bytes / 1e9) : fmt::format("{:.1f} MB", bytes / 1e6),
               limit_text, limit);

    // tandem: the whole process, its outputs removed before each run.
    make_input(keys, values, n);
    warm(keys), warm(values);
    std::vector<std::string> cmd{tandem_bin,       "sort",
                                 "--type",         "u64",
                                 "--in",           keys,
                                 "--values",       values,
                                 "--values-type",  "u64",
                                 "--out",          keys_out,
                                 "--values-out",   values_out,
                                 "--threads",      fmt::format("{}", threads),
                                 "--memory-limit", fmt::format("{}", limit),
                                 "--temp-dir",     temp_dir};
    if (explain) cmd.push_back("--explain");
    std::vector<std::string> quoted;  // with --explain: through the shell, to print its report (stdout)
    for (const auto& a : cmd) quoted.push_back(bench::shell_quote(a));
    const std::string shell_cmd = fmt::format("{}", fmt::join(quoted, " "));
    int status = 0;
    std::string report;
    std::fflush(stdout);  // what was printed so far comes before tandem's messages
    const Stats t = b.measure([&] {
      fs::remove(keys_out), fs::remove(values_out);
      Stopwatch w;
      if (explain) {
        auto r = bench::run_command(shell_cmd);
        status = r.status, report = std::move(r.text);
      } else {
        status = bench::spawn_quiet(cmd);
      }
      const double s = w.seconds();
      if (status != 0) throw Error(fmt::format("tandem exited {}: {}\n{}", status, shell_cmd, report));
      return s;
    });
    if (explain) fmt::print("tandem --explain (last run):\n{}", report);
    const std::string tandem_why = check_output(keys_out, values_out, n);
    if (!tandem_why.empty()) b.fail(fmt::format("{}: tandem's output: {}", what, tandem_why));
    // The largest resident set of the processes this one waited for: tandem's runs (and, with --explain, their
    // shells), to set beside the limit.
    rusage children{};
    ::getrusage(RUSAGE_CHILDREN, &children);
    const double peak = static_cast<double>(children.ru_maxrss) * 1024.0;  // ru_maxrss is in KiB
    fmt::print("tandem's peak resident memory: {:.1f} MiB (limit {:.1f} MiB)\n", peak / 1048576.0,
               static_cast<double>(limit) / 1048576.0);
    b.record(what, "tandem sort (whole process)", t, static_cast<double>(n), "pairs", tandem_why.empty(),
             {{"peak_rss_bytes", peak}, {"memory_limit_bytes", limit}});
    b.info(what + " tandem s", t.median, "s");
    Pairs expected;  // tandem's pairs at the sampled positions (when its output is right)
    if (tandem_why.empty()) {
      const File kf(keys_out, O_RDONLY), vf(values_out, O_RDONLY);
      for (const u64 x : sample_starts(n))
        for (u64 j = x; j < std::min(x + 5, n); ++j) {
          u64 k = 0, v = 0;
          kf.read(&k, sizeof k, j * sizeof(u64));
          vf.read(&v, sizeof v, j * sizeof(u64));
          expected.emplace_back(k, v);
        }
    }
    tandem_files.remove_now();  // the disk DuckDB needs at 10^9

    std::string row_duck = "-", row_ratio = "-", agree = tandem_why.empty() ? "yes" : fmt::format("no: {}", tandem_why);
    if (with_duckdb) {
      const std::string database = base + ".duckdb";
      database_files.paths = {database, database + ".wal"};
      tandem::bench::DuckDb duck(duckdb_lib, database);
      duck.run(fmt::format("SET threads = {}", threads));
      duck.run(fmt::format("SET memory_limit = '{}B'", limit));
      duck.run(fmt::format("SET temp_directory = '{}'", temp_dir));
      duck.run("SET preserve_insertion_order = true");
      const auto settings = duck.rows(
          "SELECT version(), current_setting('threads'), current_setting('memory_limit'), "
          "current_setting('temp_directory')",
          4);
      fmt::print("DuckDB {}: threads {}, memory_limit {}, temp_directory {}\n", settings.at(0).at(0),
                 settings.at(0).at(1), settings.at(0).at(2), settings.at(0).at(3));
      const auto count = duck.try_rows("SELECT count(*) FROM t", 1, true);
      if (!count || to_u64(count->at(0).at(0)) != n) {
        fmt::print("making table t of {} ({} rows)\n", database, n);
        duck.run(
            fmt::format("CREATE OR REPLACE TABLE t AS SELECT ((range::HUGEINT * {}) % {})::UBIGINT AS k, "
                        "range::UBIGINT AS v FROM range({})",
                        kMultiplier, kPrime, n));
        duck.run("CHECKPOINT");
      }
      for (const auto& row : duck.rows(fmt::format("SELECT v, k FROM t WHERE v < 5 OR v = {} ORDER BY v", n - 1), 2))
        if (to_u64(row.at(1)) != key_of(to_u64(row.at(0))))
          throw Error(fmt::format("DuckDB's t: key {} for value {}, the formula gives {}", row.at(1), row.at(0),
                                  key_of(to_u64(row.at(0)))));
      Stats d;
      try {
        d = b.measure([&] {
          duck.run("DROP TABLE IF EXISTS s");
          Stopwatch w;
          duck.run("CREATE OR REPLACE TABLE s AS SELECT k, v FROM t ORDER BY k");
          return w.seconds();
        });
      } catch (const std::runtime_error& e) {
        // DuckDB out of memory under the limit: its result, reported, not a failed check.
        const std::string message = e.what();
        if (message.find("Out of Memory Error") == std::string::npos) throw;
        fmt::print("{}\nSUMMARY|sort_file|{} DuckDB|out of memory|-|INFO\n", message.substr(0, message.find('\n')),
                   what);
        row_duck = "out of memory";
      }
      if (row_duck == "-") {
        const std::string why = check_duckdb(duck, n, tandem_why.empty() ? &expected : nullptr);
        if (!why.empty()) b.fail(fmt::format("{}: DuckDB's result: {}", what, why));
        b.record(what, "DuckDB CREATE TABLE AS ORDER BY", d, static_cast<double>(n), "pairs", why.empty());
        b.info(what + " DuckDB s", d.median, "s");
        b.info(what + " DuckDB / tandem", d.median / t.median, "x");
        row_duck = fmt::format("{:.2f}", d.median);
        row_ratio = fmt::format("{:.2f}x", d.median / t.median);
        if (!why.empty()) agree = agree == "yes" ? fmt::format("no: {}", why) : fmt::format("{}; {}", agree, why);
      }
      duck.run("DROP TABLE IF EXISTS s");
      duck.run("CHECKPOINT");
    }
    fmt::print(
        "\n| pairs | memory limit | tandem s | DuckDB s | DuckDB / tandem | outputs agree |\n"
        "|---|---|---|---|---|---|\n| {} | {} | {:.2f} | {} | {} | {} |\n",
        rows_label(n), limit_text, t.median, row_duck, row_ratio, agree);
  } catch (const UsageError& e) {
    std::cerr << "bench_sort_file: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    b.fail(e.what());
  }
  return b.finish();
}
