// Host data through the GPU (CUDA builds only): the staged pipeline for data that fits, GPU chunk
// sorts with a parallel CPU multiway merge for data that does not, and the device-resident API.
//
// Floor, 2^28 u32 (1 GiB) from a pageable std::vector on an H200 box: the bytes must cross host
// memory twice each way (user buffer <-> pinned slot, by CPU threads at ~38 GB/s) and PCIe once
// each way (~55 GB/s pinned), so a staged round trip with no sort is ~61 ms; the CUB sort on the
// device takes ~5.4 ms (+ ~0.5 ms per key mapping pass for signed/float/descending keys, run per
// chunk during the upload), so end-to-end >= ~66 ms (1.09x the round trip). From pinned memory:
// ~39 ms round trip + 5.4 ms = 1.14x. The naive path (thrust::device_vector from the vector,
// plain pageable cudaMemcpy at ~8 GB/s each way) is ~260 ms.
#include "sort/device_sort.hpp"

#if TANDEM_HAS_CUDA
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <memory>
#include <parallel/algorithm>
#include <parallel/multiway_merge.h>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tandem/format.hpp"
#include "tandem/key_order.hpp"
#include "tandem/parallel.hpp"
#include "tandem/timing.hpp"
#include "tandem/transfer.hpp"

namespace tandem {
namespace detail {
namespace {

struct StageTimes {
  double h2d{0}, sort{0}, d2h{0};
};

TransferOptions transfer_options() {
  TransferOptions to = calibrated_transfer_options();
  // Chunks stay multiples of 4 KiB, so each holds whole keys for the per-chunk mapping kernel.
  to.chunk_bytes = std::max<std::size_t>(std::size_t{1} << 20, to.chunk_bytes / 4096 * 4096);
  return to;
}

// One piece that fits on the GPU: src -> device (keys mapped per chunk while the next chunk is
// copied) -> CUB sort -> dst. dst may be src. The caller holds ws.mu.
template <class K, class V>
void fit_sort(const K* src_k, const V* src_v, K* dst_k, V* dst_v, std::size_t n, const SortOptions& opts,
              SortWorkspace& ws, cudaStream_t s, StageTimes& t) {
  using U = ordered_bits_t<K>;
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  const bool map = needs_mapping<K>(opts.descending);
  const TransferOptions to = transfer_options();
  char* dk = grow(ws.keys, n * sizeof(K));
  V* dv = nullptr;
  if constexpr (kValues) dv = reinterpret_cast<V*>(grow(ws.values, n * sizeof(V)));
  Stopwatch w;
  ws.begin(s);
  copy_to_device_chunked(dk, src_k, n * sizeof(K), s, to, [&](std::size_t off, std::size_t len, cudaStream_t st) {
    if (map) map_to_bits<K>(dk + off, len / sizeof(K), opts.descending, st);
  });
  if constexpr (kValues) copy_to_device(dv, src_v, n * sizeof(V), s, to);
  t.h2d += w.seconds();
  w.reset();
  sort_bits<U, V>(reinterpret_cast<U*>(dk), dv, n, opts.algorithm == SortAlgorithm::merge, ws, s);
  if (map) map_from_bits<K>(dk, n, opts.descending, s);
  TANDEM_CUDA(cudaStreamSynchronize(s));
  t.sort += w.seconds();
  w.reset();
  copy_to_host(dst_k, dk, n * sizeof(K), s, to);
  if constexpr (kValues) copy_to_host(dst_v, dv, n * sizeof(V), s, to);
  ws.end(s);
  t.d2h += w.seconds();
}

class Progress {
 public:
  explicit Progress(bool on) : on_(on && ::isatty(2)) {}
  void line(const std::string& text) {
    if (on_) std::fprintf(stderr, "\rtandem sort: %s\033[K", text.c_str());
  }
  ~Progress() {
    if (on_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool on_;
};

// Larger than the budget: chunks of C elements sorted on the GPU (each through the staged
// pipeline), then one parallel multiway merge of the sorted runs on the CPU threads.
template <class K, class V>
void out_of_core(std::span<K> keys, std::span<V> values, const SortOptions& opts, std::size_t budget,
                 SortWorkspace& ws, cudaStream_t s, Report& r) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  const std::size_t n = keys.size();
  const std::size_t per = sizeof(K) + (kValues ? sizeof(V) : 0);
  const std::size_t cap = std::size_t{1} << 30;  // CUB takes int sizes; 2^30 keeps chunks aligned
  const std::size_t C = std::min(out_of_core_chunk(budget, per), cap);
  const std::size_t runs = (n + C - 1) / C;
  const int T = opts.threads > 0 ? opts.threads : default_threads();
  Progress progress(opts.progress && n * per >= (std::size_t{1} << 30));
  StageTimes t;
  const bool desc = opts.descending;
  auto less = [desc](const K& a, const K& b) { return desc ? key_less(b, a) : key_less(a, b); };
  double merge_s = 0;
  if constexpr (!kValues) {
    auto buf = std::make_unique_for_overwrite<K[]>(n);
    std::vector<std::pair<K*, K*>> seqs;
    for (std::size_t c = 0; c < runs; ++c) {
      const std::size_t off = c * C, len = std::min(C, n - off);
      progress.line(fmt::format("GPU chunk {}/{}", c + 1, runs));
      fit_sort<K, V>(keys.data() + off, nullptr, buf.get() + off, nullptr, len, opts, ws, s, t);
      seqs.emplace_back(buf.get() + off, buf.get() + off + len);
    }
    progress.line(fmt::format("merging {} runs on {} CPU threads", runs, T));
    Stopwatch w;
    __gnu_parallel::multiway_merge(seqs.begin(), seqs.end(), keys.begin(), n, less, __gnu_parallel::parallel_tag(T));
    merge_s = w.seconds();
  } else {
    struct Item {
      K k;
      V v;
    };
    for (std::size_t c = 0; c < runs; ++c) {
      const std::size_t off = c * C, len = std::min(C, n - off);
      progress.line(fmt::format("GPU chunk {}/{}", c + 1, runs));
      fit_sort<K, V>(keys.data() + off, values.data() + off, keys.data() + off, values.data() + off, len, opts, ws, s, t);
    }
    progress.line(fmt::format("merging {} runs on {} CPU threads", runs, T));
    Stopwatch w;
    auto a = std::make_unique_for_overwrite<Item[]>(n);
    auto b = std::make_unique_for_overwrite<Item[]>(n);
#pragma omp parallel for num_threads(T) schedule(static)
    for (std::size_t i = 0; i < n; ++i) a[i] = {keys[i], values[i]};
    std::vector<std::pair<Item*, Item*>> seqs;
    for (std::size_t c = 0; c < runs; ++c) seqs.emplace_back(a.get() + c * C, a.get() + std::min(n, (c + 1) * C));
    __gnu_parallel::stable_multiway_merge(seqs.begin(), seqs.end(), b.get(), n,
                                          [&](const Item& x, const Item& y) { return less(x.k, y.k); },
                                          __gnu_parallel::parallel_tag(T));
#pragma omp parallel for num_threads(T) schedule(static)
    for (std::size_t i = 0; i < n; ++i) {
      keys[i] = b[i].k;
      values[i] = b[i].v;
    }
    merge_s = w.seconds();
  }
  r.add("H2D staged copies", "cpu+gpu0", t.h2d, fmt::format("{} chunks of up to {} elements", runs, C));
  r.add("GPU chunk sorts (CUB)", "gpu0", t.sort, std::string(opts.algorithm == SortAlgorithm::merge ? "merge sort" : "radix sort"));
  r.add("D2H staged copies", "cpu+gpu0", t.d2h, "");
  r.add("CPU multiway merge", "cpu", merge_s, fmt::format("{} runs, {} threads{}", runs, T, kValues ? ", stable" : ""));
  r.details["chunks"] = runs;
  r.details["chunk_elements"] = C;
}

}  // namespace

std::size_t gpu_sort_budget(const SortOptions& opts) {
  auto [free, total] = gpu::memory_info();
  (void)total;
  SortWorkspace& ws = sort_workspace();
  std::size_t held = 0;
  {
    std::lock_guard lock(ws.mu);
    held = ws.temp.bytes() + ws.alt_keys.bytes() + ws.alt_values.bytes() + ws.keys.bytes() + ws.values.bytes();
  }
  std::size_t b = (free + held) / 10 * 9;
  if (opts.gpu_memory_limit > 0) b = std::min<std::size_t>(b, opts.gpu_memory_limit);
  return b;
}

template <class K, class V>
void gpu_sort_host(std::span<K> keys, std::span<V> values, const SortOptions& opts, Report& r) {
  constexpr bool kValues = !std::is_same_v<V, NoValue>;
  gpu::require();
  const std::size_t n = keys.size();
  if (n < 2) return;
  const std::size_t per = sizeof(K) + (kValues ? sizeof(V) : 0);
  const std::size_t budget = gpu_sort_budget(opts);
  SortWorkspace& ws = sort_workspace();
  std::lock_guard lock(ws.mu);
  gpu::Stream s;
  const bool pinned = gpu::is_pinned(keys.data());
  if (gpu_bytes_needed(n, per) <= budget && n <= static_cast<std::size_t>(INT_MAX)) {
    StageTimes t;
    fit_sort<K, V>(keys.data(), kValues ? values.data() : nullptr, keys.data(), kValues ? values.data() : nullptr, n, opts,
                   ws, s, t);
    const std::string how = pinned ? "pinned, direct DMA" : "pageable, staged through pinned slots";
    r.add("H2D copy + key mapping", "cpu+gpu0", t.h2d, fmt::format("{} ({})", human_bytes(n * per), how));
    r.add(opts.algorithm == SortAlgorithm::merge ? "GPU merge sort (CUB)" : "GPU radix sort (CUB)", "gpu0", t.sort,
          fmt::format("{} elements", n));
    r.add("D2H copy", "cpu+gpu0", t.d2h, how);
  } else {
    out_of_core(keys, values, opts, budget, ws, s, r);
  }
}

#define TANDEM_GPU_HOST(K, V) template void gpu_sort_host<K, V>(std::span<K>, std::span<V>, const SortOptions&, Report&);
#define TANDEM_GPU_HOST_ALL(K) TANDEM_GPU_HOST(K, NoValue) TANDEM_GPU_HOST(K, std::uint32_t) TANDEM_GPU_HOST(K, std::uint64_t)
TANDEM_GPU_HOST_ALL(std::uint32_t)
TANDEM_GPU_HOST_ALL(std::int32_t)
TANDEM_GPU_HOST_ALL(std::uint64_t)
TANDEM_GPU_HOST_ALL(std::int64_t)
TANDEM_GPU_HOST_ALL(float)
TANDEM_GPU_HOST_ALL(double)

}  // namespace detail

namespace {
template <class K, class V>
void device_sort(K* d_keys, V* d_values, std::size_t n, const SortOptions& opts, cudaStream_t stream) {
  using U = ordered_bits_t<K>;
  if (n < 2) return;
  auto& ws = detail::sort_workspace();
  std::lock_guard lock(ws.mu);
  ws.begin(stream);
  const bool map = detail::needs_mapping<K>(opts.descending);
  if (map) detail::map_to_bits<K>(d_keys, n, opts.descending, stream);
  detail::sort_bits<U, V>(reinterpret_cast<U*>(d_keys), d_values, n, opts.algorithm == SortAlgorithm::merge, ws, stream);
  if (map) detail::map_from_bits<K>(d_keys, n, opts.descending, stream);
  ws.end(stream);
}
}  // namespace

template <class K>
void sort_device(K* d_keys, std::size_t n, const SortOptions& opts, cudaStream_t stream) {
  device_sort<K, detail::NoValue>(d_keys, nullptr, n, opts, stream);
}

template <class K, class V>
void sort_pairs_device(K* d_keys, V* d_values, std::size_t n, const SortOptions& opts, cudaStream_t stream) {
  device_sort<K, V>(d_keys, d_values, n, opts, stream);
}

void release_sort_workspace() {
  auto& ws = detail::sort_workspace();
  std::lock_guard lock(ws.mu);
  if (ws.pending) TANDEM_CUDA(cudaEventSynchronize(ws.done));
  ws.temp = {};
  ws.alt_keys = {};
  ws.alt_values = {};
  ws.keys = {};
  ws.values = {};
}

#define TANDEM_SORT_DEVICE(K)                                                                            \
  template void sort_device<K>(K*, std::size_t, const SortOptions&, cudaStream_t);                      \
  template void sort_pairs_device<K, std::uint32_t>(K*, std::uint32_t*, std::size_t, const SortOptions&, \
                                                    cudaStream_t);                                       \
  template void sort_pairs_device<K, std::uint64_t>(K*, std::uint64_t*, std::size_t, const SortOptions&, cudaStream_t);
TANDEM_SORT_DEVICE(std::uint32_t)
TANDEM_SORT_DEVICE(std::int32_t)
TANDEM_SORT_DEVICE(std::uint64_t)
TANDEM_SORT_DEVICE(std::int64_t)
TANDEM_SORT_DEVICE(float)
TANDEM_SORT_DEVICE(double)

}  // namespace tandem
#endif
