// The CPU group-by's dictionary ranking: keys made of 64-bit words sort by a radix sort of the
// words, in the same order a comparison sort gives; keys numbered per thread or by partition get
// their ranks. And the result columns: running sums in blocks on several threads are the serial
// ones, string columns built in parallel hold every row's bytes in order.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <string>

#include "groupby/cpu_dictionary.hpp"
#include "groupby/cpu_output.hpp"

using namespace tandem;
using namespace tandem::cpu_groupby;

namespace {

struct TwoWords {
  std::uint64_t hi, lo;
  std::array<std::uint64_t, 2> radix_words() const { return {hi, lo}; }
  bool operator<(const TwoWords& o) const { return hi != o.hi ? hi < o.hi : lo < o.lo; }
};

template <class Key>
struct Entry {
  Key key;
  std::uint32_t thread, local;
};

template <class Key, class Draw>
void expect_sorted_like_std(Draw draw, std::size_t n, int threads) {
  Scratch<Entry<Key>> all;
  for (std::uint32_t j = 0; j < n; ++j) all.push_back({draw(), j % 3, j});
  auto want = all;
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  sort_by_key(all, std::less<Key>{}, threads);
  ASSERT_EQ(all.size(), want.size());
  for (std::size_t j = 0; j < n; ++j) {
    ASSERT_FALSE(all[j].key < want[j].key || want[j].key < all[j].key) << "position " << j;
    ASSERT_EQ(all[j].local, want[j].local) << "position " << j << ": equal keys keep their order";
  }
}

}  // namespace

TEST(GroupByDictionary, RadixSortOfKeyWordsMatchesAComparisonSort) {
  std::mt19937_64 rng(7);
  for (int threads : {1, 3}) {
    expect_sorted_like_std<std::uint64_t>([&] { return rng() % 5000 * 0x100000001ull; }, 20000, threads);
    expect_sorted_like_std<TwoWords>([&] { return TwoWords{rng() % 7, rng() % 3000 << 40}; }, 20000, threads);
    expect_sorted_like_std<TwoWords>([&] { return TwoWords{rng(), rng()}; }, 5000, threads);
  }
}

namespace {

struct MulHash {
  std::uint64_t operator()(std::uint64_t k) const { return (k ^ (k >> 29)) * 0x9E3779B97F4A7C15ull; }
};

// encode_dictionary over `keys` (kMissing: a missing row): each row's code is its key's rank
// among the distinct keys, a missing row's the number of them, whatever the thread count.
constexpr std::uint64_t kMissing = UINT64_MAX;

Dictionary<std::uint64_t> expect_ranks(const std::vector<std::uint64_t>& keys, int threads) {
  LocalCodes codes;
  auto d = encode_dictionary<std::uint64_t, MulHash>(
      keys.size(), threads, [&](std::size_t i) { return keys[i]; }, [&](std::size_t i) { return keys[i] != kMissing; },
      std::less<std::uint64_t>{}, codes);
  std::vector<std::uint64_t> distinct;
  for (auto k : keys)
    if (k != kMissing) distinct.push_back(k);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  EXPECT_EQ(d.sorted.size(), distinct.size());
  EXPECT_EQ(d.missing, std::count(keys.begin(), keys.end(), kMissing) > 0);
  std::vector<std::uint32_t> got(keys.size());
  codes.codes(0, keys.size(), got.data());
  for (std::size_t j = 0; j < distinct.size() && j < d.sorted.size(); ++j) {
    EXPECT_EQ(d.sorted[j], distinct[j]) << "rank " << j;
    EXPECT_EQ(keys[d.rows[j]], distinct[j]) << "the row given for rank " << j << " holds another key";
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::uint32_t want =
        keys[i] == kMissing ? static_cast<std::uint32_t>(distinct.size())
                            : static_cast<std::uint32_t>(std::lower_bound(distinct.begin(), distinct.end(), keys[i]) -
                                                         distinct.begin());
    if (got[i] != want) {
      ADD_FAILURE() << "row " << i << " (" << threads << " threads): code " << got[i] << ", want " << want;
      break;
    }
  }
  return d;
}

}  // namespace

TEST(GroupByDictionary, PartitionsOnlyForManyKeysOnSeveralThreads) {
  EXPECT_EQ(dictionary_partition_bits(1'000'000, 1), 0);
  EXPECT_EQ(dictionary_partition_bits(1000, 16), 0);
  EXPECT_EQ(dictionary_partition_bits(100'000, 2), 0);    // two 6 MB tables: in the cache
  EXPECT_EQ(dictionary_partition_bits(1'000'000, 2), 8);  // 244 keys a partition wanted: 256 partitions
  EXPECT_EQ(dictionary_partition_bits(1'000'000, 16), 8);
  EXPECT_EQ(dictionary_partition_bits(1 << 16, 16), 6);               // at least four partitions a thread
  EXPECT_EQ(dictionary_partition_bits(std::size_t{1} << 40, 2), 12);  // at most 2^12
}

// Many keys each met a few times, by rows spread over every thread's share, with missing rows:
// numbered by partition on several threads, per thread on one, the same codes either way.
TEST(GroupByDictionary, ManyKeysNumberedByPartitionRankAsTheyDoPerThread) {
  std::mt19937_64 rng(11);
  std::vector<std::uint64_t> keys(600'001);  // some 3·10^5 keys: past the cache in 3 threads' tables
  for (auto& k : keys) k = rng() % 9 == 0 ? kMissing : (rng() % 400'000) * 0x10000000001ull;
  keys[0] = 0;  // the smallest key, and the largest one there is
  keys[1] = kMissing - 1;
  for (int threads : {1, 3, 8}) {
    SCOPED_TRACE(threads);
    const auto d = expect_ranks(keys, threads);
    EXPECT_EQ(d.by_partition, threads > 1);
  }
  // Few keys stay per thread.
  for (auto& k : keys) k = k == kMissing ? k : k % 97;
  EXPECT_FALSE(expect_ranks(keys, 4).by_partition);
}

// Every row missing, one row, and all rows one key.
TEST(GroupByDictionary, EdgeCasesRankOnEveryPath) {
  expect_ranks({}, 3);
  expect_ranks({kMissing, kMissing}, 3);
  expect_ranks({42}, 3);
  expect_ranks(std::vector<std::uint64_t>(100'000, 5), 3);
}

// A load that stops the pass (a string too long for its key type) leaves an empty dictionary,
// per thread (2 threads) and by partition (8).
TEST(GroupByDictionary, AStoppedPassGivesNoKeys) {
  std::vector<std::uint64_t> keys(200'000);
  for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = i * 7919 % 100'003;
  for (int threads : {2, 8}) {
    std::atomic<bool> stop{false};
    LocalCodes codes;
    auto d = encode_dictionary<std::uint64_t, MulHash>(
        keys.size(), threads,
        [&](std::size_t i) {
          if (i == 150'001) stop = true;  // not a row the sample reads
          return keys[i];
        },
        [](std::size_t) { return true; }, std::less<std::uint64_t>{}, codes, &stop);
    EXPECT_TRUE(stop.load());
    EXPECT_TRUE(d.sorted.empty()) << threads << " threads";
  }
}

TEST(GroupByOutput, RunningSumsInBlocksAreTheSerialOnes) {
  std::mt19937_64 rng(3);
  for (std::size_t n : {0ul, 1ul, 65535ul, 65536ul, 200'001ul}) {
    std::vector<std::uint64_t> a(n);
    for (auto& v : a) v = rng() % 1000;
    std::vector<std::uint64_t> want(n);
    std::partial_sum(a.begin(), a.end(), want.begin());
    for (int threads : {1, 3, 7}) {
      auto got = a;
      running_sums(got.data(), n, threads);
      EXPECT_EQ(got, want) << n << " elements, " << threads << " threads";
    }
  }
}

TEST(GroupByOutput, StringColumnsHoldEveryRowInOrder) {
  const std::size_t n = 100'003;  // past the blocks' size, odd
  auto value = [](std::size_t i) -> std::optional<std::string_view> {
    static const std::string words[] = {"", "a", "longer than sixteen bytes", "id0000042"};
    if (i % 11 == 5) return std::nullopt;
    return words[i % 4];
  };
  const Column c = build_strings("s", n, 3, value);
  ASSERT_EQ(c.length, n);
  for (std::size_t i = 0; i < n; ++i) {
    ASSERT_EQ(c.present(i), value(i).has_value()) << i;
    if (c.present(i)) {
      ASSERT_EQ(c.string(i), *value(i)) << i;
    }
  }
}
