// groupby_csv: the streaming scan feeding the group-by's chunk interface (GroupBySink): each
// chunk's needed columns are reduced to partial groups as they arrive; no whole table is built.
#include "tandem/groupby_csv.hpp"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "scan/csv_device_choice.hpp"
#include "scan/csv_stream.hpp"
#include "scan/gpu/csv_groupby_gpu.hpp"
#include "scan/source.hpp"
#include "table/table_wire.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/groupby_sink.hpp"

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

// The rows of a sized, uncompressed file, from the width of the rows in its first MiB; 0 for
// streams, compressed files and files of one line.
std::size_t estimated_rows(const std::string& path) {
  if (path == "-" || !io::is_sized_file(path) || scan::is_compressed(path)) return 0;
  io::SizedFile file(path);
  std::string head(static_cast<std::size_t>(std::min<std::uint64_t>(file.size(), std::uint64_t{1} << 20)), '\0');
  file.read(head.data(), head.size(), 0, 1);
  const auto lines = static_cast<std::size_t>(std::count(head.begin(), head.end(), '\n'));
  if (lines < 2) return 0;
  return static_cast<std::size_t>(static_cast<double>(file.size()) * static_cast<double>(lines) /
                                  static_cast<double>(head.size()));
}

GroupByResult stream_on_cpu(const std::string& path, const GroupBySpec& spec, const GroupByCsvOptions& options) {
  scan::StreamOptions so;
  so.delimiter = options.csv.delimiter;
  so.schema = options.csv.schema;
  so.threads = options.csv.threads > 0 ? options.csv.threads : default_threads();
  so.chunk_bytes = options.csv.chunk_bytes;
  so.sample_rows = options.sample_rows;
  so.progress = options.progress;
  GroupBySinkOptions sink_options;
  sink_options.threads = so.threads;
  sink_options.memory_limit = options.memory_limit;
  sink_options.temp_dir = options.temp_dir;
  sink_options.expected_rows = estimated_rows(path);
  std::shared_ptr<GroupBySink> sink;
  // Each pass gets a fresh sink: a pass that widened a type is read again from the start.
  const auto summary = scan::scan_csv(path, needed_columns(spec), so, [&]() -> scan::ChunkConsumer {
    sink.reset();
    sink = std::make_shared<GroupBySink>(spec, sink_options);
    return [s = sink](std::size_t index, const Table& chunk) { s->consume(index, chunk); };
  });
  if (summary.chunks == 0) sink->consume(0, empty_table(summary.plans));  // the result's column types
  GroupByResult r = options.on_result ? sink->finish(options.on_result) : sink->finish();
  r.report.stages.insert(r.report.stages.begin(), {"scan csv", "cpu", summary.seconds,
                                                   describe(summary) + " (chunks reduced to partial groups as read)"});
  return r;
}

}  // namespace

GroupByResult groupby_csv(const std::string& path, const GroupBySpec& spec, const GroupByCsvOptions& options) {
  Report notes;
  bool on_gpu = options.device == Device::gpu;
  if (options.device == Device::auto_ && TANDEM_HAS_CUDA && io::is_sized_file(path) && !scan::is_compressed(path)) {
    const int threads = options.csv.threads > 0 ? options.csv.threads : default_threads();
    // GPUs are looked for only where one would win: the look starts CUDA's driver, which a run
    // the CPU takes would pay for nothing.
    const auto e = scan::estimate_csv_groupby(io::file_size(path), threads, true);
    on_gpu = e.gpu && gpu_count() > 0;
    if (on_gpu || !e.gpu) notes.note(e.describe() + (e.gpu ? "" : " (no GPU looked for)"));
  }
  if (on_gpu) {
    try {
      if (auto r = scan::groupby_csv_on_gpu(path, needed_columns(spec), spec, options, notes)) {
        if (options.on_result && r->table.rows() > 0) {  // the whole result, as one piece
          Table columns = empty_like(r->table);
          options.on_result(std::exchange(r->table, std::move(columns)));
        }
        return std::move(*r);
      }
    } catch (const NoDeviceError& e) {
      if (options.device == Device::gpu) throw;
      notes.note(fmt::format("{}; streamed on the CPU", e.what()));
    }
  }
  GroupByResult r = stream_on_cpu(path, spec, options);
  for (auto& n : notes.notes) r.report.notes.push_back(std::move(n));
  for (auto& n : notes.notices) r.report.notices.push_back(std::move(n));
  return r;
}

}  // namespace tandem
