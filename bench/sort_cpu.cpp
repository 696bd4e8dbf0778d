// CPU-only sort: tandem's parallel radix sort (what tandem::sort runs without a GPU) against
// __gnu_parallel::sort (keys) and __gnu_parallel::stable_sort (pairs) at the same thread count,
// and against a naive OpenMP LSD radix sort (the anchor ../shared/anchors/naive_radix.cpp, made
// generic over u32/u64), same data, results checked against each other.
//
// Floor: tandem's radix sort moves ~4 bytes per byte of keys through memory (one parallel MSD
// pass: a read to count, a read + a write to scatter, the write's read-for-ownership) and sorts
// the buckets in cache; the naive LSD anchor moves ~4 bytes per byte per 8-bit digit (4 digits
// for u32, 8 for u64). At the ~10 GB/s two cores stream here 2^24 u32 (64 MiB) is ~25 ms of
// traffic for tandem, ~100 ms for the anchor; __gnu_parallel::sort needs ~n·log2 n = 4·10^8
// compares (~0.5-1 s on two cores).
//
//   bench_sort_cpu [--threads T] [--min-log2 K] [--max-log2 K] [--step S]
//                  [--types u32,u64,f32,f64,u32/u32,u64/u64] [--quick]
// Sizes 2^min..2^max every S (default 2^20..2^24 every 2; --quick 2^16..2^18). The goals
// (16 threads): every case >= 3x __gnu_parallel, u32 >= 1.3x the naive LSD anchor; the full run is
//   bench_sort_cpu --threads 16 --min-log2 20 --max-log2 28 --step 2 --reps 5
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <parallel/algorithm>
#include <random>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "harness.hpp"
#include "sort/cpu_radix.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

using namespace tandem;

namespace {

template <class K>
std::vector<K> uniform(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<K> v(n);
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<K>)
      x = static_cast<K>(std::uniform_real_distribution<double>(-1e6, 1e6)(rng));
    else x = static_cast<K>(rng());
  }
  return v;
}

// The anchor's algorithm (naive_radix.cpp) for any unsigned U: per 8-bit digit, per-thread
// counts, a serial prefix, a scatter; the result is back in a (an even number of passes).
template <class U>
void naive_lsd_radix(U* a, U* b, std::size_t n, int T) {
  std::vector<std::size_t> h(static_cast<std::size_t>(T) * 256);
  for (int s = 0; s < int(sizeof(U)) * 8; s += 8) {
#pragma omp parallel num_threads(T)
    {
      const int t = omp_get_thread_num();
      const std::size_t lo = n * t / T, hi = n * (t + 1) / T;
      std::size_t* c = &h[static_cast<std::size_t>(t) * 256];
      std::memset(c, 0, 256 * sizeof(std::size_t));
      for (std::size_t i = lo; i < hi; i++) c[a[i] >> s & 255]++;
#pragma omp barrier
#pragma omp single
      {
        std::size_t o = 0;
        for (int d = 0; d < 256; d++)
          for (int u = 0; u < T; u++) {
            const std::size_t x = h[static_cast<std::size_t>(u) * 256 + d];
            h[static_cast<std::size_t>(u) * 256 + d] = o;
            o += x;
          }
      }
      for (std::size_t i = lo; i < hi; i++) {
        const U v = a[i];
        b[c[v >> s & 255]++] = v;
      }
    }
    std::swap(a, b);
  }
}

struct Ratios {
  double worst_gnu{1e30};    // tandem over __gnu_parallel, every case
  double worst_naive{1e30};  // tandem over the naive LSD anchor, u32
};

template <class K>
void keys_case(bench::Bench& b, std::size_t n, int threads, const char* tname, Ratios& r) {
  const auto in = uniform<K>(n, n);
  std::vector<K> a(n), t(n);
  const auto less = [](K x, K y) { return key_less(x, y); };
  auto gnu = b.measure([&] {
    std::copy(in.begin(), in.end(), a.begin());
    Stopwatch w;
    __gnu_parallel::sort(a.begin(), a.end(), less, __gnu_parallel::default_parallel_tag(threads));
    return w.seconds();
  });
  auto rad = b.measure([&] {
    std::copy(in.begin(), in.end(), t.begin());
    Stopwatch w;
    detail::cpu_radix_sort(std::span<K>(t), std::span<detail::NoValue>{}, false, threads);
    return w.seconds();
  });
  const auto same = [](K x, K y) { return to_ordered(x) == to_ordered(y); };
  const bool ok = std::equal(a.begin(), a.end(), t.begin(), same);
  const std::string c = fmt::format("{} 2^{}", tname, std::countr_zero(n));
  b.record(c, fmt::format("__gnu_parallel::sort {}t", threads), gnu, double(n), "keys", ok);
  b.record(c, fmt::format("tandem CPU radix {}t", threads), rad, double(n), "keys", ok);
  if (!ok) b.fail(c + ": radix result differs from __gnu_parallel::sort");
  r.worst_gnu = std::min(r.worst_gnu, gnu.median / rad.median);
  b.info(fmt::format("CPU radix / __gnu_parallel {}", c), gnu.median / rad.median, "x");
  if constexpr (std::is_unsigned_v<K>) {  // the anchor sorts unsigned integers
    std::vector<K> scratch(n);            // allocated outside the timing, as the anchor does
    auto naive = b.measure([&] {
      std::copy(in.begin(), in.end(), a.begin());
      Stopwatch w;
      naive_lsd_radix(a.data(), scratch.data(), n, threads);
      return w.seconds();
    });
    const bool nok = std::equal(a.begin(), a.end(), t.begin(), same);
    b.record(c, fmt::format("naive OpenMP LSD radix {}t", threads), naive, double(n), "keys", nok);
    if (!nok) b.fail(c + ": naive LSD radix result differs from tandem's");
    b.info(fmt::format("CPU radix / naive LSD radix {}", c), naive.median / rad.median, "x");
    if (sizeof(K) == 4) r.worst_naive = std::min(r.worst_naive, naive.median / rad.median);
  }
}

// Stable pairs: the value is the input position, so stability is checked too.
template <class K>
void pairs_case(bench::Bench& b, std::size_t n, int threads, const char* tname, Ratios& r) {
  const auto ik = uniform<K>(n, n + 1);
  struct P {
    K k, v;
  };
  std::vector<P> a(n);
  std::vector<K> rk(n), rv(n);
  auto gnu = b.measure([&] {
    for (std::size_t i = 0; i < n; ++i) a[i] = {ik[i], K(i)};
    Stopwatch w;
    __gnu_parallel::stable_sort(
        a.begin(), a.end(), [](const P& x, const P& y) { return x.k < y.k; },
        __gnu_parallel::default_parallel_tag(threads));
    return w.seconds();
  });
  auto rad = b.measure([&] {
    std::copy(ik.begin(), ik.end(), rk.begin());
    for (std::size_t i = 0; i < n; ++i) rv[i] = K(i);
    Stopwatch w;
    detail::cpu_radix_sort(std::span<K>(rk), std::span<K>(rv), false, threads);
    return w.seconds();
  });
  bool ok = true;
  for (std::size_t i = 0; i < n && ok; ++i) ok = a[i].k == rk[i] && a[i].v == rv[i];
  const std::string c = fmt::format("{} pairs 2^{}", tname, std::countr_zero(n));
  b.record(c, fmt::format("__gnu_parallel::stable_sort {}t", threads), gnu, double(n), "pairs", ok);
  b.record(c, fmt::format("tandem CPU radix {}t", threads), rad, double(n), "pairs", ok);
  if (!ok) b.fail(c + ": radix pairs differ from __gnu_parallel::stable_sort");
  r.worst_gnu = std::min(r.worst_gnu, gnu.median / rad.median);
  b.info(fmt::format("CPU radix / __gnu_parallel {}", c), gnu.median / rad.median, "x");
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("sort_cpu", argc, argv);
  const int threads = int(b.get_int("--threads", default_threads()));
  const int max_log2 = int(b.get_int("--max-log2", b.quick() ? 18 : 24));
  const int min_log2 = std::min(max_log2, int(b.get_int("--min-log2", b.quick() ? 16 : 20)));
  const int step = std::max(1, int(b.get_int("--step", 2)));
  const auto types = split_list(b.get("--types", "u32,u64,f32,f64,u32/u32,u64/u64"));
  for (const auto& t : types)
    if (t != "u32" && t != "u64" && t != "f32" && t != "f64" && t != "u32/u32" && t != "u64/u64") {
      b.fail("--types: unknown type '" + t + "' (u32, u64, f32, f64, u32/u32, u64/u64)");
      return b.finish();
    }
  const auto wanted = [&](const char* t) { return std::find(types.begin(), types.end(), t) != types.end(); };
  Ratios r;
  for (int lg = min_log2; lg <= max_log2; lg += step) {
    const std::size_t n = std::size_t{1} << lg;
    if (wanted("u32")) keys_case<std::uint32_t>(b, n, threads, "u32", r);
    if (wanted("u64")) keys_case<std::uint64_t>(b, n, threads, "u64", r);
    if (wanted("f32")) keys_case<float>(b, n, threads, "f32", r);
    if (wanted("f64")) keys_case<double>(b, n, threads, "f64", r);
    if (wanted("u32/u32")) pairs_case<std::uint32_t>(b, n, threads, "u32/u32", r);
    if (wanted("u64/u64")) pairs_case<std::uint64_t>(b, n, threads, "u64/u64", r);
  }
  const std::string sizes = fmt::format("{} threads, 2^{}..2^{}", threads, min_log2, max_log2);
  if (r.worst_gnu < 1e30) b.goal(fmt::format("CPU radix vs __gnu_parallel, worst case, {}", sizes), r.worst_gnu, 3.0);
  if (r.worst_naive < 1e30)
    b.goal(fmt::format("CPU radix vs naive LSD radix, u32 worst, {}", sizes), r.worst_naive, 1.3);
  return b.finish();
}
