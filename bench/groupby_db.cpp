// The db-benchmark group-by questions (H2O.ai's, now kept by DuckDB Labs) on generated data:
// tandem's CPU engine against DuckDB at the same thread count, both compute only (data already
// in memory), every answer checked against DuckDB's.
//
//   bench_groupby_db [--rows N] [--k K] [--threads T] [--reps R] [--questions q1,q3]
//                    [--data-dir DIR] [--duckdb-script bench/duckdb/groupby.mjs] [--explain]
//                    [--no-duckdb]   (tandem alone, unchecked: for profiling)
//   bench_groupby_db --gpu [--rows 100000000] [--k 100] [--threads 16] [--reps R] [--questions ...]
//                    the GPU engine against the CPU engine on the same generated table, each GPU
//                    answer checked against the CPU's: on a DeviceTable uploaded once with the result
//                    left on the device (groupby_on_device: data and result stay where each engine
//                    keeps them, as cuDF does; the goal's ratio), the same with the result copied
//                    to the host, and from the host table (strings encoded and columns uploaded
//                    inside the timed call). Then three group-bys by one integer key (h1-h3) on
//                    the GPU hash engine and on the table engine; where auto picks the hash
//                    engine (counts only) it is held to at most 10% slower than the table engine.
//
// Run from the repository root after `npm install` in bench/duckdb. The table is written once
// as CSV (DIR/tandem-groupby-N-K.csv, kept for the next run); a Node script loads it into
// DuckDB, times `CREATE TABLE ans AS <query>` per question and exports the answers.
//
// Floor, bytes each question must read at 10^7 rows (strings: 8-byte offsets + bytes; id1/id2
// are 5 bytes, id3 12), against the ~10 GB/s two cores of this machine stream:
//   q1 id1,v1 170 MB (17 ms)   q2 id1,id2,v1 300 MB (30 ms)   q3 id3,v1,v3 320 MB (32 ms)
//   q4 id4,v1-v3 200 MB (20 ms)   q5 id6,v1-v3 200 MB (20 ms)   q6 id4,id5,v3 160 MB (16 ms)
//   q7 id3,v1,v2 280 MB (28 ms)   q8 id6,v3 120 MB (12 ms)   q9 id2,id4,v1,v2 250 MB (25 ms)
//   q10 id1-id6,v3 660 MB (66 ms)
// Hash work comes on top: one key lookup per row and column for strings. Cache misses per row
// (1 MiB L2 per core, 32 MiB shared L3, ~100 ns to DRAM, ~10 misses in flight when probes are
// batched with prefetches, so ~10 ns a miss per core):
//   10^6 groups (q3, q7 by id3 at K = 10): id3's dictionary holds 10^6 12-byte keys in 24-byte
//   slots at load <= 1/2, 48 MB per thread, past L3: ~1 miss per row (10^7 rows, ~0.05 s on two
//   cores). The group states (10^6 × ~32 B) miss once more per row unless the rows are first
//   scattered by group id into partitions whose states fit L2 (two streaming passes instead).
//   10^7 groups (q10 at K = 10): id3 as above; the six keys' combined 64-bit codes (2^53 of
//   them, ~10^7 occurring) are ranked by a radix sort of (code, row) pairs, 7 byte digits:
//   7 × 2 × 120 MB read and written ≈ 1.7 GB (~0.17 s); the 10^7 result rows (3 strings,
//   3 integers, sum, count) write ~750 MB.
//   Fresh memory costs a page fault and the kernel zeroing the page on first touch: before the
//   scratch pool (src/core/scratch_pool.hpp) that was ~35 % of q10's CPU time.
// What is timed: tandem's groupby() call (keys encoded, aggregated, the result table built and
// sorted by the keys); DuckDB's `CREATE TABLE ans AS <query>`, whose rows are unordered (the
// sorted export that checks them is not timed). tandem's time thus includes ordering the
// groups and DuckDB's does not.
#include <sys/mman.h>
#include <sys/resource.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/device_table.hpp"
#include "tandem/groupby.hpp"

using namespace tandem;

namespace {

struct Question {
  std::string id;
  std::vector<std::string> by;
  std::string aggs;
};

const std::vector<Question> kQuestions = {
    {"q1", {"id1"}, "sum(v1)"},
    {"q2", {"id1", "id2"}, "sum(v1)"},
    {"q3", {"id3"}, "sum(v1),mean(v3)"},
    {"q4", {"id4"}, "mean(v1),mean(v2),mean(v3)"},
    {"q5", {"id6"}, "sum(v1),sum(v2),sum(v3)"},
    {"q6", {"id4", "id5"}, "median(v3),std(v3)"},
    {"q7", {"id3"}, "max(v1),min(v2)"},
    {"q8", {"id6"}, "top(v3,2)"},
    {"q9", {"id2", "id4"}, "sum(v1),sum(v2),sum(v1v2),sum(v1v1),sum(v2v2),count()"},
    {"q10", {"id1", "id2", "id3", "id4", "id5", "id6"}, "sum(v3),count()"},
};

// An answer as DuckDB exports it: key texts and numbers per row.
struct Row {
  std::vector<std::string> keys;
  std::vector<double> values;
};
using Answer = std::vector<Row>;

std::string text(const Column& c, std::size_t i) {
  if (!c.present(i)) return "";
  if (c.type == ColumnType::str) return std::string(c.string(i));
  return visit_numeric(c.type, [&](auto t) { return fmt::format("{}", c.numbers<decltype(t)>()[i]); });
}

double number(const Column& c, std::size_t i) {
  if (!c.present(i)) return NAN;
  return visit_numeric(c.type, [&](auto t) { return static_cast<double>(c.numbers<decltype(t)>()[i]); });
}

// An i32 column of f(i), in memory left uninitialised and on huge pages (as the engine's own
// scratch arrays), since the time of q9 includes making these columns.
template <class F>
Column derived_column(std::string name, std::size_t n, int threads, F f) {
  const std::size_t bytes = (n * sizeof(std::int32_t) + (2u << 20) - 1) / (2u << 20) * (2u << 20);
  std::shared_ptr<void> memory(std::aligned_alloc(2u << 20, std::max<std::size_t>(bytes, 2u << 20)), std::free);
  madvise(memory.get(), bytes, MADV_HUGEPAGE);
  auto* out = static_cast<std::int32_t*>(memory.get());
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::size_t i = 0; i < n; ++i) out[i] = f(i);
  Column c;
  c.name = std::move(name);
  c.type = ColumnType::i32;
  c.length = n;
  c.values = Buffer::borrow(out, n * sizeof(std::int32_t), std::move(memory));
  return c;
}

// q9's inputs: the products whose sums give r² (v1 <= 5 and v2 <= 15, so i32 holds them).
Table with_products(const Table& t, int threads) {
  const auto v1 = t.column("v1").numbers<std::int32_t>(), v2 = t.column("v2").numbers<std::int32_t>();
  Table out;
  for (const char* c : {"id2", "id4", "v1", "v2"}) out.add(t.column(c));
  out.add(derived_column("v1v2", v1.size(), threads, [&](std::size_t i) { return v1[i] * v2[i]; }));
  out.add(derived_column("v1v1", v1.size(), threads, [&](std::size_t i) { return v1[i] * v1[i]; }));
  out.add(derived_column("v2v2", v1.size(), threads, [&](std::size_t i) { return v2[i] * v2[i]; }));
  return out;
}

// The question's answer in DuckDB's shape: q7 subtracts, q8 has a row per value, q9 gives r².
Answer shape(const Question& q, const Table& r) {
  const std::size_t k = q.by.size();
  Answer a;
  for (std::size_t i = 0; i < r.rows(); ++i) {
    Row row;
    for (std::size_t c = 0; c < k; ++c) row.keys.push_back(text(r.column(c), i));
    std::vector<double> v;
    for (std::size_t c = k; c < r.num_columns(); ++c) v.push_back(number(r.column(c), i));
    if (q.id == "q7") {
      row.values = {v[0] - v[1]};
    } else if (q.id == "q8") {
      for (double x : v)
        if (!std::isnan(x)) a.push_back({row.keys, {x}});
      continue;
    } else if (q.id == "q9") {
      const long double n = v[5], sx = v[0], sy = v[1], sxy = v[2], sxx = v[3], syy = v[4];
      const long double cov = n * sxy - sx * sy;
      row.values = {static_cast<double>(cov * cov / ((n * sxx - sx * sx) * (n * syy - sy * sy)))};
    } else {
      row.values = v;
    }
    a.push_back(std::move(row));
  }
  return a;
}

Answer read_answer(const std::string& path, std::size_t keys) {
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: DuckDB's answer is missing", path));
  Answer a;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    Row row;
    std::stringstream s(line);
    std::string cell;
    for (std::size_t c = 0; std::getline(s, cell, ','); ++c) {
      if (c < keys) row.keys.push_back(cell);
      else row.values.push_back(cell.empty() ? NAN : std::strtod(cell.c_str(), nullptr));
    }
    a.push_back(std::move(row));
  }
  return a;
}

// Empty when the answers agree (keys exactly, numbers to 1e-9 relative, r² to 1e-6).
std::string compare(const Question& q, const Answer& ours, const Answer& theirs) {
  if (ours.size() != theirs.size()) return fmt::format("{} rows, DuckDB {}", ours.size(), theirs.size());
  const double tol = q.id == "q9" ? 1e-6 : 1e-9;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    if (ours[i].keys != theirs[i].keys)
      return fmt::format("row {}: keys {} vs DuckDB {}", i, fmt::join(ours[i].keys, ","),
                         fmt::join(theirs[i].keys, ","));
    for (std::size_t j = 0; j < ours[i].values.size(); ++j) {
      const double x = ours[i].values[j], y = theirs[i].values.at(j);
      if (std::isnan(x) && std::isnan(y)) continue;
      if (!(std::fabs(x - y) <= tol * std::max({1.0, std::fabs(x), std::fabs(y)})))
        return fmt::format("row {} ({}), value {}: {} vs DuckDB {}", i, fmt::join(ours[i].keys, ","), j, x, y);
    }
  }
  return {};
}

void write_csv(const Table& t, const std::string& path) {
  const std::string tmp = path + ".part";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw InputError(fmt::format("{}: cannot write", tmp));
  std::vector<std::string> names;
  for (const auto& c : t.columns()) names.push_back(c.name);
  const std::string header = fmt::format("{}\n", fmt::join(names, ","));
  std::fwrite(header.data(), 1, header.size(), f);
  const std::size_t block = 1 << 16;
  for (std::size_t b = 0; b < t.rows(); b += block) {
    fmt::memory_buffer out;
    for (std::size_t i = b; i < std::min(t.rows(), b + block); ++i)
      for (std::size_t c = 0; c < t.num_columns(); ++c)
        fmt::format_to(std::back_inserter(out), "{}{}", text(t.column(c), i), c + 1 == t.num_columns() ? '\n' : ',');
    std::fwrite(out.data(), 1, out.size(), f);
  }
  if (std::fclose(f) != 0) throw InputError(fmt::format("{}: write failed", tmp));
  std::filesystem::rename(tmp, path);
}

nlohmann::json run_duckdb(const bench::Bench& b, const std::string& csv, const std::string& out, int threads,
                          const std::string& questions) {
  std::filesystem::create_directories(out);
  const std::string cmd =
      fmt::format("node {} --csv {} --threads {} --reps {} --out {} --questions {}",
                  b.get("--duckdb-script", "bench/duckdb/groupby.mjs"), csv, threads, b.reps(), out, questions);
  return bench::run_json_command("DuckDB", cmd);
}

std::array<double, 2> cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return {double(u.ru_utime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec),
          double(u.ru_stime.tv_sec) + 1e-6 * double(u.ru_stime.tv_usec)};
}

// GPU floor at 10^8 rows (H100, ~3 TB/s): the codes and values a question reads (u32 string
// codes, i32 ids, i32/f64 values: q1 0.8 GB, q3 1.6 GB, q10 3.2 GB) plus one gid array written
// and read per aggregation, ~1-3 ms per question; holistic questions (q6, q8) sort 10^8 values
// twice (~1.2 GB each way per pass), ~20-40 ms; q10's two rankings of 64-bit tuples, ~50 ms.
// Group-bys of one integer key that the GPU hash engine takes (auto picks it for counts only):
// timed on it and on the table engine, results left on the device, answers compared.
// H100, 10^8 rows (2026-12-06): h1 (10^6 groups) 1.46-1.56x, h2 (100 groups: the hash engine's
// dense-range path keeps min and max too, by CAS loops in shared memory) 0.83-0.95x, h3 3.1-3.5x.
void hash_engine_questions(bench::Bench& b, const DeviceTable& device, std::size_t k, int threads) {
  const std::vector<Question> hash_qs = {
      {"h1", {"id6"}, "sum(v3),min(v3),max(v3),mean(v3),count()"},  // rows / K groups
      {"h2", {"id4"}, "sum(v3),count()"},                           // K groups, a small range
      {"h3", {"id6"}, "count()"},
  };
  const double rows = double(device.rows());
  std::vector<std::string> lines;
  for (const auto& q : hash_qs) {
    const GroupBySpec spec{q.by, parse_aggregations(q.aggs)};
    std::optional<DeviceGroupByResult> hash, table;
    GroupByOptions on_hash{Device::gpu, threads, GpuGroupByEngine::hash};
    GroupByOptions on_table{Device::gpu, threads, GpuGroupByEngine::table};
    const auto h = b.measure([&] {
      Stopwatch t;
      hash.emplace(groupby_on_device(device, spec, on_hash));
      return t.seconds();
    });
    const auto t = b.measure([&] {
      Stopwatch w;
      table.emplace(groupby_on_device(device, spec, on_table));
      return w.seconds();
    });
    if (b.has_flag("--explain")) fmt::print("{}{}", hash->report.explain(), table->report.explain());
    const std::string what = fmt::format("{} {} 1e{:.0f} K={}", q.id, q.aggs, std::log10(rows), k);
    const std::string why = compare(q, shape(q, hash->table.host()), shape(q, table->table.host()));
    b.record(what, "tandem GPU hash engine, result on the device", h, rows, "rows", why.empty());
    b.record(what, "tandem GPU table engine, result on the device", t, rows, "rows", why.empty());
    if (!why.empty()) b.fail(fmt::format("{}: hash vs table engine: {}", what, why));
    // auto takes the hash engine for counts only (engine_choice.hpp), held to never more than 10%
    // slower than the table engine there (as auto's device choice is); with a value column auto
    // takes the table engine, and the ratio is information.
    if (q.aggs == "count()")
      b.goal(fmt::format("{} table engine / hash engine (auto picks hash)", what), t.median / h.median, 0.9);
    else b.info(fmt::format("{} table engine / hash engine (auto picks the table engine)", what), t.median / h.median);
    lines.push_back(
        fmt::format("| {} | {} | {:.4f} | {:.4f} | {:.2f}x |", q.id, q.aggs, h.median, t.median, t.median / h.median));
  }
  fmt::print(
      "\n| question | aggregations by one integer key | hash engine s | table engine s | table / hash |\n"
      "|---|---|---|---|---|\n{}\n",
      fmt::join(lines, "\n"));
}

int gpu_questions(bench::Bench& b, const Table& data, const std::vector<Question>& qs, std::size_t k, int threads) {
  std::optional<DeviceTable> on_gpu;
  std::optional<DeviceTable> products_on_gpu;
  Table products;
  try {
    on_gpu.emplace(data);
    products = with_products(data, threads);
    products_on_gpu.emplace(products);
  } catch (const NoDeviceError& e) {
    fmt::print("GPU engine: skipped ({})\n", e.what());
    return b.finish();
  }
  fmt::print("uploaded {} rows: {:.2f} s, {:.2f} GB on the device\n", data.rows(), on_gpu->upload_seconds(),
             double(on_gpu->device_bytes()) / 1e9);
  std::vector<std::string> lines;
  const double rows = double(data.rows());
  for (const auto& q : qs) {
    const GroupBySpec spec{q.by, parse_aggregations(q.aggs)};
    const Table& input = q.id == "q9" ? products : data;
    const DeviceTable& device = q.id == "q9" ? *products_on_gpu : *on_gpu;
    GroupByResult cpu, gpu, from_host;
    std::optional<DeviceGroupByResult> resident;
    const auto c = b.measure([&] {
      Stopwatch t;
      cpu = groupby(input, spec, {Device::cpu, threads});
      return t.seconds();
    });
    const auto g = b.measure([&] {
      Stopwatch t;
      gpu = groupby(device, spec, {Device::gpu, threads});
      return t.seconds();
    });
    const auto d = b.measure([&] {
      Stopwatch t;
      resident.emplace(groupby_on_device(device, spec, {Device::gpu, threads}));
      return t.seconds();
    });
    const auto h = b.measure([&] {
      Stopwatch t;
      from_host = groupby(input, spec, {Device::gpu, threads});
      return t.seconds();
    });
    if (b.has_flag("--explain")) fmt::print("{}", gpu.report.explain());
    const std::string what = fmt::format("{} 1e{:.0f} K={}", q.id, std::log10(rows), k);
    const Answer want = shape(q, cpu.table);
    std::string why = compare(q, shape(q, gpu.table), want);
    if (why.empty()) why = compare(q, shape(q, from_host.table), want);
    if (why.empty()) why = compare(q, shape(q, resident->table.host()), want);
    resident.reset();
    b.record(what, fmt::format("tandem CPU {}t", threads), c, rows, "rows", true);
    b.record(what, "tandem GPU, device table, result on the device", d, rows, "rows", why.empty());
    b.record(what, "tandem GPU, device table, result to the host", g, rows, "rows", why.empty());
    b.record(what, "tandem GPU, from host", h, rows, "rows", why.empty());
    if (!why.empty()) b.fail(fmt::format("{}: GPU vs CPU: {}", what, why));
    b.goal(fmt::format("{} GPU vs CPU {}t", what, threads), c.median / d.median, 10.0);
    lines.push_back(fmt::format("| {} | {:.4f} | {:.4f} | {:.4f} | {:.4f} | {:.1f}x | {:.1f}x | {:.2f}x |", q.id,
                                c.median, d.median, g.median, h.median, c.median / d.median, c.median / g.median,
                                c.median / h.median));
  }
  fmt::print(
      "\n| question | CPU s | GPU s (device table, result on the device) | GPU s (result to the host) | GPU s (from "
      "host) | CPU / GPU | CPU / GPU, result to the host | CPU / GPU from host |\n"
      "|---|---|---|---|---|---|---|---|\n{}\n",
      fmt::join(lines, "\n"));
  hash_engine_questions(b, *on_gpu, k, threads);
  return b.finish();
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("groupby_db", argc, argv);
  const auto rows = static_cast<std::size_t>(b.get_int("--rows", b.quick() ? 100000 : 10000000));
  const auto k = static_cast<std::size_t>(b.get_int("--k", 100));
  const int threads = static_cast<int>(b.get_int("--threads", 2));
  std::vector<Question> qs;
  const std::string wanted = b.get("--questions", "");
  for (const auto& q : kQuestions)
    if (wanted.empty() || ("," + wanted + ",").find("," + q.id + ",") != std::string::npos) qs.push_back(q);
  std::vector<std::string> ids;
  for (const auto& q : qs) ids.push_back(q.id);

  Stopwatch w;
  const Table data = generate_groupby_table({.rows = rows, .k = k});
  fmt::print("generated {} rows, K = {} in {:.2f} s\n", rows, k, w.seconds());
  if (b.has_flag("--gpu")) return gpu_questions(b, data, qs, k, threads);
  const std::string dir = b.get("--data-dir", "/tmp");
  const std::string csv = fmt::format("{}/tandem-groupby-{}-{}.csv", dir, rows, k);
  const bool duckdb = !b.has_flag("--no-duckdb");
  nlohmann::json duck;
  if (duckdb) {
    if (!std::filesystem::exists(csv)) write_csv(data, csv);
    duck = run_duckdb(b, csv, csv + ".answers", threads, fmt::format("{}", fmt::join(ids, ",")));
    fmt::print("DuckDB {} loaded the CSV in {:.2f} s\n", duck["version"].get<std::string>(),
               duck["load_s"].get<double>());
  }

  std::vector<std::string> lines;
  for (const auto& q : qs) {
    const GroupBySpec spec{q.by, parse_aggregations(q.aggs)};
    GroupByResult r;
    double cpu[2];
    const auto s = b.measure([&] {  // q9's products are part of its time; the post-steps on the groups are not
      const auto before = cpu_seconds();
      Stopwatch t;
      const Table products = q.id == "q9" ? with_products(data, threads) : Table{};
      r = groupby(q.id == "q9" ? products : data, spec, {Device::cpu, threads});
      const double wall = t.seconds();
      const auto after = cpu_seconds();
      cpu[0] = after[0] - before[0];
      cpu[1] = after[1] - before[1];
      return wall;
    });
    if (b.has_flag("--explain")) fmt::print("{}", r.report.explain());
    if (!duckdb) {  // profiling on a shared machine: the process's CPU time of the last run too
      b.record(fmt::format("{} K={} {}t", q.id, k, threads), "tandem CPU", s, double(rows), "rows", true);
      fmt::print("  cpu time of one run: user {:.3f} s, system {:.3f} s\n", cpu[0], cpu[1]);
      continue;
    }
    const auto why =
        compare(q, shape(q, r.table), read_answer(fmt::format("{}.answers/{}.csv", csv, q.id), q.by.size()));
    const Stats d = summarize(duck["times"][q.id].get<std::vector<double>>());
    const std::string c = fmt::format("{} K={} {}t", q.id, k, threads);
    b.record(c, "DuckDB", d, double(rows), "rows", true);
    b.record(c, "tandem CPU", s, double(rows), "rows", why.empty());
    if (!why.empty()) b.fail(fmt::format("{}: {}", c, why));
    b.goal(fmt::format("{} 1e{:.0f} K={} {}t vs DuckDB", q.id, std::log10(double(rows)), k, threads),
           d.median / s.median, 1.0);
    lines.push_back(fmt::format("| {} | {:.3f} | {:.3f} | {:.2f}x |", q.id, s.median, d.median, d.median / s.median));
  }
  fmt::print("\n| question | tandem s | DuckDB s | DuckDB / tandem |\n|---|---|---|---|\n{}\n", fmt::join(lines, "\n"));
  return b.finish();
}
