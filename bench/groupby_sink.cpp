// The group-by sink's cost over tandem::groupby on the same table: the generated db-benchmark
// table cut into chunks (slices of its columns, no copy), consumed by `threads` threads at once
// (each consume() runs the CPU engine on its own thread), then finish(); against one
// tandem::groupby call on `threads` threads over the whole table. Every sink answer is checked
// against groupby's (sums and means within 1e-9 relative, the rest exactly). With
// --memory-limit BYTES the sink spills to --temp-dir (default $TMPDIR).
//
//   bench_groupby_sink [--rows 10000000] [--k 100] [--chunks 16] [--threads 2] [--reps 5]
//                      [--questions q1,q3,q5,q9] [--memory-limit BYTES] [--temp-dir DIR] [--explain]
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <numeric>
#include <sstream>

#include <fmt/format.h>

#include "harness.hpp"
#include "tandem/groupby.hpp"
#include "tandem/groupby_sink.hpp"

using namespace tandem;

namespace {

struct Question {
  std::string name;
  GroupBySpec spec;
};

std::vector<Question> questions() {
  return {{"q1", {{"id1"}, parse_aggregations("sum(v1)")}},
          {"q2", {{"id1", "id2"}, parse_aggregations("sum(v1)")}},
          {"q3", {{"id3"}, parse_aggregations("sum(v1),mean(v3)")}},
          {"q4", {{"id4"}, parse_aggregations("mean(v1),mean(v2),mean(v3)")}},
          {"q5", {{"id6"}, parse_aggregations("sum(v1),sum(v2),sum(v3)")}},
          {"q6", {{"id4", "id5"}, parse_aggregations("median(v3),std(v3)")}},
          {"q9", {{"id2", "id4"}, parse_aggregations("var(v1),var(v2),first(v3),last(v3)")}}};
}

// Rows [b, e) of a column, borrowing its buffers (the table outlives the chunk).
Column slice(const Column& c, std::size_t b, std::size_t e) {
  Column s;
  s.name = c.name;
  s.type = c.type;
  s.length = e - b;
  if (c.type == ColumnType::str) {
    // String offsets must start at 0: rebased into a fresh array, the bytes borrowed.
    const auto o = c.string_offsets();
    std::vector<std::uint64_t> off(e - b + 1);
    for (std::size_t i = b; i <= e; ++i) off[i - b] = o[i] - o[b];
    s.offsets = Buffer::take(std::move(off));
    s.values = Buffer::borrow(c.values.data() + o[b], o[e] - o[b]);
  } else {
    s.values = Buffer::borrow(c.values.data() + b * value_width(c.type), (e - b) * value_width(c.type));
  }
  if (!c.validity.empty()) {
    std::vector<std::uint8_t> bits((e - b + 7) / 8, 0);
    for (std::size_t i = b; i < e; ++i)
      if (c.present(i)) bits[(i - b) >> 3] |= std::uint8_t(1u << ((i - b) & 7));
    s.validity = Buffer::take(std::move(bits));
  }
  return s;
}

std::vector<Table> chunks_of(const Table& t, std::size_t n) {
  std::vector<Table> out;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<Column> cols;
    for (const Column& c : t.columns()) cols.push_back(slice(c, t.rows() * i / n, t.rows() * (i + 1) / n));
    out.push_back(Table(std::move(cols)));
  }
  return out;
}

bool close(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b || std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

// Whether two results agree: names, types, presence; floats within 1e-9 relative, the rest exactly.
bool same(const Table& a, const Table& b) {
  if (a.num_columns() != b.num_columns() || a.rows() != b.rows()) return false;
  for (std::size_t c = 0; c < a.num_columns(); ++c) {
    const Column &x = a.column(c), &y = b.column(c);
    if (x.name != y.name || x.type != y.type) return false;
    for (std::size_t r = 0; r < a.rows(); ++r) {
      if (x.present(r) != y.present(r)) return false;
      if (!x.present(r)) continue;
      if (x.type == ColumnType::str) {
        if (x.string(r) != y.string(r)) return false;
      } else if (x.type == ColumnType::f64) {
        if (!close(x.numbers<double>()[r], y.numbers<double>()[r])) return false;
      } else if (std::memcmp(x.values.data() + r * value_width(x.type), y.values.data() + r * value_width(y.type),
                             value_width(x.type)) != 0) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("groupby_sink", argc, argv);
  GroupByDataSpec data;
  data.rows = static_cast<std::size_t>(b.get_double("--rows", b.quick() ? 1e5 : 1e7));
  data.k = static_cast<std::size_t>(b.get_int("--k", 100));
  const auto n_chunks = static_cast<std::size_t>(b.get_int("--chunks", 16));
  const int threads = static_cast<int>(b.get_int("--threads", 2));
  std::string wanted = b.get("--questions", "q1,q3,q5,q6,q9");
  GroupBySinkOptions options;
  options.threads = threads;
  options.memory_limit = static_cast<std::size_t>(b.get_double("--memory-limit", 0));
  options.temp_dir = b.get("--temp-dir", "");
  const Table table = generate_groupby_table(data);
  const std::vector<Table> chunks = chunks_of(table, n_chunks);
  for (const auto& q : questions()) {
    if (("," + wanted + ",").find("," + q.name + ",") == std::string::npos) continue;
    Table want, got;
    const auto whole = b.time([&] { want = groupby(table, q.spec, {Device::cpu, threads}).table; });
    bool spilled = false;
    std::string explain;
    const auto sink = b.time([&] {
      GroupBySink s(q.spec, options);
      std::exception_ptr error;
      std::mutex error_lock;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (std::size_t i = 0; i < chunks.size(); ++i) {
        try {
          s.consume(i, chunks[i]);
        } catch (...) {  // no exception leaves the parallel region: the first is rethrown after it
          const std::lock_guard hold(error_lock);
          if (!error) error = std::current_exception();
        }
      }
      if (error) std::rethrow_exception(error);
      spilled = s.spilled();
      auto r = s.finish();
      got = std::move(r.table);
      explain = r.report.explain();
    });
    if (b.has_flag("--explain")) fmt::print("{}\n", explain);
    const bool ok = same(got, want);
    if (!ok) b.fail(q.name + ": the sink's answer differs from groupby's");
    const std::string what = fmt::format("{} {} rows K={} {} chunks", q.name, data.rows, data.k, n_chunks);
    b.record(what, "tandem::groupby", whole, double(data.rows), "rows", true);
    b.record(what, spilled ? "GroupBySink (spilled)" : "GroupBySink", sink, double(data.rows), "rows", ok);
    b.info(q.name + " sink time / groupby time", sink.median / whole.median, "x");
  }
  return b.finish();
}
