// CSV parsed on the GPU from bytes already in device memory (the db-benchmark group-by file),
// against tandem's CPU reader on every core of the host (the anchor, same text), for all nine
// columns and for the two a q1 group-by needs (id1, v1). The device result is copied back and
// checked value by value against the CPU reader's table.
//
// Floor: the text is read once and the columns written once; at the device-to-device copy
// bandwidth measured in the same run (read + write), floor = (text + column bytes) / bandwidth.
//
//   bench_csv_gpu [--rows N] [--k K] [--reps R] [--quick]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <fmt/format.h>

#include "harness.hpp"
#include "scan/gpu/csv_device.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/groupby.hpp"
#include "tandem/table/csv.hpp"
#if TANDEM_HAS_CUDA
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#endif

using namespace tandem;

#if TANDEM_HAS_CUDA
namespace {

bool same_columns(const Table& cpu, const Table& gpu, std::string& why) {
  for (const Column& g : gpu.columns()) {
    const Column& c = cpu.column(g.name);
    if (c.type != g.type || c.length != g.length) {
      why = fmt::format("column {}: {} x {} on the GPU, {} x {} on the CPU", g.name, to_string(g.type), g.length,
                        to_string(c.type), c.length);
      return false;
    }
    const std::size_t w = value_width(c.type);
    for (std::size_t i = 0; i < c.length; ++i) {
      bool same = c.present(i) == g.present(i);
      if (same && c.present(i))
        same = c.type == ColumnType::str ? c.string(i) == g.string(i)
                                         : std::memcmp(c.values.data() + i * w, g.values.data() + i * w, w) == 0;
      if (!same) {
        why = fmt::format("column {} row {}", g.name, i);
        return false;
      }
    }
  }
  return true;
}

std::size_t column_bytes(const scan::DeviceCsv& csv) {
  std::size_t b = 0;
  for (const auto& c : csv.columns) b += c.values.bytes() + c.offsets.bytes() + c.validity.bytes();
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("csv_gpu", argc, argv);
  if (gpu_count() == 0) {
    std::printf("bench_csv_gpu: no GPU, nothing measured\n");
    return 0;
  }
  GroupByDataSpec spec;
  spec.rows = static_cast<std::size_t>(b.get_double("rows", b.quick() ? 1e6 : 1e7));
  spec.k = static_cast<std::size_t>(b.get_int("k", 100));
  std::ostringstream os;
  write_csv(os, generate_groupby_table(spec));
  const std::string text = os.str();
  const scan::CsvLayout layout = scan::csv_layout(text, {}, "groupby.csv");
  const std::string_view body = std::string_view(text).substr(layout.body_offset);
  const double gb = body.size() / 1e9;

  Table cpu;
  const auto cpu_stats = b.time([&] { cpu = read_csv_text(text, {}, "groupby.csv"); });
  b.record("all 9 columns", "CPU reader, every core", cpu_stats, body.size(), "B", true);

  gpu::Stream stream;
  gpu::DeviceBuffer<char> d_body(body.size());
  TANDEM_CUDA(cudaMemcpy(d_body.data(), body.data(), body.size(), cudaMemcpyHostToDevice));
  gpu::DeviceBuffer<char> d_copy(body.size());
  const auto copy_stats = b.measure([&] {
    gpu::Event start, stop;
    start.record(stream);
    TANDEM_CUDA(cudaMemcpyAsync(d_copy.data(), d_body.data(), body.size(), cudaMemcpyDeviceToDevice, stream));
    stop.record(stream);
    stop.sync();
    return stop.seconds_since(start);
  });
  const double copy_bw = 2 * body.size() / copy_stats.median;  // bytes read + written per second
  b.info("device copy bandwidth (read + write)", copy_bw / 1e9, "GB/s");

  struct Case {
    const char* name;
    std::vector<std::string> columns;
  };
  for (const Case& c : {Case{"all 9 columns", layout.names}, Case{"q1: id1, v1", {"id1", "v1"}}}) {
    std::vector<std::size_t> wanted;
    for (const auto& n : c.columns)
      wanted.push_back(
          static_cast<std::size_t>(std::find(layout.names.begin(), layout.names.end(), n) - layout.names.begin()));
    const std::vector<ColumnType> types(wanted.size(), ColumnType::str);
    const std::vector<bool> fixed(wanted.size(), false);
    scan::DeviceCsv parsed;
    const auto stats = b.time(
        [&] { parsed = scan::parse_csv_device(d_body.data(), body.size(), layout, wanted, types, fixed, stream); });
    std::string why = parsed.needs_cpu ? "the device asked for the CPU: " + parsed.why : "";
    const bool ok = !parsed.needs_cpu && same_columns(cpu, scan::download(parsed), why);
    if (!ok) b.fail(fmt::format("{}: {}", c.name, why));
    b.record(c.name, "GPU parse, text in device memory", stats, body.size(), "B", ok);
    const double floor = (body.size() + column_bytes(parsed)) / copy_bw;
    b.info(fmt::format("{}: floor (text read + columns written at copy bandwidth)", c.name), floor * 1e3, "ms");
    b.info(fmt::format("{}: time over floor", c.name), stats.median / floor, "x");
    b.goal(fmt::format("{}: GPU parse GB/s (goal 20)", c.name), gb / stats.median, 20, true, "GB/s");
    b.info(fmt::format("{}: GPU over CPU reader (every core)", c.name), cpu_stats.median / stats.median, "x");
  }
  return b.finish();
}
#else
int main() {
  std::printf("bench_csv_gpu: a CPU-only build, nothing measured\n");
  return 0;
}
#endif
