// The merge of the sorted runs a rank receives in the distributed sort (src/sort/merge_runs.hpp):
// compared with std::stable_sort of the runs' concatenation, keys by their bits and values (each
// element's position in the concatenation) exactly, so any break of stability shows. No MPI needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "sort/merge_runs.hpp"
#include "tandem/core/key_order.hpp"

namespace tandem::detail {
namespace {

// tandem's key order, reversed for descending sorts (as the distributed sort's KeyOrder).
template <class K>
struct Order {
  bool descending;
  bool operator()(K a, K b) const { return descending ? key_less(b, a) : key_less(a, b); }
};

template <class K>
std::vector<std::uint8_t> bytes_of(const std::vector<K>& v) {
  std::vector<std::uint8_t> b(v.size() * sizeof(K));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Sorts each run, merges them, and checks against the stable sort of the concatenation.
// How merge_runs cuts its work: parts of at least min_part elements, merged in chunks of `chunk`.
struct Cuts {
  std::size_t min_part;
  std::size_t chunk;
};

template <class K>
void check_merge(std::vector<std::vector<K>> runs, bool descending, bool with_values, int threads, Cuts cuts) {
  const Order<K> less{descending};
  std::vector<K> keys;
  std::vector<std::uint64_t> lengths;
  for (auto& r : runs) {
    std::stable_sort(r.begin(), r.end(), less);
    keys.insert(keys.end(), r.begin(), r.end());
    lengths.push_back(r.size());
  }
  const std::size_t n = keys.size();
  std::vector<std::uint64_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = i;

  std::vector<std::uint64_t> want_values = values;
  std::stable_sort(want_values.begin(), want_values.end(),
                   [&](std::uint64_t a, std::uint64_t b) { return less(keys[a], keys[b]); });
  std::vector<K> want_keys(n);
  for (std::size_t i = 0; i < n; ++i) want_keys[i] = keys[want_values[i]];

  std::vector<K> out_keys(n);
  std::vector<std::uint64_t> out_values(n, ~std::uint64_t{0});
  merge_runs(keys.data(), with_values ? values.data() : nullptr, lengths, out_keys.data(),
             with_values ? out_values.data() : nullptr, less, threads, cuts.min_part, cuts.chunk);
  ASSERT_EQ(bytes_of(out_keys), bytes_of(want_keys));
  if (with_values) {
    ASSERT_EQ(out_values, want_values);
  }
}

// P runs of random lengths (empty ones included) with keys from `draw`.
template <class K, class Draw>
std::vector<std::vector<K>> random_runs(std::mt19937_64& rng, int p, std::size_t max_len, Draw draw) {
  std::vector<std::vector<K>> runs(static_cast<std::size_t>(p));
  for (auto& r : runs) {
    const std::size_t len = rng() % 4 == 0 ? 0 : std::size_t(rng() % (max_len + 1));
    for (std::size_t i = 0; i < len; ++i) r.push_back(draw());
  }
  return runs;
}

TEST(DistMergeRuns, RandomRunsEveryCountOfRunsAndThreads) {
  std::mt19937_64 rng(7);
  for (int p = 1; p <= 9; ++p)
    for (int threads = 1; threads <= 8; ++threads)
      for (const std::size_t max_len : {std::size_t(3), std::size_t(40), std::size_t(700)})
        for (const bool descending : {false, true})
          for (const bool with_values : {false, true}) {
            SCOPED_TRACE(testing::Message() << "p " << p << " threads " << threads << " max_len " << max_len
                                            << (descending ? " descending" : "") << (with_values ? " values" : ""));
            const std::uint32_t domain = rng() % 2 ? 5 : 1u << 30;  // many ties, or few
            auto runs = random_runs<std::uint32_t>(rng, p, max_len, [&] { return std::uint32_t(rng() % domain); });
            for (const Cuts cuts : {Cuts{1, 1}, Cuts{1, 7}, Cuts{64, 100}, Cuts{4096, 0}})
              check_merge(runs, descending, with_values, threads, cuts);
          }
}

TEST(DistMergeRuns, AllKeysEqualKeepRunOrder) {
  for (int p = 1; p <= 9; ++p)
    for (int threads = 1; threads <= 8; ++threads) {
      SCOPED_TRACE(testing::Message() << "p " << p << " threads " << threads);
      std::vector<std::vector<std::int64_t>> runs(static_cast<std::size_t>(p));
      for (int r = 0; r < p; ++r) runs[std::size_t(r)].assign(std::size_t(r % 3 == 1 ? 0 : 10 + 7 * r), -3);
      check_merge(runs, false, true, threads, {1, 3});
      check_merge(runs, true, true, threads, {5, 16});
    }
}

TEST(DistMergeRuns, FloatsInTotalOrderWithNanAndSignedZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> pool{nan, -nan, -0.0f, 0.0f, -inf, inf, 1.5f, -1.5f, 0.0f, -0.0f};
  std::mt19937_64 rng(11);
  for (int p = 1; p <= 9; ++p)
    for (int threads : {1, 3, 8})
      for (const bool descending : {false, true}) {
        SCOPED_TRACE(testing::Message() << "p " << p << " threads " << threads << (descending ? " descending" : ""));
        auto runs = random_runs<float>(rng, p, 50, [&] { return pool[rng() % pool.size()]; });
        check_merge(runs, descending, true, threads, {1, 2});
        check_merge(runs, descending, false, threads, {4096, 0});
      }
}

TEST(DistMergeRuns, DoublesAndEmptyInput) {
  std::mt19937_64 rng(13);
  std::normal_distribution<double> normal;
  for (int p = 1; p <= 9; ++p) {
    auto runs = random_runs<double>(rng, p, 300, [&] { return normal(rng); });
    check_merge(runs, p % 2 == 0, true, 4, {1, 9});
  }
  check_merge(std::vector<std::vector<double>>(5), false, true, 4, {1, 1});  // every run empty
  check_merge(std::vector<std::vector<double>>{}, false, true, 4, {1, 1});   // no runs at all
}

TEST(DistMergeRuns, LargeRunsInDefaultPartsAndChunks) {
  std::mt19937_64 rng(17);
  for (const int p : {2, 4, 8}) {
    SCOPED_TRACE(testing::Message() << "p " << p);
    auto runs = random_runs<std::uint32_t>(rng, p, 40000, [&] { return std::uint32_t(rng() % 1000); });
    check_merge(runs, false, true, 4, {4096, 0});  // as the distributed sort cuts its work
  }
}

// The co-rank alone: each cut is where the first i elements of the stable merge end in each run.
TEST(DistMergeRuns, MultiwayCoRankSplitsAtEveryPosition) {
  std::mt19937_64 rng(19);
  const Order<std::uint32_t> less{false};
  for (int p = 1; p <= 6; ++p) {
    auto runs = random_runs<std::uint32_t>(rng, p, 12, [&] { return std::uint32_t(rng() % 4); });
    std::vector<std::span<const std::uint32_t>> spans;
    std::vector<std::pair<std::uint32_t, std::size_t>> merged;  // (key, run) in merge order
    for (std::size_t r = 0; r < runs.size(); ++r) {
      std::sort(runs[r].begin(), runs[r].end());
      spans.emplace_back(runs[r]);
      for (auto k : runs[r]) merged.emplace_back(k, r);
    }
    std::stable_sort(merged.begin(), merged.end(), [](auto a, auto b) { return a.first < b.first; });
    std::vector<std::size_t> want(runs.size(), 0), got(runs.size());
    for (std::size_t i = 0; i <= merged.size(); ++i) {
      multiway_co_rank(i, std::span<const std::span<const std::uint32_t>>(spans), less, got.data());
      ASSERT_EQ(got, want) << "p " << p << " i " << i;
      if (i < merged.size()) ++want[merged[i].second];
    }
  }
}

}  // namespace
}  // namespace tandem::detail
