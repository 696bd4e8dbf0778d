// The GPU path of groupby_csv: file -> pinned slots -> device, parse, rank strings, group.
#include "scan/gpu/csv_groupby_gpu.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"

#if TANDEM_HAS_CUDA
#include "groupby/gpu/device_columns.hpp"
#include "groupby/gpu/string_dictionary.hpp"
#include "scan/gpu/csv_device.hpp"
#include "scan/gpu/csv_gpu_pieces.hpp"
#include "scan/source.hpp"
#include "table/gpu/string_ranks.hpp"
#include "tandem/core/io.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/device_table.hpp"
#endif

namespace tandem::scan {

#if TANDEM_HAS_CUDA
namespace {

// A parsed column as a device table's: numbers as parsed, strings ranked on the device.
// std::nullopt where the strings are too many for the device ranking.
std::optional<gpu_groupby::DeviceColumn> device_column(DeviceCsvColumn&& c, std::size_t rows, cudaStream_t stream) {
  gpu_groupby::DeviceColumn d;
  d.name = c.name;
  d.type = c.type;
  d.missing = c.missing;
  if (c.missing) {  // bit i of word i / 32 is bit i % 8 of byte i / 8 on a little-endian device
    d.validity = gpu::DeviceBuffer<std::uint8_t>((rows + 7) / 8);
    TANDEM_CUDA(
        cudaMemcpyAsync(d.validity.data(), c.validity.data(), d.validity.bytes(), cudaMemcpyDeviceToDevice, stream));
  }
  if (c.type != ColumnType::str) {
    d.values = std::move(c.values);
    return d;
  }
  gpu::DeviceBuffer<std::byte> codes(rows * sizeof(std::uint32_t));
  const table_gpu::DeviceStrings strings{c.offsets.data(), reinterpret_cast<const char*>(c.values.data()),
                                         c.missing ? d.validity.data() : nullptr, rows};
  auto sorted = table_gpu::rank_strings(strings, reinterpret_cast<std::uint32_t*>(codes.data()), stream);
  if (!sorted) return std::nullopt;
  d.values = std::move(codes);
  d.dictionary = std::make_shared<gpu_groupby::SortedStringDictionary>(d.name, std::move(*sorted), c.missing > 0);
  return d;
}

}  // namespace

std::optional<DeviceTable> device_table_of(DeviceCsv&& parsed, int threads, cudaStream_t stream) {
  auto impl = std::make_unique<DeviceTable::Impl>();
  TANDEM_CUDA(cudaGetDevice(&impl->device));
  impl->rows = parsed.rows;
  impl->threads = threads;
  for (auto& c : parsed.columns) {
    auto d = device_column(std::move(c), parsed.rows, stream);
    if (!d) return std::nullopt;
    impl->columns.push_back(std::move(*d));
  }
  impl->describe_columns();
  return DeviceTable(std::move(impl));
}

std::optional<GroupByResult> groupby_csv_on_gpu(const std::string& path, const std::vector<std::string>& columns,
                                                const GroupBySpec& spec, const GroupByCsvOptions& options,
                                                Report& notes) {
  if (gpu_count() == 0) throw NoDeviceError("group-by device 'gpu': no usable GPU");
  if (is_compressed(path)) {
    notes.note("the GPU reads uncompressed files: streamed on the CPU");
    return std::nullopt;
  }
  if (path == "-" || !io::is_sized_file(path)) return groupby_csv_gpu_pieces(path, columns, spec, options, notes);
  const int threads = options.csv.threads > 0 ? options.csv.threads : default_threads();
  Stopwatch w;
  io::SizedFile file(path);
  const std::uint64_t size = file.size();
  std::string head(std::min<std::uint64_t>(size, kHeaderBytes), '\0');
  file.read(head.data(), head.size(), 0, 1);
  if (head.size() < size && head.find('\n') == std::string::npos) {
    notes.note("the header is longer than 1 MiB: streamed on the CPU");
    return std::nullopt;
  }
  const CsvLayout layout = csv_layout(head, options.csv, path);
  const WantedColumns want = wanted_columns(layout, options.csv, columns);
  const std::size_t body = size - layout.body_offset;
  std::size_t free = 0, total = 0;
  TANDEM_CUDA(cudaMemGetInfo(&free, &total));
  if (options.gpu_piece_bytes > 0 ? body > options.gpu_piece_bytes : body > free / kDeviceBytesPerCsvByte) {
    notes.note(
        fmt::format("the file ({} bytes) is read into the GPU in pieces (free GPU memory: {} bytes)", size, free));
    return groupby_csv_gpu_pieces(path, columns, spec, options, notes);
  }
  try {
    gpu::Stream stream;
    gpu::DeviceBuffer<char> text(std::max<std::size_t>(body, 1));
    fill_to_device(text.data(), body, stream, {}, [&](char* slot, std::size_t at, std::size_t bytes) {
      file.read(slot, bytes, layout.body_offset + at, threads);
    });
    const double copy_s = w.seconds();
    w.reset();
    DeviceCsv parsed = parse_csv_device(text.data(), body, layout, want.index, want.types, want.fixed, stream);
    if (parsed.needs_cpu) {
      notes.note(fmt::format("CSV read on the CPU: {}", parsed.why));
      return std::nullopt;
    }
    text = {};
    const double parse_s = w.seconds();
    w.reset();
    std::optional<DeviceTable> made = device_table_of(std::move(parsed), threads, stream);
    if (!made) {
      notes.note("more rows than the GPU ranks strings for: streamed on the CPU");
      return std::nullopt;
    }
    const double rank_s = w.seconds();
    const DeviceTable& table = *made;
    GroupByOptions go;
    go.device = Device::gpu;
    go.threads = threads;
    GroupByResult r = groupby(table, spec, go);
    const std::string gpu = fmt::format("gpu{}", table.device());
    r.report.stages.insert(
        r.report.stages.begin(),
        {{"read + copy CSV to GPU", fmt::format("cpu x{} + {}", threads, gpu), copy_s,
          fmt::format("{} bytes, {:.1f} GB/s", body, body / std::max(copy_s, 1e-9) / 1e9)},
         {"parse CSV", gpu, parse_s,
          fmt::format("{} rows, {} of {} columns", parsed.rows, want.index.size(), layout.names.size())},
         {"columns for the group-by", gpu, rank_s, "strings ranked on the GPU"}});
    return r;
  } catch (const OutOfMemoryError& e) {
    notes.notice(fmt::format("GPU out of memory ({}): streamed on the CPU", e.what()));
    return std::nullopt;
  }
}
#else
std::optional<GroupByResult> groupby_csv_on_gpu(const std::string&, const std::vector<std::string>&, const GroupBySpec&,
                                                const GroupByCsvOptions&, Report&) {
  throw NoDeviceError("group-by device 'gpu': a CPU-only build of tandem");
}
#endif

}  // namespace tandem::scan
