// tandem::groupby: checks the request, picks the engine (cpu_engine.hpp, or the GPU hash
// group-by through gpu_route.hpp for what it covers) and says in the report which ran what.
#include <set>

#include <fmt/format.h>

#include "groupby/cpu_engine.hpp"
#include "groupby/gpu_route.hpp"
#include "groupby/ops/registry.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
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
// The GPU route; nothing when its integer sums may have wrapped (the CPU then reruns it).
std::optional<GroupByResult> on_gpu(const Table& input, const GroupBySpec& spec, Report& report) {
  auto t = gpu_route::run(input, spec, report);
  if (!t) {
    report.note("GPU sums of 64-bit integers may have wrapped: rerun on the CPU, which checks every sum");
    return std::nullopt;
  }
  return GroupByResult{std::move(*t), report};
}
#endif

}  // namespace

GroupByResult groupby(const Table& input, const GroupBySpec& spec, const GroupByOptions& options) {
  check_request(input, spec, options);
  Report report;
  report.operation = "groupby";
  if (options.device == Device::cpu) return on_cpu(input, spec, options, std::move(report));
#if TANDEM_HAS_CUDA
  const auto gap = gpu_route::gap(input, spec);
  if (options.device == Device::gpu) {
    if (gap) throw UsageError(fmt::format("group-by device 'gpu': the GPU engine does not cover {} yet", *gap));
    if (gpu_count() == 0) throw NoDeviceError("group-by device 'gpu': no usable GPU");
    if (auto r = on_gpu(input, spec, report)) return std::move(*r);
    return on_cpu(input, spec, options, std::move(report));
  }
  if (gpu_count() == 0) {
    report.note("no GPU: CPU engine");
  } else if (gap) {
    report.note(fmt::format("the GPU engine does not cover {} yet: CPU engine", *gap));
  } else if (gpu_route::input_bytes(input, spec) < (std::size_t{1} << 20)) {
    report.note("input below 1 MiB: the CPU engine is faster than a GPU round trip");
  } else {
    try {
      if (auto r = on_gpu(input, spec, report)) return std::move(*r);
    } catch (const OutOfMemoryError& e) {
      report.note(fmt::format("GPU out of memory ({}): CPU engine", e.what()));
    }
  }
#else
  if (options.device == Device::gpu) throw NoDeviceError("group-by device 'gpu': this build has no CUDA support");
  report.note("CPU-only build: CPU engine");
#endif
  return on_cpu(input, spec, options, std::move(report));
}

}  // namespace tandem
