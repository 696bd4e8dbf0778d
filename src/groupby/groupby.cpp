// tandem::groupby: checks the request, picks the engine (cpu_engine.hpp; on a DeviceTable the GPU
// hash engine of gpu/hash_engine.hpp where engine_choice.hpp allows it, else the GPU table engine
// of gpu/engine.hpp) and says in the report which ran what and why.
#include <set>

#include <fmt/format.h>

#include "groupby/cpu_engine.hpp"
#include "groupby/engine_choice.hpp"
#include "groupby/gpu/engine.hpp"
#include "groupby/gpu/hash_engine.hpp"
#include "groupby/ops/registry.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/device_table.hpp"
#include "tandem/groupby.hpp"

namespace tandem {
namespace {

void check_request(const Table& input, const GroupBySpec& spec, const GroupByOptions& options) {
  if (options.threads < 0)
    throw UsageError(
        fmt::format("group-by threads: {} (expected 0 for every core, or a positive count)", options.threads));
  if (options.device == Device::hybrid)
    throw UsageError("group-by device 'hybrid': a group-by runs on one device (auto, cpu or gpu)");
  std::set<std::string> names;
  for (const auto& k : spec.by) {
    if (input.find(k) == nullptr) {
      try {
        (void)input.column(k);
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("group-by key: {}", e.what()));
      }
    }
    if (!names.insert(k).second) throw UsageError(fmt::format("group-by keys: '{}' is named twice", k));
  }
  for (const auto& a : spec.aggs) {
    if (a.op == AggOp::quantile && !(a.q >= 0 && a.q <= 1))
      throw UsageError(fmt::format("{}: q must lie in [0, 1]", agg::describe(a)));
    if (a.op == AggOp::top && a.n < 1) throw UsageError(fmt::format("{}: n must be at least 1", agg::describe(a)));
    agg::check_applies(a, input);
    for (const auto& name : output_names(a))
      if (!names.insert(name).second)
        throw UsageError(fmt::format("group-by result: two columns would be named '{}' (rename one with 'as')", name));
  }
}

GroupByResult on_cpu(const Table& input, const GroupBySpec& spec, const GroupByOptions& options, Report report) {
  // Below ~16K rows per thread, starting threads costs more than it saves.
  const int asked = options.threads > 0 ? options.threads : default_threads();
  const int threads = static_cast<int>(std::min<std::size_t>(asked, input.rows() / 16384 + 1));
  report.note(fmt::format("CPU engine: {} thread(s)", threads));
  Table t = cpu_groupby::run(input, spec, threads, report);
  return {std::move(t), std::move(report)};
}

#if TANDEM_HAS_CUDA
// Which GPU engine runs (GroupByOptions::gpu_engine; engine_choice.hpp), said in the report.
groupby_engine::HashFit choose_gpu_engine(const DeviceTable& table, const GroupBySpec& spec,
                                          const GroupByOptions& options, Report& report) {
  if (options.gpu_engine == GpuGroupByEngine::table) {
    report.note("GPU table engine: asked for");
    return {};
  }
  const auto& impl = table.impl();
  auto fit = groupby_engine::hash_engine_fit(table.schema(), table.rows(), spec,
                                             [&](const std::string& name) { return impl.column(name).missing; });
  if (!fit.fits && options.gpu_engine == GpuGroupByEngine::hash)
    throw UsageError("group-by engine 'hash' does not apply: " + fit.why);
  if (options.gpu_engine == GpuGroupByEngine::auto_) {
    const std::string declined = groupby_engine::auto_declines_hash(fit);
    if (!declined.empty()) {
      report.note("GPU table engine: " + declined);
      return {};
    }
  }
  report.note("GPU hash engine: " + fit.why);
  return fit;
}
#endif

// The GPU engine on a device table, its result left on the device; nullptr when a 64-bit integer
// sum may have wrapped in the GPU's atomics (the CPU engine reruns it and checks every sum).
std::unique_ptr<DeviceTable::Impl> on_gpu(const DeviceTable& table, const GroupBySpec& spec,
                                          const GroupByOptions& options, Report& report) {
#if TANDEM_HAS_CUDA
  const int threads = options.threads > 0 ? options.threads : default_threads();
  const auto fit = choose_gpu_engine(table, spec, options, report);
  auto t = fit.fits ? gpu_groupby::run_hash(table.impl(), spec, fit.value_column, threads, report)
                    : gpu_groupby::run(table.impl(), spec, threads, report);
  if (!t) report.notice("GPU sums of 64-bit integers may have wrapped: rerun on the CPU, which checks every sum");
  return t;
#else
  (void)table, (void)spec, (void)options, (void)report;  // a CPU-only build cannot construct a DeviceTable
  throw NoDeviceError("group-by on a device table: this build has no CUDA support");
#endif
}

GroupByResult on_gpu_to_host(const DeviceTable& table, const GroupBySpec& spec, const GroupByOptions& options,
                             Report report) {
  auto impl = on_gpu(table, spec, options, report);
  if (!impl) return on_cpu(table.host(), spec, options, std::move(report));
  const DeviceTable result(std::move(impl));
  Stopwatch w;
  Table out = result.host();
  report.add("result table", fmt::format("gpu{}", table.device()), w.seconds(),
             fmt::format("{} groups copied to the host, strings decoded", out.rows()));
  return {std::move(out), std::move(report)};
}

// The columns a group-by reads.
std::vector<std::string> columns_read(const GroupBySpec& spec) {
  std::vector<std::string> names = spec.by;
  for (const auto& a : spec.aggs)
    if (agg::operator_info(a.op).reads_column && std::find(names.begin(), names.end(), a.column) == names.end())
      names.push_back(a.column);
  return names;
}

std::size_t bytes_read(const Table& input, const GroupBySpec& spec) {
  std::size_t bytes = 0;
  for (const auto& name : columns_read(spec)) {
    const Column& c = input.column(name);
    bytes += c.values.size() + c.offsets.size();
  }
  return bytes;
}

// Whether the GPU, upload included, beats the CPU engine on a host table. Measured at 10^8 rows
// (docs/BENCHMARKS.md) when uploads encoded string keys on the CPU: simple sums and means cost the
// CPU engine less than the copy; holistic aggregations (median, top, ...) cost it more. Uploads
// now rank strings on the GPU; the string rule stays until that is measured.
bool upload_pays_off(const Table& input, const GroupBySpec& spec) {
  for (const auto& name : columns_read(spec))
    if (input.column(name).type == ColumnType::str) return false;
  for (const auto& a : spec.aggs)
    if (agg::operator_info(a.op).holistic) return true;
  return false;
}

GroupByResult upload_and_run(const Table& input, const GroupBySpec& spec, const GroupByOptions& options,
                             Report report) {
  const DeviceTable table(input, columns_read(spec), options.threads);
  report.add("upload", fmt::format("gpu{}", table.device()), table.upload_seconds(),
             fmt::format("{} columns, {} bytes on the device (strings as dictionary codes)",
                         table.schema().num_columns(), table.device_bytes()));
  return on_gpu_to_host(table, spec, options, std::move(report));
}

// The checks every group-by of a device table makes; UsageError for a column not uploaded.
void check_device_request(const DeviceTable& table, const GroupBySpec& spec, const GroupByOptions& options) {
  check_request(table.schema(), spec, options);
  for (const auto& name : columns_read(spec))
    if (table.schema().find(name) == nullptr)
      throw UsageError(fmt::format("group-by: column '{}' was not uploaded to the device table", name));
}

}  // namespace

GroupByResult groupby(const Table& input, const GroupBySpec& spec, const GroupByOptions& options) {
  check_request(input, spec, options);
  Report report;
  report.operation = "groupby";
  if (options.device == Device::cpu) return on_cpu(input, spec, options, std::move(report));
  if (options.device == Device::gpu) {
    if (gpu_count() == 0) throw NoDeviceError("group-by device 'gpu': no usable GPU");
    return upload_and_run(input, spec, options, std::move(report));
  }
  // The reasons that need no GPU first: looking for one starts CUDA's driver, which a group-by
  // the CPU engine takes anyway should not pay for.
  if (!TANDEM_HAS_CUDA) {
    report.note("CPU-only build: CPU engine");
  } else if (bytes_read(input, spec) < (std::size_t{1} << 20)) {
    report.note("input below 1 MiB: the CPU engine is faster than a GPU round trip");
  } else if (!upload_pays_off(input, spec)) {
    report.note(
        "from host memory, encoding and uploading the columns costs more than the CPU engine's pass (a DeviceTable "
        "uploads once for many group-bys): CPU engine");
  } else if (input.rows() >= (std::size_t{1} << 32) - 1) {
    report.note("2^32 rows or more: CPU engine (the GPU engine's group ids are 32-bit)");
  } else if (gpu_count() == 0) {
    report.note("no GPU: CPU engine");
  } else {
    try {
      return upload_and_run(input, spec, options, report);
    } catch (const OutOfMemoryError& e) {
      report.notice(fmt::format("GPU out of memory ({}): CPU engine", e.what()));
    }
  }
  return on_cpu(input, spec, options, std::move(report));
}

GroupByResult groupby(const DeviceTable& table, const GroupBySpec& spec, const GroupByOptions& options) {
  check_device_request(table, spec, options);
  Report report;
  report.operation = "groupby";
  if (options.device == Device::cpu) return on_cpu(table.host(), spec, options, std::move(report));
  if (table.rows() == 0) return on_cpu(table.host(), spec, options, std::move(report));
  return on_gpu_to_host(table, spec, options, std::move(report));
}

DeviceGroupByResult groupby_on_device(const DeviceTable& table, const GroupBySpec& spec,
                                      const GroupByOptions& options) {
  check_device_request(table, spec, options);
  if (options.device == Device::cpu)
    throw UsageError("group-by with its result on the device: device 'cpu' (expected auto or gpu)");
  Report report;
  report.operation = "groupby";
  std::unique_ptr<DeviceTable::Impl> impl;
  if (table.rows() > 0) impl = on_gpu(table, spec, options, report);
  if (impl) return {DeviceTable(std::move(impl)), std::move(report)};
  // No rows, or sums the GPU cannot check: the CPU engine's result, uploaded.
  auto cpu = on_cpu(table.host(), spec, options, std::move(report));
  Stopwatch w;
#if TANDEM_HAS_CUDA
  const gpu_groupby::OnDevice on(table.device());
#endif
  DeviceTable up(cpu.table, {}, options.threads);
  cpu.report.add("upload", fmt::format("gpu{}", up.device()), w.seconds(), "the CPU engine's result");
  return {std::move(up), std::move(cpu.report)};
}

}  // namespace tandem
