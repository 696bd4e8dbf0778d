// CPU-only sort: tandem's parallel LSD radix sort (what tandem::sort runs without a GPU) against
// __gnu_parallel::sort at the same thread count, same data, results checked against each other.
//
// Floor: an LSD radix pass reads the keys twice (count, scatter) and writes them once; u32 keys
// with 8-bit digits take 4 passes (+1 counting read), so ~13 bytes moved per byte of keys; at the
// ~10 GB/s two cores stream that is ~85 ms for 2^24 u32, while __gnu_parallel::sort needs
// ~n·log2 n = 4·10^8 compares (~0.5-1 s on two cores).
//
//   bench_sort_cpu [--threads T] [--max-log2 K] [--quick]
#include <algorithm>
#include <cstdint>
#include <parallel/algorithm>
#include <random>
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

template <class K>
void keys_case(bench::Bench& b, std::size_t n, int threads, const char* tname, double& ratio_out) {
  const auto in = uniform<K>(n, n);
  std::vector<K> a(n), r(n);
  const auto less = [](K x, K y) { return key_less(x, y); };
  auto gnu = b.measure([&] {
    std::copy(in.begin(), in.end(), a.begin());
    Stopwatch w;
    __gnu_parallel::sort(a.begin(), a.end(), less, __gnu_parallel::default_parallel_tag(threads));
    return w.seconds();
  });
  auto rad = b.measure([&] {
    std::copy(in.begin(), in.end(), r.begin());
    Stopwatch w;
    detail::cpu_radix_sort(std::span<K>(r), std::span<detail::NoValue>{}, false, threads);
    return w.seconds();
  });
  const bool ok = std::equal(a.begin(), a.end(), r.begin(), [](K x, K y) { return to_ordered(x) == to_ordered(y); });
  const std::string c = fmt::format("{} 2^{}", tname, std::countr_zero(n));
  b.record(c, fmt::format("__gnu_parallel::sort {}t", threads), gnu, double(n), "keys", ok);
  b.record(c, fmt::format("tandem CPU radix {}t", threads), rad, double(n), "keys", ok);
  if (!ok) b.fail(c + ": radix result differs from __gnu_parallel::sort");
  ratio_out = gnu.median / rad.median;
}

void pairs_case(bench::Bench& b, std::size_t n, int threads, double& ratio_out) {
  const auto ik = uniform<std::uint32_t>(n, n + 1);
  struct P {
    std::uint32_t k, v;
  };
  std::vector<P> a(n);
  std::vector<std::uint32_t> rk(n), rv(n);
  auto gnu = b.measure([&] {
    for (std::size_t i = 0; i < n; ++i) a[i] = {ik[i], std::uint32_t(i)};
    Stopwatch w;
    __gnu_parallel::stable_sort(
        a.begin(), a.end(), [](const P& x, const P& y) { return x.k < y.k; },
        __gnu_parallel::default_parallel_tag(threads));
    return w.seconds();
  });
  auto rad = b.measure([&] {
    std::copy(ik.begin(), ik.end(), rk.begin());
    for (std::size_t i = 0; i < n; ++i) rv[i] = std::uint32_t(i);
    Stopwatch w;
    detail::cpu_radix_sort(std::span<std::uint32_t>(rk), std::span<std::uint32_t>(rv), false, threads);
    return w.seconds();
  });
  bool ok = true;
  for (std::size_t i = 0; i < n && ok; ++i) ok = a[i].k == rk[i] && a[i].v == rv[i];
  const std::string c = fmt::format("u32/u32 pairs 2^{}", std::countr_zero(n));
  b.record(c, fmt::format("__gnu_parallel::stable_sort {}t", threads), gnu, double(n), "pairs", ok);
  b.record(c, fmt::format("tandem CPU radix {}t", threads), rad, double(n), "pairs", ok);
  if (!ok) b.fail(c + ": radix pairs differ from __gnu_parallel::stable_sort");
  ratio_out = gnu.median / rad.median;
}

}  // namespace

int main(int argc, char** argv) {
  bench::Bench b("sort_cpu", argc, argv);
  const int threads = int(b.get_int("--threads", default_threads()));
  const int max_log2 = int(b.get_int("--max-log2", b.quick() ? 18 : 24));
  const int min_log2 = std::min(max_log2, b.quick() ? 16 : 20);
  double worst = 1e30, r = 0;
  for (int lg = min_log2; lg <= max_log2; lg += 2) {
    const std::size_t n = std::size_t{1} << lg;
    keys_case<std::uint32_t>(b, n, threads, "u32", r);
    worst = std::min(worst, r);
    keys_case<std::uint64_t>(b, n, threads, "u64", r);
    worst = std::min(worst, r);
    keys_case<float>(b, n, threads, "f32", r);
    worst = std::min(worst, r);
    pairs_case(b, n, threads, r);
    worst = std::min(worst, r);
    if (lg == max_log2) b.info(fmt::format("CPU radix / __gnu_parallel u32/u32 pairs at 2^{}", lg), r, "x");
  }
  b.goal(
      fmt::format("CPU radix vs __gnu_parallel::sort, {} threads, worst case 2^{}..2^{}", threads, min_log2, max_log2),
      worst, 1.0);
  return b.finish();
}
