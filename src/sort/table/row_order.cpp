#include "row_order.hpp"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <utility>

#include "sort/cpu_radix.hpp"
#include "tandem/core/gather.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/uninit_allocator.hpp"

namespace tandem::detail {
namespace {

constexpr std::size_t kSmallRun = 64;  // runs this short are sorted by comparisons

struct Run {
  std::size_t begin, end;
};

// The maximal runs of two or more positions in [0, n) where same(i - 1, i) holds throughout,
// found on T threads (each scans a share that starts at a run's start).
template <class Same>
std::vector<Run> tied_runs(std::size_t n, Same same, int T) {
  const std::size_t parts = static_cast<std::size_t>(T);
  std::vector<std::size_t> start(parts + 1, n);
  std::vector<std::vector<Run>> found(parts);
  parallel_for(parts, T, [&](std::size_t t) {
    std::size_t s = n * t / parts;
    while (s > 0 && s < n && same(s - 1, s)) ++s;
    start[t] = s;
  });
  parallel_for(parts, T, [&](std::size_t t) {
    const std::size_t e = t + 1 < parts ? std::max(start[t], start[t + 1]) : n;
    for (std::size_t i = start[t]; i < e;) {
      std::size_t j = i + 1;
      while (j < e && same(j - 1, j)) ++j;
      if (j - i > 1) found[t].push_back({i, j});
      i = j;
    }
  });
  std::vector<Run> runs;
  for (auto& f : found) runs.insert(runs.end(), f.begin(), f.end());
  return runs;
}

// Sorts the runs: those holding more than 1/(2T) of the rows one after the other with T threads
// each, the rest side by side with one thread each.
template <class SortRun>
void sort_runs(const std::vector<Run>& runs, std::size_t n, int T, SortRun sort_run) {
  std::vector<Run> large, small;
  for (const Run& r : runs) (T > 1 && r.end - r.begin > n / (2 * std::size_t(T)) ? large : small).push_back(r);
  for (const Run& r : large) sort_run(r, T);
  parallel_for(small.size(), T, [&](std::size_t i) { sort_run(small[i], 1); });
}

// Orders rows (equal on the words before w, in input order) by words w … last - 1, stably.
// word_w: word w of each of the rows, already gathered (or null: read here).
void sort_by_words(const KeyWords& k, std::span<std::size_t> rows, std::size_t w, std::size_t last, int T,
                   const std::uint64_t* word_w = nullptr) {
  if (w >= last || rows.size() < 2) return;
  if (rows.size() <= kSmallRun) {
    if (word_w != nullptr) {
      // By the gathered word first (no random reads); only rows still tied read the next words.
      std::pair<std::uint64_t, std::size_t> pairs[kSmallRun];
      for (std::size_t i = 0; i < rows.size(); ++i) pairs[i] = {word_w[i], rows[i]};
      std::stable_sort(pairs, pairs + rows.size(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = pairs[i].second;
      for (std::size_t i = 0; i < rows.size() && w + 1 < last;) {
        std::size_t j = i + 1;
        while (j < rows.size() && pairs[j].first == pairs[i].first) ++j;
        sort_by_words(k, rows.subspan(i, j - i), w + 1, last, 1);
        i = j;
      }
      return;
    }
    std::stable_sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
      for (std::size_t v = w; v < last; ++v)
        if (k.at(v, a) != k.at(v, b)) return k.at(v, a) < k.at(v, b);
      return false;
    });
    return;
  }
  std::vector<std::uint64_t> word(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) word[i] = word_w ? word_w[i] : k.at(w, rows[i]);
  cpu_radix_sort<std::uint64_t, std::uint64_t>(word, rows, false, T);
  if (w + 1 == last) return;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    while (j < rows.size() && word[j] == word[i]) ++j;
    sort_by_words(k, rows.subspan(i, j - i), w + 1, last, 1);
    i = j;
  }
}

}  // namespace

std::vector<std::size_t> sorted_row_order(const Table& table, const KeyLayout& l, const KeyWords& k, int threads) {
  const int T = threads > 0 ? threads : default_threads();
  const std::size_t n = k.rows;
  std::vector<std::size_t> rows(n);
  if (n == 0) return rows;
  const std::size_t last = std::max<std::size_t>(1, (l.exact_bytes + 7) / 8);  // words that decide
  {
    std::vector<std::uint64_t, UninitAllocator<std::uint64_t>> index(n), first(n);
#pragma omp parallel for num_threads(T) schedule(static)
    for (std::size_t i = 0; i < n; ++i) index[i] = i;
    cpu_radix_sort_copy<std::uint64_t, std::uint64_t>({k.word(0), n}, index, first, rows, false, T);
    if (last > 1) {
      const auto runs = tied_runs(
          n, [&](std::size_t a, std::size_t b) { return first[a] == first[b]; }, T);
      // The second word of every row in first-word order, gathered once on every core (prefetched):
      // when most rows tie on the first word (a short string key, then a number), sorting each
      // tie by comparisons read it at random several times per row.
      std::vector<std::uint64_t, UninitAllocator<std::uint64_t>> second;
      if (!runs.empty()) {
        second.resize(n);
        gather_prefetched(k.word(1), rows.data(), n, second.data(), T);
      }
      sort_runs(runs, n, T, [&](Run r, int t) {
        sort_by_words(k, std::span(rows).subspan(r.begin, r.end - r.begin), 1, last, t, second.data() + r.begin);
      });
    }
  }
  if (l.first_tie_break >= 0) {
    const auto from = static_cast<std::size_t>(l.first_tie_break);
    const auto runs = tied_runs(
        n, [&](std::size_t a, std::size_t b) { return compare_key_bytes(k, l.exact_bytes, rows[a], rows[b]) == 0; }, T);
    sort_runs(runs, n, T, [&](Run r, int) {
      std::stable_sort(rows.begin() + r.begin, rows.begin() + r.end,
                       [&](std::size_t a, std::size_t b) { return compare_rows_from(table, l, from, a, b) < 0; });
    });
  }
  return rows;
}

std::vector<std::size_t> first_rows(const Table& table, const KeyLayout& l, const KeyWords& k, std::size_t want,
                                    int threads) {
  const std::size_t n = k.rows;
  if (want == 0) return {};
  if (want >= n) return sorted_row_order(table, l, k, threads);
  const int T = threads > 0 ? threads : default_threads();
  auto less = [&](std::size_t a, std::size_t b) {
    const int c = compare_keys(table, l, k, a, b);
    return c < 0 || (c == 0 && a < b);
  };
  const std::size_t parts = static_cast<std::size_t>(T);
  std::vector<std::vector<std::size_t>> kept(parts);
  parallel_for(parts, T, [&](std::size_t t) {
    const std::size_t cap = std::max<std::size_t>(4 * want, 4096);
    auto& c = kept[t];
    c.reserve(cap);
    const std::uint64_t* first = k.word(0);
    std::uint64_t bound = ~std::uint64_t{0};  // rows with a larger first word cannot be among the k
    auto cut = [&] {
      std::nth_element(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(want - 1), c.end(), less);
      c.resize(want);
      bound = first[c.back()];
    };
    for (std::size_t i = n * t / parts, e = n * (t + 1) / parts; i < e; ++i) {
      if (first[i] > bound) continue;
      c.push_back(i);
      if (c.size() == cap) cut();
    }
    if (c.size() > want) cut();
  });
  std::vector<std::size_t> rows;
  for (auto& c : kept) rows.insert(rows.end(), c.begin(), c.end());
  std::sort(rows.begin(), rows.end(), less);
  rows.resize(std::min(want, rows.size()));
  return rows;
}

}  // namespace tandem::detail
