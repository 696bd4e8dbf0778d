// The CPU paths of tandem::sort (parallel LSD radix, parallel comparison sort) and the path
// choice, against std::stable_sort in tandem's key order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/scratch_pool.hpp"
#include "sort/cpu_radix.hpp"
#include "sort/device_sort.hpp"
#include "sort/msd.hpp"
#include "tandem/core/device.hpp"
#include "tandem/core/error.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/sort.hpp"

using namespace tandem;

namespace {

// skewed: a power law over 1000 values; top_heavy: 90% of the keys share their top byte.
enum class Shape { uniform, sorted, reverse, equal, few, skewed, top_heavy };

template <class K>
std::vector<K> make_keys(std::size_t n, Shape s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<K> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint64_t r = rng();
    if (s == Shape::few) r %= 5;
    if (s == Shape::skewed) r = static_cast<std::uint64_t>(std::pow(static_cast<double>(r % 1000000) / 1e6, 8) * 1000);
    if (s == Shape::equal) r = 42;
    if (s == Shape::top_heavy) {
      using U = ordered_bits_t<K>;
      const U bits = i % 10 == 0 ? U(r) : U((U(0x42) << (sizeof(U) * 8 - 8)) | (U(r) >> 8));
      v[i] = from_ordered<K>(bits);  // floats: NaNs and signed zeros among them
      continue;
    }
    if constexpr (std::is_floating_point_v<K>) {
      v[i] = static_cast<K>(static_cast<std::int64_t>(r % 2001) - 1000) / K(8);
      if (s == Shape::uniform && i % 97 == 0) v[i] = std::numeric_limits<K>::quiet_NaN();
      if (s == Shape::uniform && i % 89 == 0) v[i] = -std::numeric_limits<K>::quiet_NaN();
      if (s == Shape::uniform && i % 13 == 0) v[i] = (i % 2) ? K(-0.0) : K(0.0);
      if (s == Shape::uniform && i % 101 == 0) v[i] = -std::numeric_limits<K>::infinity();
    } else {
      v[i] = static_cast<K>(r);
    }
  }
  auto less = [](K a, K b) { return key_less(a, b); };
  if (s == Shape::sorted) std::sort(v.begin(), v.end(), less);
  if (s == Shape::reverse) std::sort(v.begin(), v.end(), [&](K a, K b) { return less(b, a); });
  return v;
}

// Sorts with fn(keys, values) and checks keys and values against std::stable_sort of (key, index).
template <class K, class V, class F>
void check_pairs(const std::vector<K>& in, bool descending, F&& fn) {
  std::vector<std::size_t> idx(in.size());
  std::iota(idx.begin(), idx.end(), std::size_t{0});
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) {
    return descending ? key_less(in[b], in[a]) : key_less(in[a], in[b]);
  });
  std::vector<K> k = in;
  std::vector<V> v(in.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<V>(i);
  fn(std::span<K>(k), std::span<V>(v));
  for (std::size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(to_ordered(k[i]), to_ordered(in[idx[i]])) << "key at " << i << " of " << in.size();
    ASSERT_EQ(v[i], static_cast<V>(idx[i])) << "value at " << i << " of " << in.size();
  }
}

template <class K>
void check_keys(const std::vector<K>& in, bool descending, const std::function<void(std::span<K>)>& fn) {
  auto want = in;
  std::stable_sort(want.begin(), want.end(), [&](K a, K b) { return descending ? key_less(b, a) : key_less(a, b); });
  auto got = in;
  fn(std::span<K>(got));
  for (std::size_t i = 0; i < in.size(); ++i)
    ASSERT_EQ(to_ordered(got[i]), to_ordered(want[i])) << "at " << i << " of " << in.size();
}

// Runs a sort that copies (sort_copy and the like) as check_keys / check_pairs expect a sort in
// place: the spans' contents become the const source, the spans are poisoned and receive the
// result, and the source must be left as it was.
template <class K, class V, class F>
void from_source(std::span<K> keys, std::span<V> values, F&& sort_copy_fn) {
  const std::vector<K> ks(keys.begin(), keys.end());
  const std::vector<V> vs(values.begin(), values.end());
  const auto ks_before = ks;
  std::fill(keys.begin(), keys.end(), from_ordered<K>(ordered_bits_t<K>(0x5a5a5a5a5a5a5a5aull)));
  if constexpr (!std::is_same_v<V, detail::NoValue>) std::fill(values.begin(), values.end(), V(0xdeadbeef));
  sort_copy_fn(std::span<const K>(ks), std::span<const V>(vs), keys, values);
  for (std::size_t i = 0; i < ks.size(); ++i)
    ASSERT_EQ(to_ordered(ks[i]), to_ordered(ks_before[i])) << "source at " << i;
}

const std::vector<std::size_t> kSizes{0, 1, 2, 63, 64, 65, 255, 257, 4097, 65537, 200003};
const std::vector<Shape> kShapes{Shape::uniform, Shape::sorted, Shape::reverse,
                                 Shape::equal,   Shape::few,    Shape::skewed};

template <class K>
void radix_all_cases() {
  for (std::size_t n : kSizes)
    for (Shape s : kShapes)
      for (bool desc : {false, true})
        for (int threads : {1, 3}) {
          // Several threads only split inputs of >= 2^17 elements: the large size covers them.
          if ((n > 70000) != (threads == 3)) continue;
          if (n > 70000 && s != Shape::uniform && s != Shape::few) continue;
          SCOPED_TRACE(testing::Message()
                       << "n=" << n << " shape=" << int(s) << " desc=" << desc << " threads=" << threads);
          const auto in = make_keys<K>(n, s, n * 7 + int(s));
          check_keys<K>(in, desc, [&](std::span<K> k) {
            detail::cpu_radix_sort(k, std::span<detail::NoValue>{}, desc, threads);
          });
          check_pairs<K, std::uint32_t>(in, desc, [&](std::span<K> k, std::span<std::uint32_t> v) {
            detail::cpu_radix_sort(k, v, desc, threads);
          });
          check_keys<K>(in, desc, [&](std::span<K> k) {
            from_source<K, detail::NoValue>(k, {}, [&](auto ki, auto vi, auto ko, auto vo) {
              detail::cpu_radix_sort_copy(ki, vi, ko, vo, desc, threads);
            });
          });
          check_pairs<K, std::uint32_t>(in, desc, [&](std::span<K> k, std::span<std::uint32_t> v) {
            from_source<K, std::uint32_t>(k, v, [&](auto ki, auto vi, auto ko, auto vo) {
              detail::cpu_radix_sort_copy(ki, vi, ko, vo, desc, threads);
            });
          });
        }
}

}  // namespace

TEST(CpuRadix, U32) { radix_all_cases<std::uint32_t>(); }
TEST(CpuRadix, I32) { radix_all_cases<std::int32_t>(); }
TEST(CpuRadix, U64) { radix_all_cases<std::uint64_t>(); }
TEST(CpuRadix, I64) { radix_all_cases<std::int64_t>(); }
TEST(CpuRadix, F32) { radix_all_cases<float>(); }
TEST(CpuRadix, F64) { radix_all_cases<double>(); }

namespace {

// Keys and (key, index) pairs, ascending and descending, against std::stable_sort.
template <class K>
void check_radix(const std::vector<K>& in, int threads) {
  for (bool desc : {false, true}) {
    SCOPED_TRACE(testing::Message() << "n=" << in.size() << " desc=" << desc << " threads=" << threads);
    check_keys<K>(in, desc,
                  [&](std::span<K> k) { detail::cpu_radix_sort(k, std::span<detail::NoValue>{}, desc, threads); });
    check_pairs<K, std::uint32_t>(
        in, desc, [&](std::span<K> k, std::span<std::uint32_t> v) { detail::cpu_radix_sort(k, v, desc, threads); });
  }
}

// Sizes around the thresholds: the leaf (16 keys), one thread (< 2^17 keys per parallel pass),
// the in-cache LSD and MSD levels, several threads.
const std::vector<std::size_t> kEdgeSizes{16, 17, 33, 4096, (1u << 17) - 1, (1u << 17) + 1, 300001};

}  // namespace

// Bits where every key agrees are skipped; these keys vary only in some of them.
TEST(CpuRadix, KeysThatDifferOnlyInHighOrOnlyInLowBits) {
  for (std::size_t n : kEdgeSizes) {
    std::mt19937_64 rng(n);
    std::vector<std::uint64_t> high(n), low(n), middle(n);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t r = rng();
      high[i] = (r >> 52) << 52;                                // only the top 12 bits vary
      low[i] = r & 0x3ff;                                       // only the low 10 bits
      middle[i] = 0x5500000000000077ull | ((r & 0xfff) << 30);  // 12 bits in the middle
    }
    check_radix(high, 3);
    check_radix(low, 3);
    check_radix(middle, 3);
  }
}

TEST(CpuRadix, AllKeysEqual) {
  for (std::size_t n : kEdgeSizes) {
    check_radix(std::vector<std::uint32_t>(n, 7u), 3);
    check_radix(std::vector<double>(n, -2.5), 3);
  }
}

TEST(CpuRadix, SmallNegativeAndPositiveI64) {  // the sign bit and the low bits vary, not the rest
  for (std::size_t n : kEdgeSizes) {
    std::mt19937_64 rng(n + 1);
    std::vector<std::int64_t> v(n);
    for (auto& x : v) x = static_cast<std::int64_t>(rng() % 2001) - 1000;
    check_radix(v, 3);
  }
}

TEST(CpuRadix, F64SpecialValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> special{nan,
                                    -nan,
                                    0.0,
                                    -0.0,
                                    inf,
                                    -inf,
                                    1.0,
                                    -1.0,
                                    std::numeric_limits<double>::min(),
                                    -std::numeric_limits<double>::denorm_min()};
  for (std::size_t n : kEdgeSizes) {
    std::mt19937_64 rng(n + 2);
    std::vector<double> v(n);
    for (auto& x : v)
      x = rng() % 3 == 0 ? special[rng() % special.size()] : double(std::int64_t(rng() % 201) - 100) / 4;
    check_radix(v, 3);
  }
}

// Equal keys spread over every thread's chunk of the parallel pass and over the buckets of the
// in-cache levels keep their input order.
TEST(CpuRadix, PairsStableAcrossThreadChunks) {
  for (int threads : {2, 4, 7}) {
    const std::size_t n = (std::size_t{1} << 18) + 12345;
    std::vector<std::uint64_t> few(n), runs(n);
    for (std::size_t i = 0; i < n; ++i) {
      few[i] = (i * 7919) % 5 << 40;  // 5 distinct keys, each in every chunk
      runs[i] = i / 1000;             // runs of 1000 equal keys, some across chunk boundaries
    }
    check_radix(few, threads);
    check_radix(runs, threads);
  }
}

TEST(CpuRadix, OneBucketHoldsAlmostAllKeys) {  // the large bucket goes through the parallel pass again
  const auto in = make_keys<std::uint64_t>(400000, Shape::top_heavy, 5);
  check_radix(in, 4);
  const auto in32 = make_keys<float>(400000, Shape::top_heavy, 6);
  check_radix(in32, 4);
}

TEST(CpuRadix, SmallSortsWithCrowdedTopBitsTakeLsdPasses) {
  // One thread, most keys sharing their top bits (as a word count's order keys: a count's
  // complement on top): the whole sort falls back to LSD passes, stable like the rest.
  for (std::size_t n : {511, 512, 730, 4097, 60000}) {
    check_radix(make_keys<std::uint64_t>(n, Shape::top_heavy, n), 1);
    check_radix(make_keys<float>(n, Shape::top_heavy, n + 1), 1);
    std::vector<std::uint64_t> counts_on_top(n);
    std::mt19937_64 rng(n);
    for (auto& k : counts_on_top) k = (0xffffull - 1 - rng() % 8) << 48 | (rng() % 5000);  // many equal keys
    check_radix(counts_on_top, 1);
  }
}

// Scratch of 2 MiB to 64 MiB comes from the scratch pool and goes back to it; larger scratch does
// not stay in the process after the call.
TEST(CpuRadix, MidSizedScratchIsKeptForTheNextSort) {
  release_cached_scratch();
  auto in = make_keys<std::uint32_t>(std::size_t{1} << 20, Shape::uniform, 7);  // 4 MiB of scratch
  check_radix(in, 2);
  const std::size_t kept = cached_scratch_bytes();
  EXPECT_GE(kept, in.size() * sizeof(std::uint32_t));
  check_radix(in, 2);  // the same sizes again: served from the pool, which does not grow
  EXPECT_EQ(cached_scratch_bytes(), kept);
  auto big = make_keys<std::uint64_t>((std::size_t{64} << 20) / 8 + 1, Shape::uniform, 8);
  detail::cpu_radix_sort(std::span<std::uint64_t>(big), std::span<detail::NoValue>{}, false, 2);
  EXPECT_TRUE(std::is_sorted(big.begin(), big.end()));
  EXPECT_EQ(cached_scratch_bytes(), kept);
  release_cached_scratch();
}

// ---- memory=low: the in-place MSD sort of keys against std::stable_sort in key order, and the
// stable in-place pair sort against std::stable_sort of (key, index).

template <class K>
void in_place_all_cases() {
  const std::vector<Shape> shapes{Shape::uniform, Shape::sorted, Shape::reverse,  Shape::equal,
                                  Shape::few,     Shape::skewed, Shape::top_heavy};
  // Buckets (blocks) above 16 elements: small inputs reach every level of the partition's
  // recursion, and buffered merges from both sides and the rotations.
  for (std::size_t n : {0, 1, 2, 3, 17, 63, 65, 1000, 4097, 20011})
    for (Shape s : shapes)
      for (bool desc : {false, true})
        for (int threads : {1, 3}) {
          SCOPED_TRACE(testing::Message()
                       << "n=" << n << " shape=" << int(s) << " desc=" << desc << " threads=" << threads);
          const auto in = make_keys<K>(n, s, n * 5 + int(s));
          check_keys<K>(in, desc, [&](std::span<K> k) { detail::cpu_in_place_sort(k, desc, threads, 16); });
          check_pairs<K, std::uint32_t>(
              in, desc, [&](auto k, auto v) { detail::cpu_in_place_sort_pairs(k, v, desc, threads, 16); });
        }
  for (Shape s : {Shape::uniform, Shape::top_heavy}) {  // the default bucket limit: one partition level, or two
    const auto in = make_keys<K>(300007, s, 11);
    check_keys<K>(in, false, [&](std::span<K> k) { detail::cpu_in_place_sort(k, false, 2); });
    check_pairs<K, std::uint64_t>(in, true, [&](auto k, auto v) { detail::cpu_in_place_sort_pairs(k, v, true, 2); });
  }
}

TEST(CpuInPlace, U32) { in_place_all_cases<std::uint32_t>(); }
TEST(CpuInPlace, I32) { in_place_all_cases<std::int32_t>(); }
TEST(CpuInPlace, U64) { in_place_all_cases<std::uint64_t>(); }
TEST(CpuInPlace, I64) { in_place_all_cases<std::int64_t>(); }
TEST(CpuInPlace, F32) { in_place_all_cases<float>(); }
TEST(CpuInPlace, F64) { in_place_all_cases<double>(); }

TEST(CpuInPlace, FloatSpecialValuesInTheRadixOrder) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> v;
  for (int i = 0; i < 5000; ++i) v.insert(v.end(), {nan, 0.0, -0.0, -nan, 1.0, -inf, inf, -1.0, double(i)});
  for (bool desc : {false, true}) {
    auto radix = v, in_place = v;
    detail::cpu_radix_sort(std::span<double>(radix), std::span<detail::NoValue>{}, desc, 2);
    detail::cpu_in_place_sort(std::span<double>(in_place), desc, 2, 16);
    for (std::size_t i = 0; i < v.size(); ++i) ASSERT_EQ(to_ordered(in_place[i]), to_ordered(radix[i])) << i;
  }
}

TEST(CpuInPlace, BucketLimitKeepsTheScratchASixteenth) {
  EXPECT_EQ(detail::in_place_bucket_limit(std::size_t{1} << 27, 2), std::size_t{1} << 22);  // 2 x 2^22 = n / 16
  EXPECT_EQ(detail::in_place_bucket_limit(std::size_t{1} << 27, 1), std::size_t{1} << 23);
  EXPECT_EQ(detail::in_place_bucket_limit(1000, 4), detail::kInPlaceMinBucket);
  // Many threads: no more than keep one minimal bucket each within n / 16.
  EXPECT_EQ(detail::in_place_threads(std::size_t{1} << 27, 4096), 128);
  EXPECT_EQ(detail::in_place_bucket_limit(std::size_t{1} << 27, 4096), detail::kInPlaceMinBucket);
  EXPECT_EQ(detail::in_place_threads(1000, 8), 1);
  EXPECT_EQ(detail::in_place_threads(std::size_t{1} << 27, 2), 2);
  EXPECT_EQ(detail::in_place_bucket_limit(100, 0, 16), 16u);  // threads <= 0 counts as one
  EXPECT_EQ(detail::in_place_bucket_limit(1000, 0, 16), 62u);
}

TEST(CpuRadix, U64ValuesAndExtremes) {
  std::vector<std::int64_t> in{std::numeric_limits<std::int64_t>::max(),
                               std::numeric_limits<std::int64_t>::min(),
                               0,
                               -1,
                               1,
                               std::numeric_limits<std::int64_t>::min(),
                               5};
  in.resize(5000, 7);  // past the insertion-sort cutoff, with a long run of equal keys
  for (bool desc : {false, true})
    check_pairs<std::int64_t, std::uint64_t>(in, desc, [&](auto k, auto v) { detail::cpu_radix_sort(k, v, desc, 2); });
}

TEST(CpuRadix, FloatSpecialValuesInOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> v;
  for (int i = 0; i < 100; ++i) v.insert(v.end(), {nan, 0.0f, -0.0f, -nan, 1.0f, -inf, inf, -1.0f});
  detail::cpu_radix_sort(std::span<float>(v), std::span<detail::NoValue>{}, false, 2);
  EXPECT_TRUE(std::isnan(v.front()) && std::signbit(v.front()));
  EXPECT_TRUE(std::isnan(v.back()) && !std::signbit(v.back()));
  const auto neg_zero = std::find_if(v.begin(), v.end(), [](float f) { return f == 0.0f; });
  ASSERT_NE(neg_zero, v.end());
  EXPECT_TRUE(std::signbit(*neg_zero));           // -0.0 before +0.0
  EXPECT_FALSE(std::signbit(*(neg_zero + 100)));  // 100 of each
}

TEST(CpuComparison, KeysAndStablePairs) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1025}, std::size_t{100001}})
    for (bool desc : {false, true}) {
      const auto in = make_keys<float>(n, Shape::uniform, n);
      check_keys<float>(
          in, desc, [&](std::span<float> k) { detail::cpu_comparison_sort(k, std::span<detail::NoValue>{}, desc, 2); });
      const auto few = make_keys<std::uint64_t>(n, Shape::few, n);
      check_pairs<std::uint64_t, std::uint32_t>(few, desc,
                                                [&](auto k, auto v) { detail::cpu_comparison_sort(k, v, desc, 2); });
    }
}

TEST(SortEntry, EveryAlgorithmOnTheCpu) {
  for (auto alg : {SortAlgorithm::auto_, SortAlgorithm::radix, SortAlgorithm::merge})
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{65535}, std::size_t{65537}}) {
      SortOptions o;
      o.algorithm = alg;
      o.device = Device::cpu;
      o.threads = 2;
      const auto in = make_keys<double>(n, Shape::uniform, 3);
      check_keys<double>(in, false, [&](std::span<double> k) { sort(k, o); });
      const auto few = make_keys<std::int32_t>(n, Shape::few, 4);
      o.descending = true;
      check_pairs<std::int32_t, std::uint64_t>(few, true, [&](auto k, auto v) {
        const Report r = sort_pairs(k, v, o);
        if (n > 1) {
          EXPECT_EQ(r.details().value("path", ""), alg == SortAlgorithm::merge ? "cpu-comparison" : "cpu-radix");
        }
      });
    }
}

// sort_copy and sort_pairs_copy on every CPU path: the radix sort reading the source in its first
// pass, and the paths that copy it and sort in place.
TEST(SortEntry, SortedCopyOnEveryCpuPath) {
  struct Case {
    SortAlgorithm algorithm;
    SortMemory memory;
    const char* path;
  };
  const Case cases[] = {{SortAlgorithm::auto_, SortMemory::auto_, "cpu-radix"},
                        {SortAlgorithm::merge, SortMemory::auto_, "cpu-comparison"},
                        {SortAlgorithm::radix, SortMemory::low, "cpu-in-place"},
                        {SortAlgorithm::bitonic, SortMemory::auto_, "bitonic"}};
  for (const Case& c : cases)
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{17}, std::size_t{200003}})
      for (bool desc : {false, true}) {
        SCOPED_TRACE(testing::Message() << "path=" << c.path << " n=" << n << " desc=" << desc);
        SortOptions o;
        o.algorithm = c.algorithm;
        o.memory = c.memory;
        o.device = Device::cpu;
        o.threads = 2;
        o.descending = desc;
        const auto in = make_keys<float>(n, Shape::uniform, n + 11);
        check_keys<float>(in, desc, [&](std::span<float> k) {
          from_source<float, detail::NoValue>(k, {}, [&](auto ki, auto, auto ko, auto) {
            const Report r = sort_copy(ki, ko, o);
            if (n > 1) {
              EXPECT_EQ(r.details().value("path", ""), c.path);
            }
          });
        });
        const auto few = make_keys<std::uint64_t>(n, Shape::few, n + 12);
        check_pairs<std::uint64_t, std::uint32_t>(few, desc, [&](auto k, auto v) {
          from_source<std::uint64_t, std::uint32_t>(
              k, v, [&](auto ki, auto vi, auto ko, auto vo) { sort_pairs_copy(ki, vi, ko, vo, o); });
        });
      }
}

TEST(SortEntry, SortedCopyRefusesOverlapAndLengthMismatch) {
  std::vector<std::uint32_t> a{3, 1, 2, 5}, b(3), vals{0, 1, 2, 3};
  SortOptions o;
  o.device = Device::cpu;
  EXPECT_THROW(sort_copy(std::span<const std::uint32_t>(a), std::span<std::uint32_t>(b), o), UsageError);
  EXPECT_THROW(sort_copy(std::span<const std::uint32_t>(a.data(), 3), std::span<std::uint32_t>(a.data() + 1, 3), o),
               UsageError);
  std::vector<std::uint32_t> out(4), vout(4);
  EXPECT_THROW(sort_pairs_copy(std::span<const std::uint32_t>(a), std::span<const std::uint32_t>(vals.data(), 3),
                               std::span<std::uint32_t>(out), std::span<std::uint32_t>(vout), o),
               UsageError);
  EXPECT_THROW(sort_pairs_copy(std::span<const std::uint32_t>(a), std::span<const std::uint32_t>(vals),
                               std::span<std::uint32_t>(out), std::span<std::uint32_t>(vals), o),
               UsageError);
  EXPECT_EQ(a, (std::vector<std::uint32_t>{3, 1, 2, 5}));
  // Adjacent but not overlapping is fine.
  std::vector<std::uint32_t> both{4, 2, 3, 1, 0, 0, 0, 0};
  sort_copy(std::span<const std::uint32_t>(both.data(), 4), std::span<std::uint32_t>(both.data() + 4, 4), o);
  EXPECT_EQ(both, (std::vector<std::uint32_t>{4, 2, 3, 1, 1, 2, 3, 4}));
}

TEST(SortEntry, ReportNamesTheBitonicPath) {
  SortOptions o;
  o.algorithm = SortAlgorithm::bitonic;
  o.device = Device::cpu;
  o.threads = 2;
  std::vector<std::uint32_t> v{5, 3, 9, 1, 7};
  EXPECT_EQ(sort(std::span<std::uint32_t>(v), o).details().value("path", ""), to_string(SortPath::bitonic));
  EXPECT_EQ(v, (std::vector<std::uint32_t>{1, 3, 5, 7, 9}));
  std::vector<std::uint32_t> vals{0, 1, 2, 3, 4};
  EXPECT_EQ(sort_pairs(std::span<std::uint32_t>(v), std::span<std::uint32_t>(vals), o).details().value("path", ""),
            "bitonic");
}

TEST(SortEntry, DeviceGpuWithoutGpuIsACleanError) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is present";
  std::vector<std::uint32_t> v{3, 1, 2};
  SortOptions o;
  o.device = Device::gpu;
  EXPECT_THROW(sort(std::span<std::uint32_t>(v), o), NoDeviceError);
  EXPECT_EQ(v, (std::vector<std::uint32_t>{3, 1, 2}));  // untouched
  o.device = Device::auto_;
  const Report r = sort(std::span<std::uint32_t>(v), o);
  EXPECT_EQ(v, (std::vector<std::uint32_t>{1, 2, 3}));
  EXPECT_EQ(r.details().value("path", ""), "cpu-radix");
}

TEST(SortPathChoice, FromCosts) {
  detail::PathInputs in;
  in.n = std::size_t{1} << 28;
  in.key_bytes = 4;
  in.threads = 16;
  in.host_bw = 38e9;
  in.link_bw = 33e9;
  in.gpu = false;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_radix);
  in.algorithm = SortAlgorithm::merge;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_comparison);
  in.algorithm = SortAlgorithm::auto_;
  in.gpu = true;
  in.gpu_budget = std::size_t{70} << 30;
  auto c = detail::choose_sort_path(in);
  EXPECT_EQ(c.path, SortPath::gpu_pipeline) << c.why;
  EXPECT_LT(c.est_gpu_s, c.est_cpu_s);
  in.gpu_budget = std::size_t{256} << 20;  // forced small GPU memory: chunks and a CPU merge
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::gpu_out_of_core);
  in.n = 1000;  // tiny: the fixed GPU costs lose
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_radix);
  in.device = Device::gpu;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::gpu_pipeline);
  in.device = Device::cpu;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_radix);
}

TEST(SortPathChoice, MemoryLowOrTooLittleMemorySortsKeysInPlace) {
  detail::PathInputs in;
  in.n = std::size_t{1} << 27;
  in.key_bytes = 4;
  in.threads = 2;
  in.device = Device::cpu;
  in.host_available = std::size_t{64} << 30;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_radix);  // auto, and the scratch fits
  in.memory = SortMemory::low;
  auto c = detail::choose_sort_path(in);
  EXPECT_EQ(c.path, SortPath::cpu_in_place);
  EXPECT_NE(c.why.find("memory=low"), std::string::npos) << c.why;
  in.memory = SortMemory::auto_;
  in.host_available = (std::size_t{512} << 20) - 1;  // one byte short of the 512 MiB radix scratch
  c = detail::choose_sort_path(in);
  EXPECT_EQ(c.path, SortPath::cpu_in_place);
  EXPECT_NE(c.why.find("exceeds"), std::string::npos) << c.why;
  in.host_available = std::size_t{512} << 20;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_radix);
  in.host_available = 0;  // unknown: no switch on its account
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_radix);
  in.host_available = 1;
  in.algorithm = SortAlgorithm::merge;  // the comparison sort's copy does not fit either
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_in_place);
  in.memory = SortMemory::fast;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_comparison);
  in.algorithm = SortAlgorithm::auto_;
  in.memory = SortMemory::low;
  in.value_bytes = 4;  // pairs: the stable in-place merge
  c = detail::choose_sort_path(in);
  EXPECT_EQ(c.path, SortPath::cpu_in_place);
  EXPECT_NE(c.why.find("pairs merged in place"), std::string::npos) << c.why;
  in.value_bytes = 0;
  in.device = Device::auto_;  // a GPU: the pipeline needs no host scratch; out of core does
  in.gpu = true;
  in.host_bw = 38e9;
  in.link_bw = 33e9;
  in.gpu_budget = std::size_t{70} << 30;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::gpu_pipeline);
  in.gpu_budget = std::size_t{256} << 20;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::cpu_in_place);
  in.device = Device::gpu;
  EXPECT_EQ(detail::choose_sort_path(in).path, SortPath::gpu_out_of_core);
}

TEST(SortPathChoice, HostScratchPerPath) {
  const std::size_t n = 1000;
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::cpu_radix, n, 4, 0), 4000u);
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::cpu_radix, n, 8, 4), 12000u);
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::cpu_comparison, n, 4, 0), 4000u);
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::cpu_comparison, n, 4, 8), 32000u);  // 16-byte items, twice
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::cpu_in_place, n, 8, 0), n / 16 * 8);
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::cpu_in_place, n, 8, 4), n / 16 * 12);
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::gpu_pipeline, n, 4, 4), 0u);
  EXPECT_EQ(detail::host_scratch_bytes(SortPath::gpu_out_of_core, n, 4, 4), 8000u);
}

TEST(SortEntry, MemoryLowSortsKeysInPlace) {
  SortOptions o;
  o.device = Device::cpu;
  o.memory = SortMemory::low;
  o.threads = 2;
  const auto in = make_keys<float>(200001, Shape::uniform, 5);
  check_keys<float>(in, true, [&](std::span<float> k) {
    o.descending = true;
    const Report r = sort(k, o);
    EXPECT_EQ(r.details().value("path", ""), "cpu-in-place");
    EXPECT_NE(r.explain().find("CPU in-place radix sort"), std::string::npos) << r.explain();
  });
  const auto few = make_keys<std::int64_t>(100003, Shape::few, 6);
  check_pairs<std::int64_t, std::uint32_t>(few, false, [&](auto k, auto v) {
    o.descending = false;
    const Report r = sort_pairs(k, v, o);
    EXPECT_EQ(r.details().value("path", ""), "cpu-in-place");
    EXPECT_NE(r.explain().find("CPU in-place stable pair sort"), std::string::npos) << r.explain();
  });
  EXPECT_EQ(parse_sort_memory("low"), SortMemory::low);
  EXPECT_EQ(to_string(SortMemory::fast), "fast");
  EXPECT_THROW(parse_sort_memory("tiny"), UsageError);
}

TEST(SortPathChoice, OutOfCoreSizing) {
  // Sizes past 2^32 elements are computed in 64 bits.
  const std::size_t n = (std::size_t{1} << 32) + 3;
  EXPECT_GT(detail::gpu_bytes_needed(n, 4), std::size_t{32} << 30);
  const std::size_t c = detail::out_of_core_chunk(std::size_t{1} << 30, 4);
  EXPECT_EQ(c % (std::size_t{1} << 20), 0u);
  EXPECT_LE(detail::gpu_bytes_needed(c, 4), std::size_t{1} << 30);
  EXPECT_EQ(detail::out_of_core_chunk(0, 8), std::size_t{1} << 20);  // never zero
}

// ---- MSD split (msd.hpp): the GPU pipeline's split plan and the host partition of the out-of-core path.

TEST(MsdSplit, GroupBuckets) {
  using detail::ElementRange;
  const std::vector<std::uint64_t> counts{3, 0, 20, 4, 4, 0, 1};
  const auto g10 = detail::group_buckets(counts, 10);
  EXPECT_EQ(g10, (std::vector<ElementRange>{{0, 3}, {3, 23}, {23, 32}}));
  ASSERT_EQ(g10.size(), 3u);
  EXPECT_EQ(g10[0].buckets, 1);
  EXPECT_EQ(g10[1].buckets, 1);
  EXPECT_EQ(g10[2].buckets, 3);
  EXPECT_EQ(detail::group_buckets(counts, 1000).front().buckets, 5);
  EXPECT_EQ(detail::group_buckets(counts, 1000), (std::vector<ElementRange>{{0, 32}}));
  EXPECT_EQ(detail::group_buckets(counts, 1),
            (std::vector<ElementRange>{{0, 3}, {3, 23}, {23, 27}, {27, 31}, {31, 32}}));
  EXPECT_TRUE(detail::group_buckets(std::vector<std::uint64_t>(256, 0), 10).empty());
  // Ranges always tile [0, total) in order, whatever the target.
  std::mt19937_64 rng(5);
  for (int rep = 0; rep < 50; ++rep) {
    std::vector<std::uint64_t> c(256);
    std::uint64_t total = 0;
    for (auto& x : c) total += x = (rng() % 4 == 0) ? 0 : rng() % 1000;
    const std::size_t target = 1 + rng() % 5000;
    const auto g = detail::group_buckets(c, target);
    std::size_t pos = 0;
    for (const auto& r : g) {
      EXPECT_EQ(r.begin, pos);
      EXPECT_GT(r.size(), 0u);
      pos = r.end;
    }
    EXPECT_EQ(pos, total);
  }
}

std::vector<std::uint64_t> digit_hist(const std::vector<std::uint32_t>& keys) {
  std::vector<std::uint64_t> h(4 * 256);
  for (auto x : keys)
    for (int d = 0; d < 4; ++d) ++h[d * 256 + ((x >> (8 * d)) & 255)];
  return h;
}

TEST(MsdSplit, PlanForTheGpu) {
  const std::size_t n = 1 << 16, min = 1000;
  std::mt19937_64 rng(4);
  std::vector<std::uint32_t> k(n);
  auto plan = [&] { return detail::plan_gpu_split(digit_hist(k), n, 32, min); };
  // Uniform keys: split on the top digit into 16 groups that tile [0, n).
  for (auto& x : k) x = static_cast<std::uint32_t>(rng());
  auto p = plan();
  ASSERT_TRUE(p.split) << p.why;
  EXPECT_EQ(p.msd_shift, 24);
  EXPECT_EQ(p.sort_bits, 32);
  EXPECT_GE(p.groups.size(), static_cast<std::size_t>(detail::kGpuSplitGroups));  // ~n/16 each, never above
  EXPECT_LE(p.groups.size(), static_cast<std::size_t>(2 * detail::kGpuSplitGroups));
  std::size_t pos = 0;
  for (const auto& g : p.groups) {
    EXPECT_EQ(g.begin, pos);
    EXPECT_LE(g.size(), n / detail::kGpuSplitGroups);
    pos = g.end;
  }
  EXPECT_EQ(pos, n);
  EXPECT_FALSE(detail::plan_gpu_split(digit_hist(k), n, 32, n + 1).split);  // below the threshold
  EXPECT_EQ(detail::plan_gpu_split(digit_hist(k), n, 32, n + 1).sort_bits, 32);
  EXPECT_FALSE(detail::plan_gpu_split({}, n, 32, min).split);  // nothing counted
  EXPECT_EQ(detail::plan_gpu_split({}, n, 32, min).sort_bits, 32);
  EXPECT_FALSE(detail::plan_gpu_split(digit_hist(k), n + 1, 32, min).split);  // counts do not add up
  // Small integers: the top two digits agree and are skipped; split on digit 1.
  for (auto& x : k) x = static_cast<std::uint32_t>(rng() % 60000);
  p = plan();
  ASSERT_TRUE(p.split) << p.why;
  EXPECT_EQ(p.msd_shift, 8);
  EXPECT_EQ(p.sort_bits, 16);
  EXPECT_NE(p.why.find("skipped"), std::string::npos) << p.why;
  // 16 distinct small keys: the split on digit 0 is the whole sort (groups sort no bits).
  for (auto& x : k) x = static_cast<std::uint32_t>(rng() % 16);
  p = plan();
  ASSERT_TRUE(p.split) << p.why;
  EXPECT_EQ(p.msd_shift, 0);
  // All equal: nothing to sort.
  std::fill(k.begin(), k.end(), 0xABCD1234u);
  p = plan();
  EXPECT_FALSE(p.split);
  EXPECT_EQ(p.sort_bits, 0);
  // Skewed (2/3 of the keys share the top digit): one whole sort of all bits.
  for (auto& x : k) x = rng() % 3 ? 5u : static_cast<std::uint32_t>(rng());
  p = plan();
  EXPECT_FALSE(p.split);
  EXPECT_EQ(p.sort_bits, 32);
  EXPECT_NE(p.why.find("skewed"), std::string::npos) << p.why;
  // Skewed below agreeing top digits: one sort of the low 16 bits.
  for (auto& x : k) x = rng() % 3 ? 7u : static_cast<std::uint32_t>(rng() % 65536);
  p = plan();
  EXPECT_FALSE(p.split);
  EXPECT_EQ(p.sort_bits, 16);
  // Exactly half in each of two buckets: split into those two.
  for (std::size_t i = 0; i < n; ++i)
    k[i] = i % 2 ? 0xFF000000u + static_cast<std::uint32_t>(i) : static_cast<std::uint32_t>(i);
  p = plan();
  ASSERT_TRUE(p.split) << p.why;
  EXPECT_EQ(p.groups, (std::vector<detail::ElementRange>{{0, n / 2}, {n / 2, n}}));
}

template <class K, class V>
void msd_case(const std::vector<K>& in, bool desc, std::size_t cap, int threads) {
  std::size_t pieces = 0;
  auto run = [&](std::span<K> k, std::span<V> v) {
    const detail::PieceSort<K, V> piece = [&](const K* sk, const V* sv, K* dk, V* dv, std::size_t len) {
      ASSERT_LE(len, cap);
      ++pieces;
      if (sk != dk) std::copy(sk, sk + len, dk);
      if constexpr (!std::is_same_v<V, detail::NoValue>)
        if (sv != dv) std::copy(sv, sv + len, dv);
      if constexpr (std::is_same_v<V, detail::NoValue>)
        detail::cpu_radix_sort(std::span<K>(dk, len), std::span<V>{}, desc, 1);
      else detail::cpu_radix_sort(std::span<K>(dk, len), std::span<V>(dv, len), desc, 1);
    };
    std::size_t last = 0;
    const auto st =
        detail::msd_partition_sort<K, V>(k, v, desc, cap, threads, piece, [&](std::size_t done, std::size_t all) {
          EXPECT_GE(done, last);
          EXPECT_LE(done, all);
          last = done;
        });
    EXPECT_EQ(st.pieces, pieces);
    if (k.size() > 1) {
      EXPECT_EQ(last, k.size());
    }
  };
  if constexpr (std::is_same_v<V, detail::NoValue>)
    check_keys<K>(in, desc, [&](std::span<K> k) { run(k, std::span<V>{}); });
  else check_pairs<K, V>(in, desc, run);
}

template <class K>
void msd_all_cases() {
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1023}, std::size_t{1025}, std::size_t{70001}})
    for (Shape s : kShapes)
      for (bool desc : {false, true})
        for (std::size_t cap : {std::size_t{1}, std::size_t{100}, std::size_t{4096}, std::size_t{1} << 20}) {
          if (cap <= 100 && n > 2000) continue;  // many tiny pieces: right, but slow
          SCOPED_TRACE(testing::Message() << "n=" << n << " shape=" << int(s) << " desc=" << desc << " cap=" << cap);
          const auto in = make_keys<K>(n, s, n * 3 + int(s));
          const int threads = n > 65536 ? 3 : 1;
          msd_case<K, detail::NoValue>(in, desc, cap, threads);
          msd_case<K, std::uint32_t>(in, desc, cap, threads);
        }
}

TEST(MsdPartition, U32) { msd_all_cases<std::uint32_t>(); }
TEST(MsdPartition, I64) { msd_all_cases<std::int64_t>(); }
TEST(MsdPartition, F32) { msd_all_cases<float>(); }
TEST(MsdPartition, F64) { msd_all_cases<double>(); }

TEST(MsdPartition, PiecesAndLevels) {
  // Uniform u32 keys with a cap of 1/20 of the data: one level, pieces within the cap.
  const auto in = make_keys<std::uint32_t>(100000, Shape::uniform, 9);
  auto k = in;
  std::size_t biggest = 0;
  const detail::PieceSort<std::uint32_t, detail::NoValue> piece =
      [&](const std::uint32_t* sk, const detail::NoValue*, std::uint32_t* dk, detail::NoValue*, std::size_t len) {
        biggest = std::max(biggest, len);
        std::copy(sk, sk + len, dk);
        std::sort(dk, dk + len);
      };
  auto st = detail::msd_partition_sort<std::uint32_t, detail::NoValue>(std::span<std::uint32_t>(k), {}, false, 5000, 2,
                                                                       piece);
  EXPECT_TRUE(std::is_sorted(k.begin(), k.end()));
  EXPECT_EQ(st.levels, 1);
  EXPECT_GE(st.pieces, 20u);
  EXPECT_LE(biggest, 5000u);
  // Keys that agree on their top 24 bits: the partition skips those digits (one level, no
  // scatter of the agreeing digits); all-equal keys are left in place without any piece.
  std::vector<std::uint64_t> low(30000);
  for (std::size_t i = 0; i < low.size(); ++i) low[i] = 0xABCDEF0000000000ull + (i * 2654435761u) % 1000003;
  auto lk = low;
  const detail::PieceSort<std::uint64_t, detail::NoValue> piece64 =
      [&](const std::uint64_t* sk, const detail::NoValue*, std::uint64_t* dk, detail::NoValue*, std::size_t len) {
        std::copy(sk, sk + len, dk);
        std::sort(dk, dk + len);
      };
  st = detail::msd_partition_sort<std::uint64_t, detail::NoValue>(std::span<std::uint64_t>(lk), {}, false, 1000, 2,
                                                                  piece64);
  std::sort(low.begin(), low.end());
  EXPECT_EQ(lk, low);
  std::vector<std::uint64_t> eq(5000, 7);
  st = detail::msd_partition_sort<std::uint64_t, detail::NoValue>(std::span<std::uint64_t>(eq), {}, false, 100, 2,
                                                                  piece64);
  EXPECT_EQ(st.pieces, 0u);
  EXPECT_EQ(st.copied, 5000u);
  EXPECT_EQ(eq, std::vector<std::uint64_t>(5000, 7));
}
