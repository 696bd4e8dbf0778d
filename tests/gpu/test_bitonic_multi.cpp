// The multi-device bitonic driver against std::sort. On one GPU the device list {0, 0} gives two
// shares on GPU 0 (own streams and buffers), so the driver's scatter/gather paths run on every
// single-GPU machine; with two GPUs {0, 1} runs too (peer or staged copies). Small sizes under
// compute-sanitizer (TANDEM_SANITIZER=1). (Policies x min_interior_run x k on these lists: in
// test_bitonic.cpp, HybridPlansMatchStdSort.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/sort/bitonic.hpp"
#include "test_util.hpp"

using namespace tandem;

namespace {

bool sanitizer() {
  const char* s = std::getenv("TANDEM_SANITIZER");
  return s && std::string(s) == "1";
}

std::vector<std::vector<int>> device_lists() {
  std::vector<std::vector<int>> l{{0, 0}};
  if (gpu_count() >= 2) l.push_back({0, 1});
  return l;
}

template <class K>
std::vector<K> make_keys(std::size_t n, std::mt19937_64& rng) {
  std::vector<K> v(n);
  for (auto& x : v) {
    const std::uint64_t r = rng();
    if constexpr (std::is_floating_point_v<K>) x = K(std::int64_t(r % 2001) - 1000) / K(8);
    else x = static_cast<K>(r % 4 == 0 ? r % 16 : r);  // duplicates mixed in
  }
  if constexpr (std::is_floating_point_v<K>) {
    if (n >= 4) {
      v[0] = std::numeric_limits<K>::quiet_NaN();
      v[1] = -K(0);
      v[2] = K(0);
      v[3] = -std::numeric_limits<K>::quiet_NaN();
    }
  }
  return v;
}

// Sorts through the multi-device driver and checks against std::stable_sort; the report must
// show the multi-device executor ran (it records its GPU-to-GPU copies).
template <class K>
void expect_multi_sorts(std::vector<K> v, const SortOptions& o, const std::vector<int>& gpus) {
  auto want = v;
  std::stable_sort(want.begin(), want.end(), [&](K a, K b) { return o.descending ? key_less(b, a) : key_less(a, b); });
  const Report r = bitonic::sort(std::span<K>(v), o, gpus);
  for (std::size_t i = 0; i < v.size(); ++i)
    ASSERT_EQ(to_ordered(v[i]), to_ordered(want[i])) << "at " << i << "\n" << r.explain();
  if (v.size() >= 2) {
    EXPECT_TRUE(r.details().contains("gpu_copies")) << r.explain();
  }
}

template <class K, class V>
void expect_multi_pairs_stable(const std::vector<K>& k, const SortOptions& o, const std::vector<int>& gpus) {
  std::vector<V> v(k.size());
  std::iota(v.begin(), v.end(), V{0});
  std::vector<V> idx = v;
  std::stable_sort(idx.begin(), idx.end(),
                   [&](V a, V b) { return o.descending ? key_less(k[b], k[a]) : key_less(k[a], k[b]); });
  auto kk = k;
  bitonic::sort_pairs(std::span<K>(kk), std::span<V>(v), o, gpus);
  ASSERT_EQ(v, idx);
}

}  // namespace

template <class K>
class GpuBitonicMulti : public ::testing::Test {};
using MultiKeyTypes = ::testing::Types<std::uint32_t, std::int32_t, std::uint64_t, std::int64_t, float, double>;
TYPED_TEST_SUITE(GpuBitonicMulti, MultiKeyTypes);

TYPED_TEST(GpuBitonicMulti, KeysAnyLengthBothDirections) {
  TANDEM_REQUIRE_GPU();
  using K = TypeParam;
  std::mt19937_64 rng(sizeof(K) * 7 + std::is_floating_point_v<K>);
  const std::vector<std::size_t> sizes = sanitizer() ? std::vector<std::size_t>{0, 1, 2, 3, 1000, 4099}
                                                     : std::vector<std::size_t>{0, 1, 3, 1000, 70001, 262144};
  for (const auto& gpus : device_lists())
    for (std::size_t n : sizes)
      for (bool desc : {false, true})
        for (double k : {0.05, 0.6}) {  // GPU gathers / the CPU gathers (each entry on GPU 0 has half its speed)
          SortOptions o;
          o.algorithm = SortAlgorithm::bitonic;
          o.device = Device::hybrid;
          o.descending = desc;
          o.bitonic.k = k;
          SCOPED_TRACE(::testing::Message()
                       << "gpus " << gpus.size() << " (" << gpus[1] << ") n=" << n << " desc=" << desc << " k=" << k);
          expect_multi_sorts(make_keys<K>(n, rng), o, gpus);
        }
}

TEST(GpuBitonicMultiPlan, PairsStableAndGpuOnly) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 3000 : 100003;
  std::mt19937_64 rng(5);
  for (const auto& gpus : device_lists())
    for (Device dv : {Device::hybrid, Device::gpu, Device::auto_})
      for (bool desc : {false, true}) {
        SortOptions o;
        o.algorithm = SortAlgorithm::bitonic;
        o.device = dv;
        o.descending = desc;
        if (dv == Device::hybrid) o.bitonic.k = 0.1;
        SCOPED_TRACE(::testing::Message() << "gpus[1]=" << gpus[1] << " device " << int(dv) << " desc " << desc);
        std::vector<std::int32_t> k32(n);
        for (auto& x : k32) x = std::int32_t(rng() % 50) - 25;
        expect_multi_pairs_stable<std::int32_t, std::uint32_t>(k32, o, gpus);  // u64 words
        std::vector<double> k64(n);
        for (auto& x : k64) x = double(rng() % 40) / 3;
        expect_multi_pairs_stable<double, std::uint64_t>(k64, o, gpus);  // u128 words
        std::vector<std::uint32_t> u(n);
        for (auto& x : u) x = std::uint32_t(rng());
        if (dv != Device::auto_) expect_multi_sorts(u, o, gpus);  // auto may pick one device: no multi check
      }
  // Three entries on one GPU.
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = Device::gpu;
  std::vector<std::uint64_t> u(n);
  for (auto& x : u) x = rng();
  expect_multi_sorts(u, o, {0, 0, 0});
}

TEST(GpuBitonicMultiPlan, BadGpuIndexIsAUsageError) {
  TANDEM_REQUIRE_GPU();
  std::vector<std::uint32_t> v(1000, 3);
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = Device::hybrid;
  EXPECT_THROW(bitonic::sort(std::span<std::uint32_t>(v), o, {0, gpu_count()}), UsageError);
  EXPECT_THROW(bitonic::sort(std::span<std::uint32_t>(v), o, {-1}), UsageError);
}
