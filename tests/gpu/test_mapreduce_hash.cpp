// GPU group-by, hash path (open addressing, hot keys in a shared-memory table): counts against
// std::unordered_map and every aggregate against the CPU engine, with tiny tables that force the
// grow and retry paths, all-distinct keys, one key, the all-ones key (the table's empty marker),
// sizes that are not multiples of the 16-byte vector loads, and the tuned parameters.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpu/engine_groupby.hpp"
#include "gpu/same_rows.hpp"
#include "groupby/hash/bucket_table.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/mapreduce.hpp"
#include "test_util.hpp"

using namespace tandem;
using tandem::test::expect_same_rows;

namespace {
bool sanitizer() { return std::getenv("TANDEM_SANITIZER") != nullptr; }

template <class K>
void expect_counts(const engine_test::GroupBy& g, const std::vector<K>& keys, const std::string& what) {
  std::unordered_map<K, std::uint64_t> ref;
  for (auto x : keys) ++ref[x];
  ASSERT_EQ(g.rows.size(), ref.size()) << what;
  for (const auto& r : g.rows) {
    K k;
    std::memcpy(&k, &r.key_bits, sizeof(K));
    auto it = ref.find(k);
    ASSERT_NE(it, ref.end()) << what << " key " << r.key_bits;
    EXPECT_EQ(r.count, it->second) << what << " key " << r.key_bits;
  }
  EXPECT_EQ(g.gpu.engine, "hash") << what;
}

engine_test::Options hash_opts() {
  engine_test::Options o;
  o.device = Device::gpu;
  o.mode = engine_test::Options::Mode::hash;
  o.dense_range = false;  // the hash table's paths (test_dense_groupby.cpp tests the dense range)
  return o;
}

}  // namespace

TEST(GpuHashGroupBy, CountsZipfCardinalityHotOnOff) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 20001 : 1000003;  // not a multiple of 4
  for (double s : {0.0, 1.0, 1.5}) {
    for (std::uint64_t distinct : {std::uint64_t{1}, std::uint64_t{100}, std::uint64_t{5000}, std::uint64_t{200000}}) {
      auto keys = mapreduce::zipf_keys_u32(n, distinct, s, 3 + distinct);
      for (int variant = 0; variant < 3; ++variant) {
        const bool hot = variant < 2;
        auto o = hash_opts();
        o.hot_keys = hot;
        o.warp_match = variant == 0;  // lanes grouped by key, or the top-key ballots alone
        o.sample_fraction = 0.03;
        auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
        const std::string what =
            "s=" + std::to_string(s) + " d=" + std::to_string(distinct) + " variant=" + std::to_string(variant);
        if (variant == 1) {
          EXPECT_FALSE(g.gpu.warp_match) << what;
        }
        if (!sanitizer() && variant == 0 && s == 1.0 && distinct == 200000) {
          // ~11,000 sampled keys, more than the shared table takes: the hot keys are the top of a
          // larger set, so the warp's lanes are grouped by key
          EXPECT_LT(g.gpu.hot_keys, g.gpu.sampled_distinct) << what;
          EXPECT_TRUE(g.gpu.warp_match) << what;
        }
        if (hot && distinct <= 100) {
          EXPECT_FALSE(g.gpu.warp_match) << what << ": every key hot";
        }
        expect_counts(g, keys, what);
        EXPECT_EQ(g.gpu.shared_hits + g.gpu.global_hits, n) << what;
        if (!hot) {
          EXPECT_EQ(g.gpu.shared_hits, 0u) << what;
        }
        // low cardinality: every key is hot and nearly every pair stays in shared memory
        if (hot && distinct <= 100) {
          EXPECT_GT(g.gpu.shared_hits, n / 2) << what;
        }
      }
    }
  }
}

// Few distinct keys, all hot: the shared table is placed by two-choice hashing (two fixed slots
// per key). Keys that the sample never saw (they appear only after the sampled prefix) must still
// reach the global table, and the result must not depend on the placement.
TEST(GpuHashGroupBy, TwoChoiceTableForFewKeys) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 40009 : 2000003;
  for (std::uint64_t distinct : {std::uint64_t{1}, std::uint64_t{128}, std::uint64_t{1000}, std::uint64_t{5000}}) {
    auto keys = mapreduce::zipf_keys_u32(n, distinct, 0.0, 17 + distinct);
    for (std::size_t i = n - n / 20; i < n; ++i)
      keys[i] = 0x40000000u + static_cast<std::uint32_t>(i % 7919);  // unsampled
    keys[n / 3] = 0xffffffffu;                                       // the empty marker, once
    for (bool tc : {true, false}) {
      auto o = hash_opts();
      o.two_choice = tc;
      auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
      const std::string what = "d=" + std::to_string(distinct) + " two-choice=" + std::to_string(tc);
      expect_counts(g, keys, what);
      EXPECT_EQ(g.gpu.shared_hits + g.gpu.global_hits, n) << what;
      if (!tc || distinct > 1024) {
        EXPECT_FALSE(g.gpu.two_choice) << what;
      }
      if (tc && distinct <= 128) {
        EXPECT_TRUE(g.gpu.two_choice) << what;
        EXPECT_GT(g.gpu.shared_hits, n / 2) << what;
        EXPECT_GE(g.gpu.global_hits, n / 20) << what << ": the unsampled keys go to the global table";
      }
    }
    // u64 keys with sums: the same table, 8-byte keys
    std::vector<std::uint64_t> k64(keys.begin(), keys.end());
    for (auto& k : k64) k = k * 0x9E3779B97F4A7C15ull;
    std::vector<double> vals(n);
    for (std::size_t i = 0; i < n; ++i) vals[i] = double(i % 1000);
    auto o = hash_opts();
    auto g = engine_test::groupby(DType::u64, k64.data(), n, DType::f64, vals.data(), n, true, o);
    o.device = Device::cpu;
    auto c = engine_test::groupby(DType::u64, k64.data(), n, DType::f64, vals.data(), n, true, o);
    expect_same_rows(g, c, "u64 sums d=" + std::to_string(distinct));
  }
}

// Many cold keys: the tiles' cold keys are sorted into hash partitions and reduced partition by
// partition. Uniform and Zipf (hot keys on) u32, uniform u64, the tier switched off, and a job
// whose keys after the sample all fall into partition 0, so its region and its reduce table
// overflow and the rest must reach the global table.
TEST(GpuHashGroupBy, PartitionedColdTier) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 1600009 : 4000037;  // more than 2^20 cold records
  for (double s : {0.0, 1.0}) {
    auto keys = mapreduce::zipf_keys_u32(n, 300000, s, 41);
    for (bool on : {true, false}) {
      auto o = hash_opts();
      o.partition_cold = on;
      auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
      const std::string what =
          "s=" + std::to_string(s) + " partitions=" + std::to_string(on) + " (" + g.gpu.partition_note + ")";
      expect_counts(g, keys, what);
      EXPECT_EQ(g.gpu.shared_hits + g.gpu.global_hits, n) << what;
      if (on && (s == 0.0 || !sanitizer())) {  // the smaller Zipf input has too few cold records
        EXPECT_GT(g.gpu.partitions, 0u) << what;
        EXPECT_GT(g.gpu.partitioned, n / 4) << what;
      } else {
        EXPECT_EQ(g.gpu.partitions, 0u) << what;
        EXPECT_EQ(g.gpu.partitioned, 0u) << what;
      }
    }
  }
  {
    std::vector<std::uint64_t> k64(n);
    for (std::size_t i = 0; i < n; ++i) k64[i] = ((i * 2654435761u) % 250000) * 0x9E3779B97F4A7C15ull + 5;
    auto g = engine_test::groupby(DType::u64, k64.data(), n, DType::f64, nullptr, 0, false, hash_opts());
    EXPECT_GT(g.gpu.partitions, 0u) << g.gpu.partition_note;
    expect_counts(g, k64, "u64 uniform");
  }
  {
    // the sample (first 1%) sees 100,000 ordinary keys; afterwards every key hashes into
    // partition 0 (top 10 hash bits zero, for any partition count up to 1,024)
    std::vector<std::uint32_t> p0;
    for (std::uint32_t x = 1; p0.size() < 20000; ++x)
      if ((fmix32(x) >> 22) == 0) p0.push_back(x);  // the partition's hash
    std::vector<std::uint32_t> keys(n);
    const std::size_t head = n / 100 + 1;
    for (std::size_t i = 0; i < n; ++i)
      keys[i] = i < head ? 0x80000000u + std::uint32_t(i % 100000) : p0[(i * 7919) % p0.size()];
    auto o = hash_opts();
    o.sample_fraction = 0.01;
    o.hot_keys = false;
    auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    const std::string what = "one partition (" + g.gpu.partition_note + ")";
    ASSERT_GT(g.gpu.partitions, 0u) << what;
    EXPECT_GT(g.gpu.partition_direct, 0u) << what << ": the region and the reduce table overflow";
    expect_counts(g, keys, what);
  }
}

// Hot keys that are the top of a larger key set, or too many for the two-choice table: each block
// builds a bucketed two-choice table (two buckets of 4 slots per key) from the hot list. Counts
// with and without lanes grouped by key and the partitioned tier, against linear probing; sums on
// u64 keys (no packed slots); a hot table forced to thousands of keys; keys never sampled.
TEST(GpuHashGroupBy, BucketedHotTable) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 400009 : 3000017;
  for (double s : {1.0, 1.5, 0.0}) {
    const std::uint64_t distinct = s == 0.0 ? 3000 : 200000;  // uniform 3,000: every key hot, too many for two-choice
    auto keys = mapreduce::zipf_keys_u32(n, distinct, s, 77);
    for (std::size_t i = n - n / 50; i < n; ++i) keys[i] = 0x70000000u + std::uint32_t(i % 4099);  // unsampled keys
    for (int variant = 0; variant < 4; ++variant) {
      auto o = hash_opts();
      o.hot_buckets = variant != 3;
      o.warp_match = variant != 1;
      o.partition_cold = variant != 2;
      o.hot_fraction = 0.5;  // as many hot keys as the table takes
      o.two_choice = false;  // the few-key table would take a small sample's keys
      auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
      const std::string what = "s=" + std::to_string(s) + " variant=" + std::to_string(variant);
      expect_counts(g, keys, what);
      EXPECT_EQ(g.gpu.shared_hits + g.gpu.global_hits, n) << what;
      EXPECT_GT(g.gpu.hot_keys, sanitizer() ? 100u : 500u) << what;
      EXPECT_EQ(g.gpu.hot_buckets, variant != 3) << what;
      EXPECT_FALSE(g.gpu.two_choice) << what;
      EXPECT_GT(g.gpu.shared_hits, n / 3) << what;
      EXPECT_GE(g.gpu.global_hits, n / 50) << what << ": the unsampled keys reach the global table";
    }
  }
  {
    // a hot table of 20,000 keys over 100,000 Zipf keys: 25,000 buckets' worth built per block
    auto keys = mapreduce::zipf_keys_u32(n, 100000, 0.8, 78);
    auto o = hash_opts();
    o.sample_fraction = 0.2;
    o.hot_fraction = 0.5;
    o.shared_entries = 20000;
    auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    EXPECT_TRUE(g.gpu.hot_buckets);
    EXPECT_GE(g.gpu.hot_keys, sanitizer() ? 10000u : 20000u);
    EXPECT_EQ(g.gpu.shared_entries,
              hash_groupby::buckets::kWays * hash_groupby::buckets::buckets_for(std::uint32_t(g.gpu.hot_keys)));
    expect_counts(g, keys, "20,000 hot keys");
  }
  {
    // u64 keys with sums: 8-byte keys in buckets of 32 bytes, aggregates that are not packed
    auto k32 = mapreduce::zipf_keys_u32(n, 200000, 1.0, 79);
    std::vector<std::uint64_t> k64(n);
    std::vector<double> vals(n);
    for (std::size_t i = 0; i < n; ++i) {
      k64[i] = std::uint64_t(k32[i]) * 0x9E3779B97F4A7C15ull + 3;
      vals[i] = double(i % 977) - 400.5;
    }
    auto o = hash_opts();
    auto g = engine_test::groupby(DType::u64, k64.data(), n, DType::f64, vals.data(), n, true, o);
    EXPECT_TRUE(g.gpu.hot_buckets);
    o.device = Device::cpu;
    auto c = engine_test::groupby(DType::u64, k64.data(), n, DType::f64, vals.data(), n, true, o);
    expect_same_rows(g, c, "u64 sums, bucketed hot table");
  }
}

TEST(GpuHashGroupBy, SmallSizesAndOffsets) {
  TANDEM_REQUIRE_GPU();
  // sizes around the vector width and the sampling threshold (4096 records)
  for (std::size_t n :
       {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{7}, std::size_t{4095},
        std::size_t{4097}, std::size_t{8191}, std::size_t{12347}, std::size_t{400009}, std::size_t{400011}}) {
    auto keys = mapreduce::zipf_keys_u32(n, 37, 0.7, n);
    auto o = hash_opts();
    o.sample_fraction = 0.013;  // the main pass then starts at an unaligned record
    auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    expect_counts(g, keys, "n=" + std::to_string(n));
  }
}

TEST(GpuHashGroupBy, TinyTableGrowsAndOverflowRetries) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 6001 : 200003;
  auto keys = mapreduce::zipf_keys_u32(n, 20000, 0.8, 11);
  {
    auto o = hash_opts();
    o.result_entries = 64;       // far too small: inserts overflow, the table is grown after the pass
    o.spill_entries = 1u << 20;  // the overflow list holds them all
    auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    expect_counts(g, keys, "grow");
    EXPECT_GT(g.gpu.result_grows, 0u);
    EXPECT_EQ(g.gpu.retries, 0u);
  }
  {
    auto o = hash_opts();
    o.result_entries = 16;
    o.spill_entries = 16;  // the overflow list fills too: the whole job reruns, larger
    o.shared_entries = 8;
    o.blocks = 3;
    o.block_threads = 64;
    auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
    expect_counts(g, keys, "retry");
    EXPECT_GT(g.gpu.retries, 0u);
  }
}

// Cold keys on crowded global tables: nearly full (long probes, home slots held by other keys,
// claims racing), too small (overflow, grow) and with every key cold, with lanes grouped by key or
// not; the counts must come out exact.
TEST(GpuHashGroupBy, ColdKeysOnCrowdedTables) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 8003 : 400003;
  for (double z : {0.0, 1.0, 2.0}) {
    auto keys = mapreduce::zipf_keys_u32(n, sanitizer() ? 3000 : 60000, z, 17);
    std::unordered_map<std::uint32_t, int> distinct;
    for (auto k : keys) distinct[k] = 1;
    for (bool match : {true, false}) {
      for (int variant = 0; variant < 3; ++variant) {
        auto o = hash_opts();
        o.warp_match = match;
        o.partition_cold = false;
        o.spill_entries = 1u << 20;
        if (variant == 0) o.result_entries = distinct.size() + distinct.size() / 16;  // ~94% full
        if (variant == 1) o.result_entries = distinct.size() / 2;                     // overflows: grown
        if (variant == 2) o.hot_keys = false;                                         // every key to the table
        const std::string what =
            "zipf " + std::to_string(z) + (match ? " match" : " ballots") + " variant " + std::to_string(variant);
        auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
        expect_counts(g, keys, what);
        if (variant == 1) {
          EXPECT_GT(g.gpu.result_grows, 0u) << what;
        }
      }
    }
  }
}

TEST(GpuHashGroupBy, EdgeCasesAndEmptyMarkerKey) {
  TANDEM_REQUIRE_GPU();
  // (empty input and one record: GpuMapReduce.EdgeCases runs them on both engines)
  const std::size_t n = sanitizer() ? 30001 : 777777;
  // one key only, many times
  std::vector<std::uint32_t> same_key(n, 7);
  expect_counts(engine_test::groupby(DType::u32, same_key.data(), n, DType::f64, nullptr, 0, false, hash_opts()),
                same_key, "one key");
  // all distinct
  std::vector<std::uint32_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = scatter32(static_cast<std::uint32_t>(i));
  expect_counts(engine_test::groupby(DType::u32, all.data(), n, DType::f64, nullptr, 0, false, hash_opts()), all,
                "all distinct");
  // the all-ones key (the tables' empty marker), hot and cold, u32 and u64
  auto mixed = mapreduce::zipf_keys_u32(n, 1000, 1.0, 9);
  for (std::size_t i = 0; i < n; i += 3) mixed[i] = 0xffffffffu;
  expect_counts(engine_test::groupby(DType::u32, mixed.data(), n, DType::f64, nullptr, 0, false, hash_opts()), mixed,
                "all-ones u32");
  auto mixed64 = mapreduce::zipf_keys_u64(n, 1000, 1.0, 9);
  mixed64[n / 2] = ~std::uint64_t{0};
  mixed64[n - 1] = ~std::uint64_t{0};
  expect_counts(engine_test::groupby(DType::u64, mixed64.data(), n, DType::f64, nullptr, 0, false, hash_opts()),
                mixed64, "all-ones u64");
  auto o = hash_opts();
  o.hot_keys = false;
  expect_counts(engine_test::groupby(DType::u32, mixed.data(), n, DType::f64, nullptr, 0, false, o), mixed,
                "all-ones u32, no hot keys");
}

TEST(GpuHashGroupBy, EveryAggregateEveryValueTypeMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 10001 : 300007;
  for (std::uint64_t distinct : {std::uint64_t{50}, std::uint64_t{3000}, std::uint64_t{100000}}) {
    auto k64 = mapreduce::zipf_keys_u64(n, distinct, 1.1, 5 + distinct);
    auto k32 = mapreduce::zipf_keys_u32(n, distinct, 1.1, 5 + distinct);
    std::vector<std::int32_t> ki(n);
    for (std::size_t i = 0; i < n; ++i) ki[i] = static_cast<std::int32_t>(k32[i]);  // negative keys too
    const auto [f64, f32, i64, i32] = test::mixed_values(n);
    for (int kt = 0; kt < 3; ++kt) {
      const DType key_t = kt == 0 ? DType::u32 : (kt == 1 ? DType::u64 : DType::i32);
      const void* keys =
          kt == 0 ? static_cast<const void*>(k32.data()) : (kt == 1 ? static_cast<const void*>(k64.data()) : ki.data());
      for (int vt = 0; vt < 4; ++vt) {
        const DType val_t = vt == 0 ? DType::f64 : (vt == 1 ? DType::f32 : (vt == 2 ? DType::i64 : DType::i32));
        const void* vals = vt == 0 ? static_cast<const void*>(f64.data())
                                   : (vt == 1 ? static_cast<const void*>(f32.data())
                                              : (vt == 2 ? static_cast<const void*>(i64.data()) : i32.data()));
        auto o = hash_opts();
        auto g = engine_test::groupby(key_t, keys, n, val_t, vals, n, true, o);
        o.device = Device::cpu;
        auto c = engine_test::groupby(key_t, keys, n, val_t, vals, n, true, o);
        expect_same_rows(
            g, c, "d=" + std::to_string(distinct) + " key " + std::to_string(kt) + " value " + std::to_string(vt));
        EXPECT_EQ(g.gpu.engine, "hash");
      }
    }
  }
}

TEST(GpuHashGroupBy, ChainedModeStillSelectable) {
  TANDEM_REQUIRE_GPU();
  const std::size_t n = sanitizer() ? 5000 : 100001;
  auto keys = mapreduce::zipf_keys_u32(n, 1000, 1.0, 4);
  auto o = hash_opts();
  o.mode = engine_test::Options::Mode::chained;
  auto g = engine_test::groupby(DType::u32, keys.data(), n, DType::f64, nullptr, 0, false, o);
  std::unordered_map<std::uint32_t, std::uint64_t> ref;
  for (auto x : keys) ++ref[x];
  ASSERT_EQ(g.rows.size(), ref.size());
  for (const auto& r : g.rows) EXPECT_EQ(r.count, ref[static_cast<std::uint32_t>(r.key_bits)]);
  EXPECT_EQ(g.gpu.engine, "chained");
}

// i64 sums on the GPU engines: added in 64-bit two's complement (the table group-by checks the
// range afterwards, GroupByHashEngineGpu.SixtyFourBitSumsThatMayWrapRerunOnTheCpu); a running sum
// that leaves i64 and returns is exact.
TEST(GpuHashGroupBy, I64SumsWrapModulo2To64AndComeBackExact) {
  TANDEM_REQUIRE_GPU();
  for (auto mode : {engine_test::Options::Mode::hash, engine_test::Options::Mode::chained}) {
    auto o = hash_opts();
    o.mode = mode;
    std::vector<std::int64_t> k{-42, -42, 5}, v{INT64_MAX, 1, 3};
    const auto wrapped = engine_test::groupby(DType::i64, k.data(), k.size(), DType::i64, v.data(), v.size(), true, o);
    ASSERT_EQ(wrapped.rows.size(), 2u);
    EXPECT_EQ(wrapped.rows[0].isum, INT64_MIN) << "INT64_MAX + 1, modulo 2^64";
    EXPECT_EQ(wrapped.rows[0].count, 2u);
    EXPECT_EQ(wrapped.rows[1].isum, 3);
    // Many records per key, partial sums crossing the range in every order the atomics take.
    const std::size_t n = sanitizer() ? 20000 : 1000000;
    std::vector<std::uint32_t> keys(n);
    std::vector<std::int64_t> vals(n);
    for (std::size_t i = 0; i < n; i += 2) {
      keys[i] = keys[i + 1] = std::uint32_t(tandem::mix64(i) % 300);
      vals[i] = std::int64_t(tandem::mix64(i + 1) >> 1);
      vals[i + 1] = -vals[i] + std::int64_t(i % 7);
    }
    engine_test::Options cpu;
    cpu.device = Device::cpu;
    const auto want = engine_test::groupby(DType::u32, keys.data(), n, DType::i64, vals.data(), n, true, cpu);
    expect_same_rows(engine_test::groupby(DType::u32, keys.data(), n, DType::i64, vals.data(), n, true, o), want,
                     mode == engine_test::Options::Mode::hash ? "hash" : "chained");
  }
}
