// tandem::sort dispatcher: picks the path for the caller's data from measured costs, runs it,
// and falls back to the CPU when the GPU fails (device=auto) or reports a clean error (device=gpu).
#include "tandem/sort.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
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

constexpr std::array<std::pair<std::string_view, SortMemory>, 3> kMemory{
    {{"auto", SortMemory::auto_}, {"fast", SortMemory::fast}, {"low", SortMemory::low}}};

constexpr std::array<std::pair<std::string_view, TuneSignal>, 2> kTuneSignals{
    {{"time", TuneSignal::time}, {"counters", TuneSignal::counters}}};

constexpr std::array<std::pair<std::string_view, SortPath>, 6> kPaths{{{"cpu-radix", SortPath::cpu_radix},
                                                                       {"cpu-comparison", SortPath::cpu_comparison},
                                                                       {"cpu-in-place", SortPath::cpu_in_place},
                                                                       {"gpu-pipeline", SortPath::gpu_pipeline},
                                                                       {"gpu-out-of-core", SortPath::gpu_out_of_core},
                                                                       {"bitonic", SortPath::bitonic}}};

// The value a name stands for in a table of (name, value), or null; and the name of a value.
template <class T, std::size_t N>
const T* value_named(const std::array<std::pair<std::string_view, T>, N>& table, std::string_view name) {
  for (const auto& [n, v] : table)
    if (n == name) return &v;
  return nullptr;
}

template <class T, std::size_t N>
std::string_view name_of(const std::array<std::pair<std::string_view, T>, N>& table, T value) {
  for (const auto& [n, v] : table)
    if (v == value) return n;
  return "?";
}

// Where a sort reads its input when it is not the output (sort_copy): null when in place.
template <class K, class V>
struct Sources {
  const K* keys{nullptr};
  const V* values{nullptr};
};

// Runs the CPU path chosen and records it. The radix sort reads the sources in its first pass;
// the other paths sort a copy of them in place.
template <class K, class V>
void run_cpu(std::span<K> keys, std::span<V> values, const SortOptions& opts, SortPath path, Report& r,
             Sources<K, V> src) {
  const int threads = opts.threads > 0 ? opts.threads : default_threads();
  Stopwatch w;
  if (path == SortPath::cpu_radix) {
    if (src.keys)
      detail::cpu_radix_sort_copy(std::span<const K>(src.keys, keys.size()),
                                  std::span<const V>(src.values, src.values ? values.size() : 0), keys, values,
                                  opts.descending, threads);
    else detail::cpu_radix_sort(keys, values, opts.descending, threads);
    r.add("CPU radix sort", "cpu", w.seconds(),
          fmt::format("{} elements, one parallel MSD pass{} then buckets in cache, {} threads", keys.size(),
                      src.keys ? " (reading the input)" : "", threads));
    return;
  }
  if (src.keys) {
    detail::copy_sources(keys, values, src.keys, src.values, threads);
    r.add("copy input", "cpu", w.seconds(), "the path sorts in place");
    w = Stopwatch();
  }
  if (path == SortPath::cpu_in_place) {
    const std::size_t piece = detail::in_place_bucket_limit(keys.size(), threads);
    const int used = detail::in_place_threads(keys.size(), threads);
    if constexpr (std::is_same_v<V, detail::NoValue>) {
      detail::cpu_in_place_sort(keys, opts.descending, threads);
      r.add("CPU in-place radix sort", "cpu", w.seconds(),
            fmt::format("{} elements, MSD 8-bit partition in place, buckets of <= {} sorted by LSD radix, {} threads",
                        keys.size(), piece, used));
    } else {
      detail::cpu_in_place_sort_pairs(keys, values, opts.descending, threads);
      r.add("CPU in-place stable pair sort", "cpu", w.seconds(),
            fmt::format("{} pairs, blocks of <= {} sorted by LSD radix, merged in place with a buffer of one block "
                        "per thread, {} threads",
                        keys.size(), piece, used));
    }
    return;
  }
  detail::cpu_comparison_sort(keys, values, opts.descending, threads);
  r.add("CPU comparison sort", "cpu", w.seconds(),
        fmt::format("{} elements, __gnu_parallel::{}sort, {} threads", keys.size(), values.empty() ? "" : "stable_",
                    threads));
}

// Below this much data the sort's scratch is never worth a memory check.
constexpr std::uint64_t kMemoryCheckBytes = std::uint64_t{16} << 20;

template <class K, class V>
Report dispatch(std::span<K> keys, std::span<V> values, const SortOptions& opts, Sources<K, V> src = {}) {
  Report r;
  r.operation = "sort";
  detail::PathInputs in;
  in.n = keys.size();
  in.key_bytes = sizeof(K);
  in.value_bytes = values.empty() ? 0 : sizeof(V);
  in.threads = opts.threads > 0 ? opts.threads : default_threads();
  in.algorithm = opts.algorithm;
  in.device = opts.device;
  in.memory = opts.memory;
  // The free memory is read from /proc and cgroup files (tens of microseconds): only where the
  // out-of-place scratch is large enough for it to matter (0 below: the scratch is taken).
  if (std::uint64_t(in.n) * (in.key_bytes + in.value_bytes) >= kMemoryCheckBytes)
    in.host_available = available_host_memory();
  // The bandwidths only weigh the CPU against a GPU. Their cache is keyed by the GPU, whose probe
  // starts CUDA's driver: device=cpu does without them.
  if (opts.device != Device::cpu)
    if (auto b = cached_bandwidths(&r)) in.host_bw = b->host_memcpy_mt;
#if TANDEM_HAS_CUDA
  std::string gpu_problem;
  try {
    in.gpu = opts.device != Device::cpu && gpu_count() > 0;
    if (in.gpu && !keys.empty()) {
      in.pinned = gpu::is_pinned(keys.data()) && (!src.keys || gpu::is_pinned(src.keys));
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
  r.details()["host_scratch_bytes"] = detail::host_scratch_bytes(c.path, in.n, in.key_bytes, in.value_bytes);
  if (keys.size() < 2) {
    detail::copy_sources(keys, values, src.keys, src.values, 1);
    return r;
  }
#if TANDEM_HAS_CUDA
  if (c.path == SortPath::gpu_pipeline || c.path == SortPath::gpu_out_of_core) {
    try {
      detail::gpu_sort_host(keys, values, opts, r, src.keys, src.values);
      return r;
    } catch (const CudaError& e) {  // OutOfMemoryError included
      if (opts.device == Device::gpu) throw;
      r.note(fmt::format("GPU failed ({}); sorted on the CPU instead", e.what()));
    } catch (const NoDeviceError& e) {
      if (opts.device == Device::gpu) throw;
      r.note(fmt::format("no GPU ({}); sorted on the CPU instead", e.what()));
    }
    detail::PathInputs on_cpu = in;
    on_cpu.device = Device::cpu;
    const SortPath cpu = detail::choose_sort_path(on_cpu).path;
    r.details()["path"] = std::string(to_string(cpu));
    run_cpu(keys, values, opts, cpu, r, src);
    return r;
  }
#endif
  run_cpu(keys, values, opts, c.path, r, src);
  return r;
}

}  // namespace

namespace detail {

std::uint64_t host_scratch_bytes(SortPath path, std::size_t n, std::size_t key_bytes, std::size_t value_bytes) {
  const std::uint64_t elems = n;
  switch (path) {
    case SortPath::cpu_radix:
    case SortPath::gpu_out_of_core: return elems * (key_bytes + value_bytes);
    case SortPath::cpu_comparison: {
      if (value_bytes == 0) return elems * key_bytes;
      const std::size_t align = std::max(key_bytes, value_bytes);
      return 2 * elems * ((key_bytes + value_bytes + align - 1) / align * align);
    }
    case SortPath::cpu_in_place: return elems / kInPlaceScratchDivisor * (key_bytes + value_bytes);
    case SortPath::gpu_pipeline:
    case SortPath::bitonic: return 0;
  }
  return 0;
}

namespace {

// memory=low, or memory=auto when the chosen path's scratch does not fit: keys go in place.
void choose_memory(const PathInputs& in, PathChoice& c) {
  if (in.memory == SortMemory::fast || c.path == SortPath::gpu_pipeline) return;
  const std::uint64_t need = host_scratch_bytes(c.path, in.n, in.key_bytes, in.value_bytes);
  const bool low = in.memory == SortMemory::low;
  if (!low && (in.host_available == 0 || need <= in.host_available)) return;
  std::string why = low ? "memory=low"
                        : fmt::format("the {} scratch ({}) exceeds the {} of memory available", to_string(c.path),
                                      human_bytes(need), human_bytes(in.host_available));
  if (in.device == Device::gpu) {
    c.why += fmt::format("; {}, but device=gpu keeps the GPU path", why);
    return;
  }
  c.path = SortPath::cpu_in_place;
  c.why =
      fmt::format("{}; {}: {} in place (scratch {})", c.why, why, in.value_bytes > 0 ? "pairs merged" : "keys sorted",
                  human_bytes(host_scratch_bytes(c.path, in.n, in.key_bytes, in.value_bytes)));
}

// The path by estimated cost, before the memory choice.
PathChoice choose_path_by_cost(const PathInputs& in) {
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

}  // namespace

PathChoice choose_sort_path(const PathInputs& in) {
  PathChoice c = choose_path_by_cost(in);
  choose_memory(in, c);
  return c;
}

}  // namespace detail

SortAlgorithm parse_sort_algorithm(std::string_view name) {
  if (const auto* a = value_named(kAlgorithms, name)) return *a;
  throw UsageError(fmt::format("unknown sort algorithm '{}' (expected auto, bitonic, radix or merge)", name));
}

SortMemory parse_sort_memory(std::string_view name) {
  if (const auto* m = value_named(kMemory, name)) return *m;
  throw UsageError(fmt::format("unknown sort memory mode '{}' (expected auto, fast or low)", name));
}

TuneSignal parse_tune_signal(std::string_view name) {
  if (const auto* t = value_named(kTuneSignals, name)) return *t;
  throw UsageError(fmt::format("unknown tune_signal '{}' (expected time or counters)", name));
}

std::string_view to_string(SortAlgorithm a) { return name_of(kAlgorithms, a); }
std::string_view to_string(TuneSignal s) { return name_of(kTuneSignals, s); }
std::string_view to_string(SortMemory m) { return name_of(kMemory, m); }
std::string_view to_string(SortPath p) { return name_of(kPaths, p); }

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

namespace {
// sort_copy's inputs and outputs: equal lengths, and no overlap (the first pass reads the input
// while it writes elsewhere; a sort in place is sort(), not a copy onto itself).
template <class T>
void check_copy_spans(std::span<const T> in, std::span<T> out, const char* what) {
  if (in.size() != out.size())
    throw UsageError(fmt::format("sort_copy: {} {} in but room for {} out", in.size(), what, out.size()));
  const auto* a = reinterpret_cast<const std::byte*>(in.data());
  const auto* b = reinterpret_cast<const std::byte*>(out.data());
  if (!in.empty() && a < b + out.size_bytes() && b < a + in.size_bytes())
    throw UsageError(fmt::format("sort_copy: the input and output {} overlap", what));
}
}  // namespace

template <class K>
Report sort_copy(std::span<const K> in, std::span<K> out, const SortOptions& opts) {
  check_copy_spans(in, out, "keys");
  if (routes_to_bitonic(opts)) {
    parallel_copy(out.data(), in.data(), in.size_bytes(), opts.threads);
    return named_bitonic(bitonic::sort(out, opts));
  }
  return dispatch(out, std::span<detail::NoValue>{}, opts, Sources<K, detail::NoValue>{in.data(), nullptr});
}

template <class K, class V>
Report sort_pairs_copy(std::span<const K> keys_in, std::span<const V> values_in, std::span<K> keys_out,
                       std::span<V> values_out, const SortOptions& opts) {
  if (keys_in.size() != values_in.size())
    throw UsageError(fmt::format("sort_pairs_copy: {} keys but {} values", keys_in.size(), values_in.size()));
  check_copy_spans(keys_in, keys_out, "keys");
  check_copy_spans(values_in, values_out, "values");
  if (routes_to_bitonic(opts)) {
    detail::copy_sources(keys_out, values_out, keys_in.data(), values_in.data(), opts.threads);
    return named_bitonic(bitonic::sort_pairs(keys_out, values_out, opts));
  }
  return dispatch(keys_out, values_out, opts, Sources<K, V>{keys_in.data(), values_in.data()});
}

#define TANDEM_SORT_KEYS(K)                                  \
  template Report sort<K>(std::span<K>, const SortOptions&); \
  template Report sort_copy<K>(std::span<const K>, std::span<K>, const SortOptions&);
#define TANDEM_SORT_PAIRS(K, V)                                                                             \
  template Report sort_pairs<K, V>(std::span<K>, std::span<V>, const SortOptions&);                         \
  template Report sort_pairs_copy<K, V>(std::span<const K>, std::span<const V>, std::span<K>, std::span<V>, \
                                        const SortOptions&);
#define TANDEM_SORT_ALL(K) TANDEM_SORT_KEYS(K) TANDEM_SORT_PAIRS(K, std::uint32_t) TANDEM_SORT_PAIRS(K, std::uint64_t)
TANDEM_SORT_ALL(std::uint32_t)
TANDEM_SORT_ALL(std::int32_t)
TANDEM_SORT_ALL(std::uint64_t)
TANDEM_SORT_ALL(std::int64_t)
TANDEM_SORT_ALL(float)
TANDEM_SORT_ALL(double)

}  // namespace tandem
