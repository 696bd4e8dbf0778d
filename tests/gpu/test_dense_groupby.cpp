// GPU group-by, dense-range path (groupby/hash/dense_plan.hpp): every aggregate of every
// value type against the CPU engine for ranges around one block's slots and the partition size,
// keys at the top of u32/u64, negative keys, one key, a hot key holding 90% (regions overflow and
// the pass runs again into exact ones), odd sizes, the empty input; and wide or sparse ranges
// (also one that only the full min/max pass sees) still taking the hash table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "gpu/engine_groupby.hpp"
#include "gpu/same_rows.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/mapreduce.hpp"
#include "test_util.hpp"

using namespace tandem;
using tandem::test::expect_same_rows;

namespace {
bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

template <class K>
constexpr DType dtype() {
  if constexpr (std::is_same_v<K, std::uint32_t>) return DType::u32;
  else if constexpr (std::is_same_v<K, std::uint64_t>) return DType::u64;
  else if constexpr (std::is_same_v<K, std::int32_t>) return DType::i32;
  else return DType::i64;
}

engine_test::Options gpu_opts() {
  engine_test::Options o;
  o.device = Device::gpu;
  o.mode = engine_test::Options::Mode::hash;
  return o;
}

// n keys base + (a hash of i) % range, the first base and the last base + range - 1.
template <class K>
std::vector<K> uniform_keys(std::size_t n, K base, std::uint64_t range, std::uint64_t seed) {
  std::vector<K> k(n);
  for (std::size_t i = 0; i < n; ++i) k[i] = static_cast<K>(base + static_cast<K>(mix64(i + seed) % range));
  if (n) k[0] = base;
  if (n > 1) k[n - 1] = static_cast<K>(base + static_cast<K>(range - 1));
  return k;
}

// GPU against the CPU engine for these keys and values (nullptr: counts); `dense`: the path the
// GPU must have taken.
template <class K>
engine_test::GroupBy check(const std::vector<K>& keys, DType vt, const void* vals, const std::string& what,
                           bool dense = true) {
  const bool has = vals != nullptr;
  auto o = gpu_opts();
  auto g = engine_test::groupby(dtype<K>(), keys.data(), keys.size(), vt, vals, has ? keys.size() : 0, has, o);
  o.device = Device::cpu;
  const auto c = engine_test::groupby(dtype<K>(), keys.data(), keys.size(), vt, vals, has ? keys.size() : 0, has, o);
  expect_same_rows(g, c, what);
  EXPECT_EQ(g.gpu.engine, "hash") << what;
  EXPECT_EQ(g.gpu.dense, dense) << what << " (" << g.gpu.dense_note << ")";
  return g;
}

// Counts and every value type (test::mixed_values: f64 with -0.0 and NaN, f32, negative i64 and i32).
template <class K>
void check_every_aggregate(const std::vector<K>& keys, const std::string& what, bool dense = true) {
  const auto [f64, f32, i64, i32] = test::mixed_values(keys.size());
  check(keys, DType::f64, nullptr, what + " counts", dense);
  check(keys, DType::f64, f64.data(), what + " f64", dense);
  check(keys, DType::f32, f32.data(), what + " f32", dense);
  check(keys, DType::i64, i64.data(), what + " i64", dense);
  check(keys, DType::i32, i32.data(), what + " i32", dense);
}

// Slots of one block: u32 counts, and the 32-byte aggregates of values.
constexpr std::uint64_t kCountSlots = 1u << 14, kAggSlots = 1u << 11;
}  // namespace

TEST(GpuDenseGroupBy, RangesAroundOneBlockAndThePartitionSize) {
  TANDEM_REQUIRE_GPU();
  for (std::uint64_t R :
       {std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{37}, kAggSlots - 1, kAggSlots, kAggSlots + 1, kCountSlots - 1,
        kCountSlots, kCountSlots + 1, 2 * kCountSlots, 2 * kCountSlots + 1, 5 * kCountSlots + 7}) {
    const std::size_t n = std::max<std::size_t>(3 * R, 5000) + 3;
    const auto keys = uniform_keys<std::uint32_t>(n, 1000, R, R);
    const std::string what = "R=" + std::to_string(R);
    check_every_aggregate(keys, what);
    const auto g = check(keys, DType::f64, nullptr, what + " counts");
    EXPECT_EQ(g.gpu.key_range, R) << what;
    EXPECT_EQ(g.gpu.partitions, R <= kCountSlots ? 0u : (R + kCountSlots - 1) / kCountSlots) << what;
    EXPECT_EQ(g.gpu.retries, 0u) << what << ": evenly spread keys fit the speculative regions";
  }
}

TEST(GpuDenseGroupBy, KeysAtTheTopOfU32AndU64) {
  TANDEM_REQUIRE_GPU();
  const std::uint32_t top32 = std::numeric_limits<std::uint32_t>::max();
  const std::uint64_t top64 = std::numeric_limits<std::uint64_t>::max();
  for (std::uint64_t R : {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{40000}}) {
    const std::size_t n = std::max<std::size_t>(2 * R, 3001);
    check_every_aggregate(uniform_keys<std::uint32_t>(n, top32 - std::uint32_t(R - 1), R, 3),
                          "u32 top R=" + std::to_string(R));
    check_every_aggregate(uniform_keys<std::uint64_t>(n, top64 - (R - 1), R, 5), "u64 top R=" + std::to_string(R));
  }
  // min far from 0 in the middle of u64
  check_every_aggregate(uniform_keys<std::uint64_t>(200001, (std::uint64_t{1} << 63) + 12345, 50000, 7), "u64 2^63");
}

TEST(GpuDenseGroupBy, NegativeKeysAndValues) {
  TANDEM_REQUIRE_GPU();
  check_every_aggregate(uniform_keys<std::int32_t>(30001, -3000, 3000, 1), "i32 [-3000, -1]");
  check_every_aggregate(uniform_keys<std::int32_t>(60001, std::numeric_limits<std::int32_t>::min(), 20000, 2),
                        "i32 from INT32_MIN");
  check_every_aggregate(uniform_keys<std::int64_t>(300001, -70000, 70000, 3), "i64 [-70000, -1]");
  // across zero the bit patterns span 2^32 (2^64): the hash table
  check_every_aggregate(uniform_keys<std::int32_t>(30001, -5, 11, 4), "i32 [-5, 5]", false);
  check_every_aggregate(uniform_keys<std::int64_t>(30001, -5, 11, 5), "i64 [-5, 5]", false);
}

TEST(GpuDenseGroupBy, OneKeyAndOneHotKeyHoldingNinetyPercent) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 100003 : 2000003;
  check_every_aggregate(std::vector<std::uint32_t>(n, 42u), "u32 one key");
  check_every_aggregate(std::vector<std::uint64_t>(n, std::numeric_limits<std::uint64_t>::max()), "u64 all-ones");
  // 90% on one key, the rest over 2^18 (2^16) keys: its partition overflows the even regions, the pass
  // runs again into regions of the exact sizes
  // (a range no wider than the records: the dense path's rule)
  auto skew = uniform_keys<std::uint32_t>(n, 5000, std::uint64_t{1} << (sanitizer() ? 16 : 18), 9);
  for (std::size_t i = 0; i < n; ++i)
    if (mix64(i + 99) % 10 != 0) skew[i] = 5000 + 77777;
  check_every_aggregate(skew, "hot key 90%");
  const auto g = check(skew, DType::f64, nullptr, "hot key 90% counts");
  EXPECT_GT(g.gpu.partitions, 1u);
  EXPECT_EQ(g.gpu.retries, 1u) << "the even regions should have overflowed";
  // Zipf over the range: uneven, many partitions overflow
  const auto ranks = mapreduce::zipf_ranks(n, 100000, 1.2, 4);
  std::vector<std::uint64_t> zipf(n);
  for (std::size_t i = 0; i < n; ++i) zipf[i] = (std::uint64_t{1} << 40) + ranks[i];
  zipf[0] = std::uint64_t{1} << 40;
  zipf[1] = (std::uint64_t{1} << 40) + 99999;
  check_every_aggregate(zipf, "u64 zipf 1.2 over 100000");
}

TEST(GpuDenseGroupBy, OddSizesAndTheEmptyInput) {
  TANDEM_REQUIRE_GPU();
  for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{8}, std::size_t{9},
                        std::size_t{4095}, std::size_t{8191}, std::size_t{8192}, std::size_t{8193}, std::size_t{12347},
                        std::size_t{40961}}) {
    const std::uint64_t R = std::min<std::uint64_t>(n, 20000);  // from n = 16385 on: 2 partitions
    check_every_aggregate(uniform_keys<std::uint32_t>(n, 123, R, n), "n=" + std::to_string(n));
    check_every_aggregate(uniform_keys<std::uint64_t>(n, 1ull << 33, R, n), "u64 n=" + std::to_string(n));
  }
  std::vector<std::uint32_t> none;
  auto g = engine_test::groupby(DType::u32, none.data(), 0, DType::f64, nullptr, 0, false, gpu_opts());
  EXPECT_TRUE(g.rows.empty());
}

TEST(GpuDenseGroupBy, WideOrSparseRangesTakeTheHashTable) {
  TANDEM_REQUIRE_GPU();
  // scattered over all of u32; large enough that the sampled range rules it out
  const std::size_t big = sanitizer() ? (std::size_t{1} << 20) + 1 : std::size_t{1} << 22;
  auto g = check(mapreduce::zipf_keys_u32(big, 1000, 1.0, 3), DType::f64, nullptr, "scattered u32", false);
  EXPECT_NE(g.gpu.dense_note.find("sample"), std::string::npos) << g.gpu.dense_note;
  // a range wider than the records
  g = check(uniform_keys<std::uint32_t>(100001, 0, 300000, 1), DType::f64, nullptr, "sparse", false);
  EXPECT_NE(g.gpu.dense_note.find("wider than"), std::string::npos) << g.gpu.dense_note;
  // more than 1024 partitions of slots
  g = check(uniform_keys<std::uint64_t>(big, 0, (std::uint64_t{1} << 24) + 1, 1), DType::f64, nullptr, "2^24 + 1",
            false);
  // 0 and the all-ones key: the range is 2^64
  std::vector<std::uint64_t> full(5001);
  for (std::size_t i = 0; i < full.size(); ++i) full[i] = mix64(i) % 1000;
  full[7] = std::numeric_limits<std::uint64_t>::max();
  g = check(full, DType::f64, nullptr, "0 .. 2^64 - 1", false);
  EXPECT_NE(g.gpu.dense_note.find("2^64"), std::string::npos) << g.gpu.dense_note;
  // an outlier the spread sample misses: the full min/max pass sees it
  auto outlier = uniform_keys<std::uint32_t>(big, 0, 1000, 2);
  outlier[1] = 1u << 30;
  g = check(outlier, DType::f64, nullptr, "outlier", false);
  EXPECT_NE(g.gpu.dense_note.find("partitions"), std::string::npos) << g.gpu.dense_note;
  // switched off
  auto o = gpu_opts();
  o.dense_range = false;
  const auto keys = uniform_keys<std::uint32_t>(10001, 0, 100, 1);
  g = engine_test::groupby(DType::u32, keys.data(), keys.size(), DType::f64, nullptr, 0, false, o);
  EXPECT_FALSE(g.gpu.dense);
  EXPECT_EQ(g.gpu.dense_note, "off");
}

// The benchmark shape (2^27 int32 keys over [0, 2^20) on the device box; smaller here):
// 64 partitions of 2^14 count slots, every stage reported.
TEST(GpuDenseGroupBy, UniformKeysOverTwoToTheTwentyReportTheirStages) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? std::size_t{1} << 21 : std::size_t{1} << 25;
  const auto keys = uniform_keys<std::int32_t>(n, 0, 1u << 20, 8);
  auto o = gpu_opts();
  const auto g = engine_test::groupby(DType::i32, keys.data(), n, DType::f64, nullptr, 0, false, o);
  o.device = Device::cpu;
  const auto c = engine_test::groupby(DType::i32, keys.data(), n, DType::f64, nullptr, 0, false, o);
  expect_same_rows(g, c, "2^20 uniform");
  EXPECT_TRUE(g.gpu.dense);
  EXPECT_EQ(g.gpu.partitions, 64u);
  EXPECT_EQ(g.gpu.retries, 0u);
  for (const char* stage :
       {"GPU dense range (min/max)", "GPU dense partition pass", "GPU dense reduce", "GPU dense emit"}) {
    const bool found =
        std::any_of(g.report.stages.begin(), g.report.stages.end(), [&](const Stage& s) { return s.name == stage; });
    EXPECT_TRUE(found) << stage;
  }
}
