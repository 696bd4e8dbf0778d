// GPU bitonic kernels and the hybrid driver against std::sort. Skipped without a GPU; small sizes
// under compute-sanitizer (TANDEM_SANITIZER=1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <type_traits>
#include <vector>

#include "kernels/sort/anchors.hpp"
#include "sort/bitonic/cpu_steps.hpp"
#include "sort/bitonic/gpu.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/sort/bitonic_plan.hpp"
#include "test_util.hpp"

using namespace tandem;
namespace bd = tandem::bitonic::detail;

namespace {

bool sanitizer() {
  const char* s = std::getenv("TANDEM_SANITIZER");
  return s && std::string(s) == "1";
}

int max_log2() { return sanitizer() ? 12 : 20; }

template <class U>
std::vector<U> random_words(std::size_t n, std::uint64_t seed, std::uint64_t mod = 0) {
  std::mt19937_64 rng(seed);
  std::vector<U> v(n);
  for (auto& x : v) {
    U w = U(rng());
    if constexpr (sizeof(U) > 8) w = (w << 64) | U(rng());
    x = mod ? U(w % mod) : w;
  }
  return v;
}

template <class U>
void check_gpu_sort(std::size_t n, const bd::GpuConfig& cfg, bool naive = false, std::uint64_t mod = 0) {
  auto h = random_words<U>(n, n * 31 + cfg.elems + cfg.block, mod);
  auto want = h;
  std::sort(want.begin(), want.end());
  gpu::DeviceBuffer<U> d(n);
  TANDEM_CUDA(cudaMemcpy(d.data(), h.data(), n * sizeof(U), cudaMemcpyHostToDevice));
  if (naive) {
    if constexpr (std::is_same_v<U, std::uint32_t>) bench::naive_bitonic_sort_u32(d.data(), n, nullptr);
    else FAIL() << "the naive anchor sorts u32 keys only";
  } else {
    bd::gpu_steps(d.data(), 0, n, 1, bitonic::step_count(bitonic::ceil_log2(n)), cfg, nullptr);
  }
  TANDEM_CUDA(cudaDeviceSynchronize());
  std::vector<U> got(n);
  TANDEM_CUDA(cudaMemcpy(got.data(), d.data(), n * sizeof(U), cudaMemcpyDeviceToHost));
  ASSERT_TRUE(got == want) << "n=" << n << " block=" << cfg.block << " elems=" << cfg.elems << " naive=" << naive;
}

template <class K>
void expect_sorted_like_std(std::vector<K> v, const SortOptions& o, const std::vector<int>& gpus = {}) {
  auto want = v;
  std::stable_sort(want.begin(), want.end(), [&](K a, K b) { return o.descending ? key_less(b, a) : key_less(a, b); });
  bitonic::sort(std::span<K>(v), o, gpus);
  for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(to_ordered(v[i]), to_ordered(want[i])) << "at " << i;
}

}  // namespace

TEST(GpuBitonic, KernelsSortEverySizeAndShape) {
  TANDEM_REQUIRE_GPU();
  for (int lg = 1; lg <= max_log2(); lg += (lg < 12 ? 1 : 4)) {
    const std::size_t n = std::size_t{1} << lg;
    for (int e : {2, 4, 8, 16})
      for (int block : {128, 512}) {
        bd::GpuConfig c;
        c.block = block;
        c.elems = e;
        check_gpu_sort<std::uint32_t>(n, c);
        check_gpu_sort<std::uint32_t>(n, c, false, 3);  // heavy duplicates
      }
    bd::GpuConfig c;
    c.block = 256;
    c.elems = 8;
    check_gpu_sort<std::uint64_t>(n, c);
    check_gpu_sort<bd::u128>(n, c);
    c.fuse = 2;
    check_gpu_sort<std::uint32_t>(n, c);
    c.sm_limit = 2;  // persistent-style loops over few blocks
    check_gpu_sort<std::uint32_t>(n, c);
    check_gpu_sort<std::uint32_t>(n, c, true);  // the naive anchor
  }
}

TEST(GpuBitonic, TunedConfigIsValidAndCached) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = std::size_t{1} << (sanitizer() ? 12 : 18);
  std::string report;
  const auto c = bd::gpu_config<std::uint32_t>(n, {}, TuneSignal::time, &report);
  EXPECT_GT(c.block, 0);
  EXPECT_GT(c.elems, 0);
  const auto again = bd::gpu_config<std::uint32_t>(n, {});
  EXPECT_EQ(again.block, c.block);
  EXPECT_EQ(again.elems, c.elems);
  check_gpu_sort<std::uint32_t>(n, c);
}

TEST(GpuBitonic, HybridPlansMatchStdSort) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 5000 : (std::size_t{1} << 18) + 77;
  std::mt19937_64 rng(3);
  std::vector<std::uint32_t> u(n);
  for (auto& x : u) x = std::uint32_t(rng() % 100000);
  // GPU 0 with the CPU (the two-device driver), then the multi-device driver: two shares on GPU 0
  // and, when present, GPUs 0 and 1.
  std::vector<std::vector<int>> lists{{}, {0, 0}};
  if (gpu_count() >= 2) lists.push_back({0, 1});
  for (const auto& gpus : lists)
    for (char pol : {'a', 'b', 'c'})
      for (int mir : {-1, 0, 3})
        for (double k : {0.02, 0.3, 0.6, 2.0}) {
          SortOptions o;
          o.algorithm = SortAlgorithm::bitonic;
          o.device = Device::hybrid;
          o.bitonic.policy = pol;
          o.bitonic.min_interior_run = mir;
          o.bitonic.k = k;
          SCOPED_TRACE(::testing::Message()
                       << gpus.size() << " GPU entries, policy " << pol << " mir " << mir << " k " << k);
          expect_sorted_like_std(u, o, gpus);
        }
}

TEST(GpuBitonic, HybridAllTypesPairsDescending) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 3000 : 100003;
  std::mt19937_64 rng(5);
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = Device::hybrid;
  o.bitonic.k = 0.6;
  std::vector<double> d(n);
  for (auto& x : d) x = double(std::int64_t(rng() % 2000) - 1000) / 7;
  d[0] = std::numeric_limits<double>::quiet_NaN();
  d[1] = -0.0;
  d[2] = 0.0;
  d[3] = -std::numeric_limits<double>::quiet_NaN();
  for (bool desc : {false, true}) {
    o.descending = desc;
    expect_sorted_like_std(d, o);
    std::vector<std::int64_t> i64(n);
    for (auto& x : i64) x = std::int64_t(rng());
    expect_sorted_like_std(i64, o);
    std::vector<float> f(n);
    for (auto& x : f) x = float(std::int64_t(rng() % 100) - 50);
    expect_sorted_like_std(f, o);
    // Pairs: stable, 32-bit keys (u64 words) and 64-bit keys (u128 words).
    std::vector<std::int32_t> k32(n);
    for (auto& x : k32) x = std::int32_t(rng() % 50) - 25;
    std::vector<std::uint32_t> v32(n);
    std::iota(v32.begin(), v32.end(), 0u);
    auto kk = k32;
    bitonic::sort_pairs(std::span<std::int32_t>(kk), std::span<std::uint32_t>(v32), o);
    std::vector<std::uint32_t> idx(n);
    std::iota(idx.begin(), idx.end(), 0u);
    std::stable_sort(idx.begin(), idx.end(), [&](auto a, auto b) { return desc ? k32[b] < k32[a] : k32[a] < k32[b]; });
    ASSERT_EQ(v32, idx);
    std::vector<std::uint64_t> k64(n), v64(n);
    for (auto& x : k64) x = rng() % 50;
    std::iota(v64.begin(), v64.end(), 0u);
    auto kk64 = k64;
    bitonic::sort_pairs(std::span<std::uint64_t>(kk64), std::span<std::uint64_t>(v64), o);
    std::vector<std::uint64_t> idx64(n);
    std::iota(idx64.begin(), idx64.end(), 0u);
    std::stable_sort(idx64.begin(), idx64.end(),
                     [&](auto a, auto b) { return desc ? k64[b] < k64[a] : k64[a] < k64[b]; });
    ASSERT_EQ(v64, idx64);
  }
}

TEST(GpuBitonic, DevicesAndLimits) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 2049 : 300001;
  std::mt19937_64 rng(9);
  std::vector<std::uint32_t> u(n);
  for (auto& x : u) x = std::uint32_t(rng());
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  for (Device dv : {Device::gpu, Device::auto_, Device::hybrid}) {
    o.device = dv;
    expect_sorted_like_std(u, o);  // auto/hybrid: k measured and cached
  }
  o.device = Device::gpu;
  o.bitonic.gpu_sm_limit = 3;
  expect_sorted_like_std(u, o);
  // A GPU memory limit below the data: auto falls back to the CPU, gpu refuses.
  o.bitonic.gpu_sm_limit = 0;
  o.gpu_memory_limit = 1024;
  o.device = Device::auto_;
  expect_sorted_like_std(u, o);
  o.device = Device::gpu;
  std::vector<std::uint32_t> v = u;
  EXPECT_THROW(bitonic::sort(std::span<std::uint32_t>(v), o), UsageError);
  // Tiny inputs.
  o.gpu_memory_limit = 0;
  for (std::size_t m : {0, 1, 2, 3}) expect_sorted_like_std(std::vector<std::uint32_t>(u.begin(), u.begin() + m), o);
}
