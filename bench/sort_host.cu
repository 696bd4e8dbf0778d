// End-to-end sorts of host data, side by side in one process on the same data:
//   CUB on the device (DoubleBuffer, temp storage allocated once)   | tandem::sort_device
//   tandem::sort from a pageable std::vector (staged pipeline)      | from a pinned buffer
//   staged round trip alone (no sort)                               | pinned round trip alone
//   naive thrust (device_vector from the vector, thrust::sort, copy back)
//   out-of-core (gpu_memory_limit = a quarter of the data)          | __gnu_parallel::sort, all threads
// u32/u64/f32 keys and u32/u32 pairs; uniform, sorted, reverse, few-distinct, Zipf; every result
// is compared with tandem's CPU radix sort (itself tested against std::stable_sort).
//
// Floor (see docs/sort.md): 2^28 u32 from pageable memory cannot beat the staged round trip
// (~61 ms on an H200 box: host memcpy ~38 GB/s on 16 threads, twice); the CUB sort (~5.4 ms)
// comes on top unless hidden, so the goal is <= 1.15x the round trip; pinned: ~39 ms + 5.4 ms.
//
//   bench_sort_host [--max-log2 28|30] [--quick] [--reps N]
// Prints the goal lines (device API / CUB, pageable and pinned end-to-end / round trip, naive /
// pipeline, out-of-core / __gnu_parallel::sort) and the plot table (method x size, Gkeys/s).
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/sort.h>
#include <cub/cub.cuh>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <parallel/algorithm>
#include <string>
#include <vector>

#include "event_time.hpp"
#include "harness.hpp"
#include "sort/cpu_radix.hpp"
#include "sort/device_sort.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/transfer.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/sort.hpp"

using namespace tandem;

// fmt's headers do not compile under nvcc in C++20 mode: strings are built with std::string.

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

const char* kDists[] = {"uniform", "sorted", "reverse", "few", "zipf"};

template <class K>
std::vector<K> generate(std::size_t n, int dist) {
  std::vector<K> v(n);
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t r = mix(i * 31 + dist);
    if (dist == 3) r %= 16;
    if (dist == 4) {  // Zipf(1)-like over 1M values: P(x) ~ 1/x
      const double u = double(r >> 11) / double(1ull << 53);
      r = mix(static_cast<std::uint64_t>(std::exp(u * std::log(1e6))));
    }
    if constexpr (std::is_floating_point_v<K>) {
      v[i] = dist == 3 ? static_cast<K>(r) - K(8) : static_cast<K>(double(r >> 11) / double(1ull << 53) * 2e6 - 1e6);
    } else {
      v[i] = static_cast<K>(r);
    }
  }
  auto less = [](K a, K b) { return key_less(a, b); };
  if (dist == 1) detail::cpu_radix_sort(std::span<K>(v.data(), v.size()), std::span<detail::NoValue>{}, false, 0);
  if (dist == 2) detail::cpu_radix_sort(std::span<K>(v.data(), v.size()), std::span<detail::NoValue>{}, true, 0);
  (void)less;
  return v;
}

template <class K>
bool same(const std::vector<K>& a, const K* b) {
  return std::memcmp(a.data(), b, a.size() * sizeof(K)) == 0;
}

using bench::event_time;

struct Figures {
  double cub{0}, ours_dev{0}, pipe{0}, pipe_pinned{0}, staged_rt{0}, pinned_rt{0}, naive{0}, ooc{0}, gnu{0};
};

// Throughput table for the plot: u32 uniform, Gkeys/s per method and size (median times).
std::map<std::string, std::map<int, double>>& plot() {
  static std::map<std::string, std::map<int, double>> p;
  return p;
}
std::vector<std::string>& plot_order() {
  static std::vector<std::string> o;
  return o;
}

// CUB's own DoubleBuffer sort of K (keys) or K/V pairs, temp storage allocated once. The input is
// uploaded once and restored with a device-to-device copy before each run (not timed).
template <class K, bool Pairs>
double cub_sort(bench::Bench& b, const K* d_in, const std::vector<K>& ref, gpu::Stream& s, bool& ok) {
  const std::size_t n = ref.size();
  gpu::DeviceBuffer<K> d(n), alt(n);
  gpu::DeviceBuffer<std::uint32_t> v(Pairs ? n : 0), valt(Pairs ? n : 0);
  cub::DoubleBuffer<K> kb(d.data(), alt.data());
  cub::DoubleBuffer<std::uint32_t> vb(v.data(), valt.data());
  std::size_t temp = 0;
  if constexpr (Pairs)
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(nullptr, temp, kb, vb, int(n), 0, int(sizeof(K) * 8), s));
  else TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(nullptr, temp, kb, int(n), 0, int(sizeof(K) * 8), s));
  gpu::DeviceBuffer<char> t(temp);
  auto st = b.measure([&] {
    TANDEM_CUDA(cudaMemcpyAsync(d.data(), d_in, n * sizeof(K), cudaMemcpyDeviceToDevice, s));
    kb = cub::DoubleBuffer<K>(d.data(), alt.data());
    vb = cub::DoubleBuffer<std::uint32_t>(v.data(), valt.data());
    return event_time(s, [&] {
      if constexpr (Pairs)
        TANDEM_CUDA(cub::DeviceRadixSort::SortPairs(t.data(), temp, kb, vb, int(n), 0, int(sizeof(K) * 8), s));
      else TANDEM_CUDA(cub::DeviceRadixSort::SortKeys(t.data(), temp, kb, int(n), 0, int(sizeof(K) * 8), s));
    });
  });
  std::vector<K> got(n);
  TANDEM_CUDA(cudaMemcpy(got.data(), kb.Current(), n * sizeof(K), cudaMemcpyDeviceToHost));
  ok = got == ref;
  return st.median;
}

template <class K, bool Pairs>
void run_case(bench::Bench& b, const char* tname, std::size_t n, int dist, bool full, Figures& f) {
  const auto in = generate<K>(n, dist);
  std::vector<std::uint32_t> vin(Pairs ? n : 0);
  for (std::size_t i = 0; i < vin.size(); ++i) vin[i] = std::uint32_t(i);
  auto ref = in;
  auto vref = vin;
  if constexpr (Pairs)
    detail::cpu_radix_sort(std::span<K>(ref.data(), ref.size()), std::span<std::uint32_t>(vref.data(), vref.size()),
                           false, 0);
  else detail::cpu_radix_sort(std::span<K>(ref.data(), ref.size()), std::span<detail::NoValue>{}, false, 0);
  const std::string c = std::string(tname) + " " + kDists[dist] + " 2^" + std::to_string(std::countr_zero(n));
  const std::string unit = Pairs ? "pairs" : "keys";
  const double work = double(n);
  gpu::Stream s;
  bool ok = false;
  const bool plotted = std::is_same_v<K, std::uint32_t> && !Pairs && dist == 0;
  const int lg = std::countr_zero(n);
  auto rec = [&](const std::string& method, const Stats& st, bool good) {
    b.record(c, method, st, work, unit, good);
    if (!plotted) return;
    if (!plot().count(method)) plot_order().push_back(method);
    plot()[method][lg] = work / st.median / 1e9;
  };

  // 1. CUB on the device, and our device API on the same device data.
  gpu::DeviceBuffer<K> d_in(n);
  TANDEM_CUDA(cudaMemcpy(d_in.data(), in.data(), n * sizeof(K), cudaMemcpyHostToDevice));
  f.cub = cub_sort<K, Pairs>(b, d_in.data(), ref, s, ok);
  rec("CUB radix (device)", Stats{f.cub, f.cub, f.cub, f.cub, 1}, ok);
  if (!ok) b.fail(c + ": CUB differs from the reference");
  {
    gpu::DeviceBuffer<K> d(n);
    gpu::DeviceBuffer<std::uint32_t> v(Pairs ? n : 0);
    gpu::DeviceBuffer<std::uint32_t> v_in(Pairs ? n : 0);
    if (Pairs) TANDEM_CUDA(cudaMemcpy(v_in.data(), vin.data(), n * 4, cudaMemcpyHostToDevice));
    SortOptions o;
    auto st = b.measure([&] {
      TANDEM_CUDA(cudaMemcpyAsync(d.data(), d_in.data(), n * sizeof(K), cudaMemcpyDeviceToDevice, s));
      if (Pairs) TANDEM_CUDA(cudaMemcpyAsync(v.data(), v_in.data(), n * 4, cudaMemcpyDeviceToDevice, s));
      return event_time(s, [&] {
        if constexpr (Pairs) sort_pairs_device(d.data(), v.data(), n, o, s);
        else sort_device(d.data(), n, o, s);
      });
    });
    std::vector<K> got(n);
    TANDEM_CUDA(cudaMemcpy(got.data(), d.data(), n * sizeof(K), cudaMemcpyDeviceToHost));
    ok = got == ref;
    f.ours_dev = st.median;
    rec("tandem::sort_device", st, ok);
    if (!ok) b.fail(c + ": sort_device differs");
  }
  d_in = {};
  // 2. From a pageable std::vector: our pipeline.
  std::vector<K> w(n);
  std::vector<std::uint32_t> wv(vin.size());
  SortOptions gpu_opts;
  gpu_opts.device = Device::gpu;
  Report last;  // of the last timed run: its stages are printed for the largest u32 uniform case
  auto host_sort = [&](K* k, std::uint32_t* v, const SortOptions& o) {
    if constexpr (Pairs) last = sort_pairs(std::span<K>(k, n), std::span<std::uint32_t>(v, n), o);
    else last = sort(std::span<K>(k, n), o);
  };
  auto show = [&](const char* what) {
    if (full && plotted && n >= (std::size_t{1} << 26))
      std::printf("--- %s, %s: %s", c.c_str(), what, last.explain().c_str());
  };
  // Times tandem::sort of the pageable copy w (restored from the input before each run, untimed).
  auto timed_pageable = [&](const SortOptions& o) {
    auto st = b.measure([&] {
      parallel_copy(w.data(), in.data(), n * sizeof(K));
      if (Pairs) parallel_copy(wv.data(), vin.data(), n * 4);
      Stopwatch sw;
      host_sort(w.data(), wv.data(), o);
      return sw.seconds();
    });
    ok = same(ref, w.data()) && (!Pairs || wv == vref);
    return st;
  };
  {
    auto st = timed_pageable(gpu_opts);
    f.pipe = st.median;
    show("pageable pipeline");
    rec("tandem::sort pageable (pipeline)", st, ok);
    if (!ok) b.fail(c + ": pipeline differs");
  }
  if (!full) return;
  // 2b. The same pipeline with the MSD split turned off (one whole-array sort after the upload):
  // shows what the split buys.
  {
    SortOptions whole = gpu_opts;
    whole.gpu_tuning.split_min_elements = SIZE_MAX;
    auto st = timed_pageable(whole);
    show("pageable pipeline without the MSD split");
    rec("tandem::sort pageable, no MSD split", st, ok);
    if (!ok) b.fail(c + ": pipeline without the split differs");
  }
  // 3. Staged round trip alone, pinned round trip alone, pipeline from pinned memory.
  {
    gpu::DeviceBuffer<K> d(n);
    auto st = b.time([&] {
      copy_to_device(d.data(), in.data(), n * sizeof(K), s);
      copy_to_host(w.data(), d.data(), n * sizeof(K), s);
    });
    f.staged_rt = st.median;
    rec("staged round trip alone (no sort)", st, same(in, w.data()));
    gpu::PinnedBuffer<K> p(n);
    std::memcpy(p.data(), in.data(), n * sizeof(K));
    auto pt = b.measure([&] {
      return event_time(s, [&] {
        TANDEM_CUDA(cudaMemcpyAsync(d.data(), p.data(), n * sizeof(K), cudaMemcpyHostToDevice, s));
        TANDEM_CUDA(cudaMemcpyAsync(p.data(), d.data(), n * sizeof(K), cudaMemcpyDeviceToHost, s));
      });
    });
    f.pinned_rt = pt.median;
    rec("pinned round trip alone (no sort)", pt, same(in, p.data()));
    gpu::PinnedBuffer<std::uint32_t> pv(vin.size());
    auto pp = b.measure([&] {
      parallel_copy(p.data(), in.data(), n * sizeof(K));
      if (Pairs) parallel_copy(pv.data(), vin.data(), n * 4);
      Stopwatch sw;
      host_sort(p.data(), pv.data(), gpu_opts);
      return sw.seconds();
    });
    ok = same(ref, p.data());
    f.pipe_pinned = pp.median;
    show("pinned pipeline");
    rec("tandem::sort pinned (pipeline)", pp, ok);
    if (!ok) b.fail(c + ": pinned pipeline differs");
  }
  // 4. The naive thrust path (keys only).
  if constexpr (!Pairs) {
    auto st = b.time([&] {
      thrust::device_vector<K> dv(in.begin(), in.end());
      thrust::sort(dv.begin(), dv.end());
      thrust::copy(dv.begin(), dv.end(), w.begin());
    });
    f.naive = st.median;
    rec("naive thrust (device_vector, sort, copy back)", st, same(ref, w.data()));
  }
  // 5. Out of core with a forced limit (a quarter of the data), and __gnu_parallel::sort.
  {
    SortOptions o = gpu_opts;
    o.gpu_memory_limit = std::max<std::size_t>(n * sizeof(K) / 4, std::size_t{96} << 20);
    auto st = timed_pageable(o);
    f.ooc = st.median;
    show("out of core");
    rec("tandem out-of-core (limit max(data/4, 96 MiB))", st, ok);
    if (!ok) b.fail(c + ": out-of-core differs");
    parallel_copy(w.data(), in.data(), n * sizeof(K));
    Stopwatch sw;
    __gnu_parallel::sort(
        w.begin(), w.end(), [](K a, K x) { return key_less(a, x); },
        __gnu_parallel::default_parallel_tag(default_threads()));
    f.gnu = sw.seconds();
    rec("__gnu_parallel::sort, all " + std::to_string(default_threads()) + " threads (1 run)",
        Stats{f.gnu, f.gnu, f.gnu, f.gnu, 1}, same(ref, w.data()) || Pairs);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("sort_host", argc, argv);
  if (!gpu::available()) {
    b.info("no GPU: host-data GPU sort figures skipped (see bench_sort_cpu for the CPU path)", 0);
    return b.finish();
  }
  // Default: 2^20..2^28 (u32 uniform every 2 steps with every method, the other data at 2^24 and
  // the largest size); 2^30 with --max-log2 30 (needs ~40 GiB of host and ~20 GiB of GPU memory).
  const int max_log2 = int(b.get_int("--max-log2", b.quick() ? 18 : 28));
  if (max_log2 < 10 || max_log2 > 31) {
    std::fprintf(stderr, "bench_sort_host: --max-log2 must be in 10..31\n");
    return 2;
  }
  std::vector<int> sizes;
  for (int lg = b.quick() ? 14 : 20; lg < max_log2; lg += 2) sizes.push_back(lg);
  sizes.push_back(max_log2);
  // The plot's data: one line per method, throughput vs size (u32 uniform, complete once the
  // largest size has run, printed then so it survives a run cut short).
  auto print_plot = [&] {
    std::printf("\nplot data: u32 uniform keys, Gkeys/s (median), one row per method\n%-52s", "method");
    for (int lg : sizes) std::printf(" %7s", ("2^" + std::to_string(lg)).c_str());
    std::printf("\n");
    for (const auto& m : plot_order()) {
      std::printf("%-52s", m.c_str());
      for (int lg : sizes) {
        auto it = plot()[m].find(lg);
        if (it == plot()[m].end()) std::printf(" %7s", "-");
        else std::printf(" %7.3f", it->second);
      }
      std::printf("\n");
    }
    std::fflush(stdout);
  };
  Figures f, big;
  for (int lg : sizes) {
    const std::size_t n = std::size_t{1} << lg;
    const bool top = lg == max_log2;
    run_case<std::uint32_t, false>(b, "u32", n, 0, true, f);
    if (top) {  // the goal lines first, so they survive a run cut short
      big = f;
      const std::string at = "2^" + std::to_string(max_log2) + " u32";
      b.goal("device API / CUB radix, " + at, big.cub / big.ours_dev, 0.97);
      b.goal("pageable end-to-end / staged round trip, " + at, big.pipe / big.staged_rt, 1.15, false);
      b.goal("naive thrust / pageable pipeline, " + at, big.naive / big.pipe, 4.0);
      b.goal("pinned end-to-end / pinned round trip, " + at, big.pipe_pinned / big.pinned_rt, 1.15, false);
      b.goal("out-of-core speedup over __gnu_parallel::sort, " + at, big.gnu / big.ooc, 4.0);
      b.info("pageable pipeline Gkeys/s, " + at, (double(std::size_t{1} << max_log2) / big.pipe) / 1e9);
      print_plot();
    }
    if (lg != 24 && !top) continue;
    for (int dist = 1; dist < 5; ++dist) run_case<std::uint32_t, false>(b, "u32", n, dist, false, f);
    // The other types: uniform, few-distinct and Zipf at 2^24, uniform only at the largest size
    // (each case there allocates and faults in several GiB: the default run stays < 90 s).
    for (int dist : {0, 3, 4}) {
      if (top && dist != 0) continue;
      run_case<std::uint64_t, false>(b, "u64", n >> (top ? 1 : 0), dist, false, f);
      run_case<float, false>(b, "f32", n, dist, false, f);
      run_case<std::uint32_t, true>(b, "u32/u32", n >> (top ? 1 : 0), dist, false, f);
    }
  }
  return b.finish();
}
