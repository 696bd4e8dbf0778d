// The CPU bitonic sort against std::sort: every key type, both directions, pairs (stable), edge
// sizes and awkward values; the engine run step range by step range the way the hybrid plan runs
// it, which checks the plan's independence marking on real data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "sort/bitonic/cpu_steps.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/sort/bitonic.hpp"
#include "tandem/sort/bitonic_plan.hpp"

using namespace tandem;

namespace {

template <class K>
std::vector<K> make_keys(std::size_t n, int pattern, std::mt19937_64& rng) {
  std::vector<K> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t x = rng();
    switch (pattern) {
      case 0: break;                               // uniform
      case 1: x %= 7; break;                       // many duplicates
      case 2: x = i; break;                        // sorted
      case 3: x = n - i; break;                    // reverse
      case 4: x = (x % 100 < 90) ? 42 : x; break;  // skewed: 90% one key
    }
    if constexpr (std::is_floating_point_v<K>) {
      v[i] = pattern == 0 ? K(std::ldexp(double(std::int64_t(x)), -40)) : K(std::int64_t(x % 1000) - 500);
    } else {
      v[i] = static_cast<K>(x);
    }
  }
  return v;
}

template <class K>
void expect_matches_std(std::vector<K> v, bool descending, Device dev = Device::cpu, int threads = 0) {
  auto want = v;
  std::stable_sort(want.begin(), want.end(), [&](K a, K b) { return descending ? key_less(b, a) : key_less(a, b); });
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = dev;
  o.descending = descending;
  o.threads = threads;
  bitonic::sort(std::span<K>(v), o);
  ASSERT_EQ(v.size(), want.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(to_ordered(v[i]), to_ordered(want[i])) << "at " << i << " of " << v.size();
}

template <class K, class V>
void expect_pairs_stable(std::vector<K> k, bool descending) {
  std::vector<V> v(k.size());
  std::iota(v.begin(), v.end(), V{0});
  std::vector<std::size_t> idx(k.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return descending ? key_less(k[b], k[a]) : key_less(k[a], k[b]);
  });
  SortOptions o;
  o.device = Device::cpu;
  o.descending = descending;
  auto kk = k;
  bitonic::sort_pairs(std::span<K>(kk), std::span<V>(v), o);
  for (std::size_t i = 0; i < k.size(); ++i) {
    ASSERT_EQ(v[i], V(idx[i])) << "at " << i;
    ASSERT_EQ(to_ordered(kk[i]), to_ordered(k[idx[i]])) << "at " << i;
  }
}

}  // namespace

template <class K>
class BitonicKeys : public ::testing::Test {};
using KeyTypes = ::testing::Types<std::uint32_t, std::int32_t, std::uint64_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(BitonicKeys, KeyTypes);

TYPED_TEST(BitonicKeys, MatchesStdSortOnEdgeSizesAndPatterns) {
  using K = TypeParam;
  std::mt19937_64 rng(7);
  for (std::size_t n : {0, 1, 2, 3, 5, 16, 17, 100, 1000, 1024, 4097, 20011})
    for (int pattern : {0, 1, 2, 3, 4})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " pattern=" << pattern << " desc=" << desc);
        expect_matches_std(make_keys<K>(n, pattern, rng), desc);
      }
}

TYPED_TEST(BitonicKeys, PairsAreStable) {
  using K = TypeParam;
  std::mt19937_64 rng(11);
  for (std::size_t n : {0, 1, 2, 9, 1000, 5003})
    for (bool desc : {false, true}) {
      expect_pairs_stable<K, std::uint32_t>(make_keys<K>(n, 1, rng), desc);
      expect_pairs_stable<K, std::uint64_t>(make_keys<K>(n, 4, rng), desc);
    }
}

TEST(Bitonic, OversubscribedThreadsAreTuned) {
  // More threads than physical cores: the thread count is tuned on a sample.
  std::mt19937_64 rng(21);
  auto keys = make_keys<std::uint32_t>(70001, 0, rng);
  auto want = keys;
  std::sort(want.begin(), want.end());
  SortOptions o;
  o.device = Device::cpu;
  o.threads = 4 * std::max(1, cpu_info().physical_cores);
  const Report r = bitonic::sort(std::span<std::uint32_t>(keys), o);
  EXPECT_EQ(keys, want);
  bool tuned = false;
  for (const auto& n : r.notes) tuned = tuned || n.find("physical cores") != std::string::npos;
  EXPECT_TRUE(tuned) << r.explain();
}

TEST(Bitonic, MultiThreadedLargeMatchesStd) {
  std::mt19937_64 rng(3);
  // Above the serial threshold and the fused block size: both the block and the stride paths run.
  expect_matches_std(make_keys<std::uint32_t>((1u << 17) + 123, 0, rng), false, Device::cpu, 2);
  expect_matches_std(make_keys<std::uint64_t>((1u << 16) + 5, 0, rng), true, Device::cpu, 2);
}

TEST(Bitonic, FloatTotalOrderWithNaNAndSignedZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v{3, -0.0f, nan, 0.0f, -nan, -1, 0.0f, -0.0f, inf, -inf, 1e-30f, nan, -nan};
  for (int rep = 0; rep < 5; ++rep) v.insert(v.end(), v.begin(), v.begin() + 13);
  expect_matches_std(v, false);
  expect_matches_std(v, true);
  std::vector<float> s = v;
  SortOptions o;
  o.device = Device::cpu;
  bitonic::sort(std::span<float>(s), o);
  EXPECT_TRUE(std::isnan(s.front()) && std::signbit(s.front()));  // -NaN first
  EXPECT_TRUE(std::isnan(s.back()) && !std::signbit(s.back()));   // +NaN last
  auto z = std::find_if(s.begin(), s.end(), [](float f) { return f == 0.0f; });
  ASSERT_NE(z, s.end());
  EXPECT_TRUE(std::signbit(*z));  // -0.0 before +0.0
}

TEST(Bitonic, ExtremeKeysAreNotConfusedWithPadding) {
  // All-ones words are the padding; real keys that map to them must still come out.
  std::vector<std::uint32_t> v{0xFFFFFFFFu, 1, 0xFFFFFFFFu, 0, 7};
  expect_matches_std(v, false);
  expect_matches_std(v, true);
  std::vector<std::int64_t> w{std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min(), 0};
  expect_matches_std(w, false);
  expect_matches_std(w, true);
  expect_pairs_stable<std::uint32_t, std::uint32_t>({0xFFFFFFFFu, 0xFFFFFFFFu, 3, 0xFFFFFFFFu, 3}, false);
  expect_pairs_stable<std::uint32_t, std::uint32_t>({0, 0, 3, 0, 3}, true);
}

TEST(Bitonic, PairsSizeMismatchIsAUsageError) {
  std::vector<std::uint32_t> k(3), v(2);
  EXPECT_THROW(bitonic::sort_pairs(std::span<std::uint32_t>(k), std::span<std::uint32_t>(v), SortOptions{}),
               UsageError);
}

TEST(Bitonic, NoGpuFallsBackOrRefuses) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is present";
  std::mt19937_64 rng(5);
  expect_matches_std(make_keys<std::uint32_t>(1000, 0, rng), false, Device::hybrid);
  expect_matches_std(make_keys<std::uint32_t>(1000, 0, rng), false, Device::auto_);
  std::vector<std::uint32_t> v(10, 1);
  SortOptions o;
  o.device = Device::gpu;
  EXPECT_THROW(bitonic::sort(std::span<std::uint32_t>(v), o), NoDeviceError);
}

TEST(BitonicEngine, ScalarAndSimdAgree) {
  std::mt19937_64 rng(9);
  for (std::size_t n : {std::size_t{1} << 10, std::size_t{1} << 15}) {
    std::vector<std::uint32_t> a(n);
    std::vector<std::uint64_t> b(n);
    for (auto& x : a) x = std::uint32_t(rng());
    for (auto& x : b) x = rng();
    auto a2 = a;
    auto b2 = b;
    bitonic::detail::cpu_sort(a.data(), n, 2);
    bitonic::detail::cpu_sort(b.data(), n, 2);
    const bool prev = bitonic::detail::cpu_force_scalar(true);
    EXPECT_EQ(bitonic::detail::cpu_simd(), "scalar");
    bitonic::detail::cpu_sort(a2.data(), n, 2);
    bitonic::detail::cpu_sort(b2.data(), n, 2);
    bitonic::detail::cpu_force_scalar(prev);
    EXPECT_EQ(a, a2);
    EXPECT_EQ(b, b2);
    EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
    EXPECT_TRUE(std::is_sorted(b.begin(), b.end()));
  }
}

// Runs a plan on the CPU alone, each concurrent step as separate calls on every share (as the
// devices would), gathered steps on the whole array: the result must be sorted. A wrong
// independence mark (a comparator crossing a share boundary) would leave it unsorted.
template <class U>
void run_plan_share_by_share(const bitonic::Plan& p, std::vector<U>& v) {
  for (const auto& r : p.runs()) {
    if (r.mode == bitonic::kConcurrent) {
      for (const auto& d : p.devices)
        if (d.count) bitonic::detail::cpu_steps(v.data(), d.offset, d.offset + d.count, r.first, r.last, 1);
    } else {
      bitonic::detail::cpu_steps(v.data(), 0, p.padded(), r.first, r.last, 1);
    }
  }
}

TEST(BitonicEngine, PlansExecutedShareByShareSort) {
  std::mt19937_64 rng(13);
  for (int log2n : {4, 7, 12})
    for (double k : {0.05, 0.3, 0.6, 1.0, 3.0})
      for (char policy : {'a', 'b', 'c'})
        for (int mir : {-1, 3}) {
          const bitonic::Plan p = bitonic::make_plan(std::uint64_t{1} << log2n, k, policy, mir);
          std::vector<std::uint32_t> v(p.padded());
          for (auto& x : v) x = std::uint32_t(rng() % 1000);
          run_plan_share_by_share(p, v);
          EXPECT_TRUE(std::is_sorted(v.begin(), v.end())) << "log2n=" << log2n << " k=" << k << " policy " << policy;
        }
  // Three devices too, including the shapes the multi-device driver gets for {0, 0} (two entries
  // with half a GPU each): a GPU gathers (weak CPU), or the CPU gathers holding no share (k = 0.6:
  // 0.6 > 0.5 per entry, and the two entries' rounded-up shares take the whole array).
  for (const std::vector<bitonic::DeviceShare>& devs :
       {std::vector<bitonic::DeviceShare>{{"cpu", 1, 0, 0}, {"gpu0", 3, 0, 0}, {"gpu1", 4, 0, 0}},
        std::vector<bitonic::DeviceShare>{{"cpu", 0.05, 0, 0}, {"gpu0", 0.5, 0, 0}, {"gpu1", 0.5, 0, 0}},
        std::vector<bitonic::DeviceShare>{{"cpu", 0.6, 0, 0}, {"gpu0", 0.5, 0, 0}, {"gpu1", 0.5, 0, 0}},
        std::vector<bitonic::DeviceShare>{{"cpu", 0, 0, 0}, {"gpu0", 1, 0, 0}, {"gpu1", 1, 0, 0}, {"gpu2", 1, 0, 0}}})
    for (char policy : {'a', 'b', 'c'})
      for (std::uint64_t n : {std::uint64_t{1} << 11, std::uint64_t{1000}}) {
        const bitonic::Plan p = bitonic::make_multi_plan(n, devs, policy);
        std::uint64_t total = 0;
        for (const auto& d : p.devices) total += d.count;
        EXPECT_EQ(total, p.padded());
        std::vector<std::uint64_t> v(p.padded());
        for (auto& x : v) x = rng();
        run_plan_share_by_share(p, v);
        EXPECT_TRUE(std::is_sorted(v.begin(), v.end()))
            << policy << " " << devs.size() << " devices, cpu " << devs[0].capability;
      }
  const bitonic::Plan cpu_gathers =
      bitonic::make_multi_plan(1 << 10, {{"cpu", 0.6, 0, 0}, {"gpu0", 0.5, 0, 0}, {"gpu1", 0.5, 0, 0}}, 'c');
  EXPECT_EQ(cpu_gathers.gather, 0);
  EXPECT_EQ(cpu_gathers.devices[0].count, 0u);
  EXPECT_GT(cpu_gathers.concurrent_steps(), 0);
}
