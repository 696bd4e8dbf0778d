// The CPU group-by's dictionary ranking: keys made of 64-bit words sort by a radix sort of the
// words, in the same order a comparison sort gives.
#include <gtest/gtest.h>

#include <random>

#include "groupby/cpu_dictionary.hpp"

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
