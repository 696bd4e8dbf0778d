// validate()'s checks on all threads: a list is cut into one chunk per thread, each thread checks
// its chunk's scores and ids and marks the ids in a bitmap of its own, and the bitmaps are then
// combined word by word: an id marked in two of them, or twice in one, is a duplicate. A list of
// m entries, every id below m and none twice, holds every id once. (One thread per list took
// 25-50 ms per 10M entries, and four lists kept four threads busy.)
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "internal.hpp"

namespace tandem::topk::detail {
namespace {

// Chunk [lo, hi) of list `list`: finite scores, descending (against the entry before the chunk
// too), ids below m, marked in `seen` (zeroed here). False at the first problem.
bool check_chunk(std::span<const Entry> list, std::uint64_t lo, std::uint64_t hi, std::uint64_t m,
                 std::uint64_t* seen) {
  std::fill(seen, seen + (m + 63) / 64, std::uint64_t{0});
  float prev = lo > 0 ? list[lo - 1].score : INFINITY;
  for (std::uint64_t p = lo; p < hi; ++p) {
    const Entry e = list[p];
    if (!std::isfinite(e.score) || e.score > prev || e.id >= m) return false;
    prev = e.score;
    std::uint64_t& w = seen[e.id / 64];
    const std::uint64_t bit = std::uint64_t{1} << (e.id % 64);
    if (w & bit) return false;
    w |= bit;
  }
  return true;
}

}  // namespace

bool lists_pass_checks(const Lists& l, int threads) {
  const std::uint64_t m = l.m, words = (m + 63) / 64;
  const int T = std::max(1, threads);
  std::vector<std::uint64_t> bitmaps(std::size_t(T) * words);
  for (std::uint32_t i = 0; i < l.n; ++i) {
    const auto list = l.list(i);
    std::atomic<bool> ok{true};
#pragma omp parallel num_threads(T)
    {
#pragma omp for schedule(static)
      for (int t = 0; t < T; ++t) {
        const std::uint64_t lo = m * std::uint64_t(t) / std::uint64_t(T),
                            hi = m * std::uint64_t(t + 1) / std::uint64_t(T);
        if (!check_chunk(list, lo, hi, m, bitmaps.data() + std::size_t(t) * words))
          ok.store(false, std::memory_order_relaxed);
      }
      // The implicit barrier: every bitmap is complete. An id in two chunks is a duplicate.
#pragma omp for schedule(static)
      for (std::int64_t w = 0; w < std::int64_t(words); ++w) {
        std::uint64_t all = 0;
        for (int t = 0; t < T; ++t) {
          const std::uint64_t b = bitmaps[std::size_t(t) * words + std::size_t(w)];
          if (all & b) ok.store(false, std::memory_order_relaxed);
          all |= b;
        }
      }
    }
    if (!ok.load()) return false;
  }
  return true;
}

}  // namespace tandem::topk::detail
