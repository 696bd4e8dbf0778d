// The host side of the GPU CSV parse: the header, the copy to the device, and the CPU reader
// where the device cannot decide.
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "scan/gpu/csv_device.hpp"
#include "table/csv_scan.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/timing.hpp"

#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

namespace tandem::scan {
namespace {

// Where the header line ends: its line break outside quotes (or the end of the text).
std::size_t header_end(std::string_view text) {
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') quoted = !quoted;
    else if (text[i] == '\n' && !quoted) return i;
  }
  return text.size();
}

}  // namespace

CsvLayout csv_layout(std::string_view text, const CsvOptions& options, std::string_view source) {
  char delimiter = options.delimiter;
  CsvLayout layout;
  std::size_t start = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
  const std::size_t end = start + header_end(text.substr(start));
  std::string_view line = text.substr(start, end - start);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (delimiter == 0)
    delimiter = std::count(line.begin(), line.end(), '\t') > std::count(line.begin(), line.end(), ',') ? '\t' : ',';
  layout.delimiter = delimiter;
  // The CPU reader checks the header (empty file, empty or repeated names, a schema naming a
  // column the header lacks) and gives the names.
  CsvOptions header_only = options;
  header_only.delimiter = delimiter;
  const Table names = read_csv_text(text.substr(0, std::min(text.size(), end + 1)), header_only, source);
  for (const auto& c : names.columns()) layout.names.push_back(c.name);
  layout.body_offset = std::min(text.size(), end + 1);
  return layout;
}

PieceType compare_piece_type(ColumnType first, ColumnType later) {
  if (first == later) return PieceType::same;
  const auto width = [](ColumnType t) { return t == ColumnType::i64 ? 0 : t == ColumnType::f64 ? 1 : 2; };
  return width(later) < width(first) ? PieceType::narrower : PieceType::wider;
}

WantedColumns wanted_columns(const CsvLayout& layout, const CsvOptions& options,
                             const std::vector<std::string>& columns) {
  WantedColumns w;
  w.names = columns.empty() ? layout.names : columns;
  for (const auto& n : w.names) {
    const auto it = std::find(layout.names.begin(), layout.names.end(), n);
    if (it == layout.names.end())
      throw UsageError(
          fmt::format("no column '{}' (columns: {})", csv::shown_name(n), csv::listed_names(layout.names)));
    w.index.push_back(static_cast<std::size_t>(it - layout.names.begin()));
  }
  w.types.assign(w.index.size(), ColumnType::str);
  w.fixed.assign(w.index.size(), false);
  for (const auto& s : options.schema) {
    for (std::size_t i = 0; i < w.names.size(); ++i)
      if (w.names[i] == s.name) w.types[i] = s.type, w.fixed[i] = true;
  }
  return w;
}

#if TANDEM_HAS_CUDA
namespace {

Table select_columns(const Table& t, const std::vector<std::string>& names) {
  if (names.empty()) return t;
  Table out;
  for (const auto& n : names) out.add(t.column(n));
  return out;
}

}  // namespace

Table read_csv_on_gpu(std::string_view text, const CsvOptions& options, const std::vector<std::string>& columns,
                      Report& report, std::string_view source) {
  gpu::require();
  Stopwatch w;
  const CsvLayout layout = csv_layout(text, options, source);
  const WantedColumns want = wanted_columns(layout, options, columns);
  const std::string_view body = text.substr(layout.body_offset);
  gpu::Stream stream;
  gpu::DeviceBuffer<char> d_body(std::max<std::size_t>(body.size(), 1));
  if (!body.empty())
    TANDEM_CUDA(cudaMemcpyAsync(d_body.data(), body.data(), body.size(), cudaMemcpyHostToDevice, stream));
  const double copy_seconds = w.seconds();
  w.reset();
  DeviceCsv parsed = parse_csv_device(d_body.data(), body.size(), layout, want.index, want.types, want.fixed, stream);
  if (parsed.needs_cpu) {
    report.note(fmt::format("CSV read on the CPU: {}", parsed.why));
    return select_columns(read_csv_text(text, options, source), want.names);
  }
  report.add("copy CSV to GPU", "gpu", copy_seconds, fmt::format("{} bytes", body.size()));
  report.add("parse CSV", "gpu", w.seconds(),
             fmt::format("{} rows, {} of {} columns", parsed.rows, want.index.size(), layout.names.size()));
  return download(parsed);
}
#else
Table read_csv_on_gpu(std::string_view, const CsvOptions&, const std::vector<std::string>&, Report&, std::string_view) {
  throw NoDeviceError("parsing CSV on the GPU needs a CUDA build of tandem");
}
#endif

}  // namespace tandem::scan
