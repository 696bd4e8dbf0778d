#include "mapreduce/word_order.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <parallel/algorithm>

#include "sort/cpu_radix.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::mapreduce::detail {

namespace {

// Tie runs this long are sorted after the others, each by every thread.
constexpr std::size_t kLongTieRun = std::size_t{1} << 15;

}  // namespace

std::vector<std::size_t> word_count_order(std::span<const std::string_view> words,
                                          std::span<const std::uint64_t> counts, int threads) {
  const std::size_t n = words.size();
  const int T = n < 16384 ? 1 : std::max(1, threads);
  const std::size_t piece = std::max<std::size_t>(4096, (n + 4 * std::size_t(T) - 1) / (4 * std::size_t(T)));
  std::vector<std::uint64_t> keys(n);
  std::vector<std::size_t> order(n);
  // Keys on every thread: reading each word's first bytes misses the cache once per word.
  for_each_piece(n, piece, T, [&](std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) {
      keys[i] = word_order_key(counts[i], word_prefix(words[i]));
      order[i] = i;
    }
  });
  tandem::detail::cpu_radix_sort<std::uint64_t, std::size_t>(keys, order, false, T);

  // Runs of equal keys (the same count and first 6 bytes, or 65,535 occurrences and more) are
  // ordered as words: short runs by the thread of the piece they start in, long ones after.
  const auto before = [&](std::size_t a, std::size_t b) {
    if (counts[a] != counts[b]) return counts[a] > counts[b];
    return words[a] < words[b];  // as unsigned char (char_traits<char>)
  };
  std::vector<std::pair<std::size_t, std::size_t>> long_runs;
  std::mutex long_runs_mutex;
  for_each_piece(n, piece, T, [&](std::size_t lo, std::size_t hi) {
    std::size_t i = lo;
    while (i > 0 && i < hi && keys[i] == keys[i - 1]) ++i;  // a run begun in the piece before
    for (std::size_t j; i < hi; i = j) {
      for (j = i + 1; j < n && keys[j] == keys[i];) ++j;
      if (j - i >= kLongTieRun) {
        const std::lock_guard lock(long_runs_mutex);
        long_runs.emplace_back(i, j);
      } else if (j - i > 1) {
        std::sort(order.begin() + std::ptrdiff_t(i), order.begin() + std::ptrdiff_t(j), before);
      }
    }
  });
  for (const auto& [i, j] : long_runs) {
    if (T > 1)
      __gnu_parallel::sort(order.begin() + std::ptrdiff_t(i), order.begin() + std::ptrdiff_t(j), before,
                           __gnu_parallel::default_parallel_tag(T));
    else std::sort(order.begin() + std::ptrdiff_t(i), order.begin() + std::ptrdiff_t(j), before);
  }
  return order;
}

}  // namespace tandem::mapreduce::detail
