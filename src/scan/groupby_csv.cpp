// groupby_csv: the streaming scan feeding the group-by. The chunks' columns are gathered into
// one table of only the columns the query names, then grouped.
#include "tandem/groupby_csv.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include <fmt/format.h>

#include "scan/concat.hpp"
#include "scan/csv_stream.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

namespace tandem {
namespace {

std::vector<std::string> needed_columns(const GroupBySpec& spec) {
  std::vector<std::string> cols;
  auto add = [&](const std::string& c) {
    if (!c.empty() && std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
  };
  for (const auto& b : spec.by) add(b);
  for (const auto& a : spec.aggs) add(a.column);
  return cols;
}

// Chunks kept by index until the scan ends.
struct Gathered {
  std::mutex m;
  std::map<std::size_t, Table> chunks;
};

Table empty_table(const std::vector<scan::ColumnPlan>& plans) {
  std::vector<Column> cols;
  for (const auto& p : plans) {
    ColumnBuilder b(p.name, p.type);
    cols.push_back(b.finish());
  }
  return Table(std::move(cols));
}

std::string describe(const scan::StreamSummary& s) {
  std::string names;
  for (const auto& p : s.plans) names += fmt::format("{}{}:{}", names.empty() ? "" : ",", p.name, to_string(p.type));
  return fmt::format(
      "{} threads, {} chunks of {} ({} by the {} path), {} of {} columns read ({}), {} rows, {} at {}/s{}", s.threads,
      s.chunks, human_bytes(s.chunk_bytes), s.fast_chunks, to_string(s.simd), s.columns_read, s.columns_total, names,
      s.rows, human_bytes(s.bytes),
      human_bytes(static_cast<std::size_t>(static_cast<double>(s.bytes) / std::max(s.seconds, 1e-9))),
      s.passes > 1 ? fmt::format(", {} passes (a type widened after the sample)", s.passes) : "");
}

}  // namespace

GroupByResult groupby_csv(const std::string& path, const GroupBySpec& spec, const GroupByCsvOptions& options) {
  scan::StreamOptions so;
  so.delimiter = options.csv.delimiter;
  so.schema = options.csv.schema;
  so.threads = options.csv.threads > 0 ? options.csv.threads : default_threads();
  so.chunk_bytes = options.csv.chunk_bytes;
  so.sample_rows = options.sample_rows;
  so.progress = options.progress;
  auto gathered = std::make_shared<Gathered>();
  const auto summary = scan::scan_csv(path, needed_columns(spec), so, [&]() -> scan::ChunkConsumer {
    gathered = std::make_shared<Gathered>();
    return [g = gathered](std::size_t index, const Table& chunk) {
      std::lock_guard lock(g->m);
      g->chunks.emplace(index, chunk);
    };
  });
  Stopwatch w;
  std::vector<Table> parts;
  for (auto& [i, t] : gathered->chunks) parts.push_back(std::move(t));
  gathered->chunks.clear();
  const Table input = parts.empty() ? empty_table(summary.plans) : scan::concatenate(parts, so.threads);
  parts.clear();
  const double gather_s = w.seconds();
  GroupByOptions go;
  go.device = Device::cpu;
  go.threads = so.threads;
  GroupByResult r = groupby(input, spec, go);
  r.report.stages.insert(
      r.report.stages.begin(),
      {"gather columns", "cpu", gather_s, fmt::format("{} rows, {} columns", input.rows(), input.num_columns())});
  r.report.stages.insert(r.report.stages.begin(), {"scan csv", "cpu", summary.seconds, describe(summary)});
  return r;
}

}  // namespace tandem
