// tandem::sort dispatcher: picks the path for the caller's data from measured costs, runs it,
// and falls back to the CPU when the GPU fails (device=auto) or reports a clean error (device=gpu).
#include "tandem/sort.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sort/cpu_radix.hpp"
#include "sort/device_sort.hpp"
#include "tandem/core/calibrate.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/format.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/sort/bitonic.hpp"
#if TANDEM_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#endif

namespace tandem {
namespace {

constexpr std::array<std::pair<std::string_view, SortAlgorithm>, 4> kAlgorithms{{{"auto", SortAlgorithm::auto_},
                                                                                 {"bitonic", SortAlgorithm::bitonic},
                                                                                 {"radix", SortAlgorithm::radix},
                                                                                 {"merge", SortAlgorithm::merge}}};

constexpr std::array<std::pair<std::string_view, SortPath>, 5> kPaths{{{"cpu-radix", SortPath::cpu_radix},
                                                                       {"cpu-comparison", SortPath::cpu_comparison},
                                                                       {"gpu-pipeline", SortPath::gpu_pipeline},
                                                                       {"gpu-out-of-core", SortPath::gpu_out_of_core},
                                                                       {"bitonic", SortPath::bitonic}}};

// Runs the CPU path chosen and records it.
template <class K, class V>
void run_cpu(std::span<K> keys, std::span<V> values, const SortOptions& opts, SortPath path, Report& r) {
  const int threads = opts.threads > 0 ? opts.threads : default_threads();
  Stopwatch w;
  if (path == SortPath::cpu_comparison) {
    detail::cpu_comparison_sort(keys, values, opts.descending, threads);
    r.add("CPU comparison sort", "cpu", w.seconds(),
          fmt::format("{} elements, __gnu_parallel::{}sort, {} threads", keys.size(), values.empty() ? "" : "stable_",
                      threads));
  } else {
    detail::cpu_radix_sort(keys, values, opts.descending, threads);
    r.add("CPU radix sort", "cpu", w.seconds(),
          fmt::format("{} elements, LSD 8-bit digits, {} threads", keys.size(), threads));
  }
}

template <class K, class V>
Report dispatch(std::span<K> keys, std::span<V> values, const SortOptions& opts) {
  Report r;
  r.operation = "sort";
  detail::PathInputs in;
  in.n = keys.size();
  in.key_bytes = sizeof(K);
  in.value_bytes = values.empty() ? 0 : sizeof(V);
  in.threads = opts.threads > 0 ? opts.threads : default_threads();
  in.algorithm = opts.algorithm;
  in.device = opts.device;
  if (auto b = cached_bandwidths(&r)) in.host_bw = b->host_memcpy_mt;
#if TANDEM_HAS_CUDA
  std::string gpu_problem;
  try {
    in.gpu = opts.device != Device::cpu && gpu_count() > 0;
    if (in.gpu && !keys.empty()) {
      in.pinned = gpu::is_pinned(keys.data());
      in.gpu_budget = detail::gpu_sort_budget(opts);
      if (auto b = cached_bandwidths(&r)) in.link_bw = in.pinned ? b->pinned_both : b->staged_both;
    }
  } catch (const CudaError& e) {
    in.gpu = false;
    gpu_problem = e.what();
  }
  if (opts.device == Device::gpu && !in.gpu)
    throw NoDeviceError(gpu_problem.empty() ? "sort: device = gpu but no usable GPU" : "sort: " + gpu_problem);
#else
  if (opts.device == Device::gpu) throw NoDeviceError("sort: device = gpu but this build has no CUDA support");
#endif
  const detail::PathChoice c = detail::choose_sort_path(in);
  r.note(fmt::format("path {}: {}", to_string(c.path), c.why));
  r.details()["path"] = std::string(to_string(c.path));
  r.details()["estimate_cpu_s"] = c.est_cpu_s;
  r.details()["estimate_gpu_s"] = c.est_gpu_s;
  if (keys.size() < 2) return r;
#if TANDEM_HAS_CUDA
  if (c.path == SortPath::gpu_pipeline || c.path == SortPath::gpu_out_of_core) {
    try {
      detail::gpu_sort_host(keys, values, opts, r);
      return r;
    } catch (const CudaError& e) {  // OutOfMemoryError included
      if (opts.device == Device::gpu) throw;
      r.note(fmt::format("GPU failed ({}); sorted on the CPU instead", e.what()));
    } catch (const NoDeviceError& e) {
      if (opts.device == Device::gpu) throw;
      r.note(fmt::format("no GPU ({}); sorted on the CPU instead", e.what()));
    }
    const SortPath cpu = opts.algorithm == SortAlgorithm::merge ? SortPath::cpu_comparison : SortPath::cpu_radix;
    r.details()["path"] = std::string(to_string(cpu));
    run_cpu(keys, values, opts, cpu, r);
    return r;
  }
#endif
  run_cpu(keys, values, opts, c.path, r);
  return r;
}

}  // namespace

namespace detail {

PathChoice choose_sort_path(const PathInputs& in) {
  PathChoice c;
  const bool merge = in.algorithm == SortAlgorithm::merge;
  const SortPath cpu = merge ? SortPath::cpu_comparison : SortPath::cpu_radix;
  const double n = static_cast<double>(in.n);
  const std::size_t per_elem = in.key_bytes + in.value_bytes;
  const double bytes = n * static_cast<double>(per_elem);
  // CPU estimate. Radix: (1 + 3 digits) passes over the data at about half the memcpy rate
  // (scattered writes); comparison: n log2 n compares at ~8 ns each per thread.
  const double host_bw = in.host_bw > 0 ? in.host_bw : std::min(20e9, 3e9 * std::max(1, in.threads));
  const double digits = static_cast<double>(in.key_bytes);
  c.est_cpu_s = merge ? n * std::log2(std::max(2.0, n)) * 8e-9 / std::max(1, in.threads)
                      : (1 + 3 * digits) * bytes / (0.5 * host_bw);
  if (in.device == Device::cpu || !in.gpu) {
    c.path = cpu;
    c.why = in.device == Device::cpu ? "device=cpu" : "no usable GPU";
    return c;
  }
  const bool fits = gpu_bytes_needed(in.n, per_elem) <= in.gpu_budget;
  // GPU estimate: the copies dominate (in and out at the link rate: staged pageable or pinned),
  // plus ~1 ms of fixed costs (the sort itself hides behind the D2H copy: MSD split); out of
  // core adds the host MSD partition (a histogram read, then a read and a scattered write: ~3
  // passes at about half the memcpy rate) and the pieces go through pageable staging.
  const double link = in.link_bw > 0 ? in.link_bw : (in.pinned ? 40e9 : std::min(30e9, 0.8 * host_bw));
  c.est_gpu_s = 2 * bytes / link + 1e-3 + (fits ? 0.0 : 3 * bytes / (0.5 * host_bw));
  const SortPath gpu = fits ? SortPath::gpu_pipeline : SortPath::gpu_out_of_core;
  const std::string mem = fmt::format("{} needed in one piece, {} budget",
                                      human_bytes(gpu_bytes_needed(in.n, per_elem)), human_bytes(in.gpu_budget));
  if (in.device == Device::gpu) {
    c.path = gpu;
    c.why = fmt::format("device=gpu; {}", mem);
    return c;
  }
  c.path = c.est_gpu_s < c.est_cpu_s ? gpu : cpu;
  c.why = fmt::format("estimated CPU {} vs GPU {} ({}); {}", human_seconds(c.est_cpu_s), human_seconds(c.est_gpu_s),
                      fits ? "fits on the GPU" : "larger than the GPU budget: host MSD partition into GPU-sized pieces",
                      mem);
  return c;
}

}  // namespace detail

SortAlgorithm parse_sort_algorithm(std::string_view name) {
  for (auto [n, a] : kAlgorithms)
    if (n == name) return a;
  throw UsageError(fmt::format("unknown sort algorithm '{}' (expected auto, bitonic, radix or merge)", name));
}

std::string_view to_string(SortAlgorithm a) {
  for (auto [n, v] : kAlgorithms)
    if (v == a) return n;
  return "?";
}

std::string_view to_string(SortPath p) {
  for (auto [n, v] : kPaths)
    if (v == p) return n;
  return "?";
}

namespace {
bool routes_to_bitonic(const SortOptions& opts) {
  return opts.algorithm == SortAlgorithm::bitonic || opts.device == Device::hybrid;
}
Report named_bitonic(Report r) {
  r.details()["path"] = std::string(to_string(SortPath::bitonic));
  return r;
}
}  // namespace

template <class K>
Report sort(std::span<K> keys, const SortOptions& opts) {
  if (routes_to_bitonic(opts)) return named_bitonic(bitonic::sort(keys, opts));
  return dispatch(keys, std::span<detail::NoValue>{}, opts);
}

template <class K, class V>
Report sort_pairs(std::span<K> keys, std::span<V> values, const SortOptions& opts) {
  if (keys.size() != values.size())
    throw UsageError(fmt::format("sort_pairs: {} keys but {} values", keys.size(), values.size()));
  if (routes_to_bitonic(opts)) return named_bitonic(bitonic::sort_pairs(keys, values, opts));
  return dispatch(keys, values, opts);
}

#define TANDEM_SORT_KEYS(K) template Report sort<K>(std::span<K>, const SortOptions&);
#define TANDEM_SORT_PAIRS(K, V) template Report sort_pairs<K, V>(std::span<K>, std::span<V>, const SortOptions&);
#define TANDEM_SORT_ALL(K) TANDEM_SORT_KEYS(K) TANDEM_SORT_PAIRS(K, std::uint32_t) TANDEM_SORT_PAIRS(K, std::uint64_t)
TANDEM_SORT_ALL(std::uint32_t)
TANDEM_SORT_ALL(std::int32_t)
TANDEM_SORT_ALL(std::uint64_t)
TANDEM_SORT_ALL(std::int64_t)
TANDEM_SORT_ALL(float)
TANDEM_SORT_ALL(double)

}  // namespace tandem
