// Merging the sorted runs a rank receives from its peers into one sorted array, in parallel and in
// one pass over the data: the output is cut into equal ranges, a multiway co-rank finds where each
// range starts in every run, and each range is merged from its P sub-ranges with a loser tree (a
// branch-free two-way merge for two runs). Stable: on equal keys the earlier run goes first.
//
// Hand-written rather than __gnu_parallel::multiway_merge: that merges sequences of single
// elements, while keys and values live here in separate arrays (and values may be absent).
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tandem::dist {

// Where the first i elements of the stable merge of the runs end: s[r] elements come from run r,
// and the s[r] add up to i. Elements are ordered by (key, run). Bisection with a window
// [lo, hi] per run that holds s[r]: the middle element of the widest window is ranked against
// every run (a binary search inside that run's window; a count outside the window comes back
// clamped to it), and its rank narrows every window at once. A clamped rank equal to i is exact.
template <class K, class Less>
void multiway_co_rank(std::size_t i, std::span<const std::span<const K>> runs, Less less, std::size_t* s) {
  const std::size_t p = runs.size();
  std::size_t n = 0;
  for (const auto& r : runs) n += r.size();
  std::vector<std::size_t> lo(p), hi(p), c(p);
  for (std::size_t q = 0; q < p; ++q) {
    const std::size_t len = runs[q].size();
    lo[q] = i + len > n ? i + len - n : 0;  // the other runs cannot hold more than n - len
    hi[q] = std::min(i, len);
  }
  for (;;) {
    std::size_t r = p, widest = 0;
    for (std::size_t q = 0; q < p; ++q)
      if (hi[q] - lo[q] > widest) widest = hi[q] - lo[q], r = q;
    if (r == p) break;  // every window closed: lo == hi == s
    const std::size_t m = lo[r] + widest / 2;
    const K& x = runs[r][m];
    std::size_t rank = 0;
    for (std::size_t q = 0; q < p; ++q) {
      const auto first = runs[q].begin() + std::ptrdiff_t(lo[q]), last = runs[q].begin() + std::ptrdiff_t(hi[q]);
      // Before (x, r): smaller keys, and equal keys of earlier runs.
      c[q] = q == r  ? m
             : q < r ? std::size_t(std::upper_bound(first, last, x, less) - runs[q].begin())
                     : std::size_t(std::lower_bound(first, last, x, less) - runs[q].begin());
      rank += c[q];
    }
    if (rank == i) {
      lo = c;
      break;
    }
    if (rank < i) {  // x is among the first i, and so is everything before it
      lo = c;
      lo[r] = m + 1;
    } else {  // x and everything after it are not
      hi = c;
    }
  }
  std::copy(lo.begin(), lo.end(), s);
}

// Stable merge of a (na keys, values va) and b (nb) into out. Branch-free: the comparison picks
// with a conditional move, so random keys cost no mispredictions.
template <class K, class V, class Less>
void merge_range(const K* ka, const V* va, std::size_t na, const K* kb, const V* vb, std::size_t nb, K* ko, V* vo,
                 Less less) {
  std::size_t i = 0, j = 0, o = 0;
  while (i < na && j < nb) {
    const bool take_b = less(kb[j], ka[i]);
    ko[o] = take_b ? kb[j] : ka[i];
    if (vo) vo[o] = take_b ? vb[j] : va[i];
    j += take_b;
    i += !take_b;
    ++o;
  }
  std::copy(ka + i, ka + na, ko + o);
  if (vo) std::copy(va + i, va + na, vo + o);
  o += na - i;
  std::copy(kb + j, kb + nb, ko + o);
  if (vo) std::copy(vb + j, vb + nb, vo + o);
}

// One sub-range of a run being merged: the next key and value, and the end.
template <class K, class V>
struct RunCursor {
  const K* key;
  const V* value;  // null for keys only
  const K* end;
};

// Stable merge of the runs' sub-ranges (at least three) into out, `count` elements in all, with a
// loser tree: each element costs log2(runs) comparisons, replayed from its leaf with conditional
// swaps. An exhausted run stands at `last` (a key no element follows) under a tag past every live
// run, so it loses to every element; the count stops the merge before any such stand-in wins.
template <class K, class V, class Less>
void merge_loser_tree(std::vector<RunCursor<K, V>> runs, std::size_t count, const K& last, K* ko, V* vo, Less less) {
  struct Entry {
    K key;
    std::uint32_t tag;  // the leaf while its run is live, leaf + leaves once exhausted
  };
  const std::uint32_t leaves = std::bit_ceil(std::uint32_t(runs.size()));
  auto before = [&](const Entry& a, const Entry& b) {
    return less(a.key, b.key) || (!less(b.key, a.key) && a.tag < b.tag);
  };
  auto head = [&](std::uint32_t q) {
    return q < runs.size() && runs[q].key < runs[q].end ? Entry{*runs[q].key, q} : Entry{last, q + leaves};
  };
  // Bottom-up tournament: winners[n] won below node n, losers[n] lost at it.
  std::vector<Entry> winners(2 * leaves), losers(leaves);
  for (std::uint32_t q = 0; q < leaves; ++q) winners[leaves + q] = head(q);
  for (std::uint32_t n = leaves - 1; n >= 1; --n) {
    const Entry &a = winners[2 * n], &b = winners[2 * n + 1];
    const bool a_wins = before(a, b);
    winners[n] = a_wins ? a : b;
    losers[n] = a_wins ? b : a;
  }
  Entry win = winners[1];
  for (std::size_t o = 0; o < count; ++o) {
    const std::uint32_t q = win.tag;
    ko[o] = win.key;
    if (vo) vo[o] = *runs[q].value++;
    ++runs[q].key;
    Entry cand = head(q);
    for (std::uint32_t n = (q + leaves) >> 1; n >= 1; n >>= 1) {
      const bool swap = before(losers[n], cand);
      const Entry up = swap ? losers[n] : cand;
      losers[n] = swap ? cand : losers[n];
      cand = up;
    }
    win = cand;
  }
}

// Merges runs (given by their lengths, back to back in keys/values) into out_keys/out_values,
// stably: on equal keys the earlier run first. values may be null (keys only). The output is cut
// into a few equal ranges per thread, none shorter than min_part (tests pass 1 to cut tiny inputs);
// each range is merged from its sub-range of every run.
template <class K, class V, class Less>
void merge_runs(const K* keys, const V* values, std::span<const std::uint64_t> runs, K* out_keys, V* out_values,
                Less less, int threads, std::size_t min_part = 4096) {
  std::vector<std::span<const K>> key_runs;  // the non-empty runs, in order
  std::vector<const V*> value_runs;
  std::size_t n = 0;
  for (const std::uint64_t len : runs) {
    if (len) {
      key_runs.emplace_back(keys + n, std::size_t(len));
      value_runs.push_back(values ? values + n : nullptr);
    }
    n += std::size_t(len);
  }
  if (n == 0) return;
  const std::size_t p = key_runs.size();
  const K last = std::max_element(key_runs.begin(), key_runs.end(), [&](const auto& a, const auto& b) {
                   return less(a.back(), b.back());
                 })->back();
  const std::size_t t = std::size_t(std::max(threads, 1));
  const std::size_t parts = std::max<std::size_t>(1, std::min(t * 4, n / std::max<std::size_t>(min_part, 1)));
  std::vector<std::size_t> cut((parts + 1) * p);  // cut[k * p + r]: where part k starts in run r
#pragma omp parallel num_threads(int(std::min(t, parts)))
  {
#pragma omp for schedule(static)
    for (std::size_t k = 0; k <= parts; ++k)
      multiway_co_rank(n * k / parts, std::span<const std::span<const K>>(key_runs), less, &cut[k * p]);
#pragma omp for schedule(static)
    for (std::size_t k = 0; k < parts; ++k) {
      const std::size_t* from = &cut[k * p];
      const std::size_t* to = &cut[(k + 1) * p];
      const std::size_t o = n * k / parts, count = n * (k + 1) / parts - o;
      K* ko = out_keys + o;
      V* vo = values ? out_values + o : nullptr;
      auto value_at = [&](std::size_t r, std::size_t at) { return values ? value_runs[r] + at : nullptr; };
      if (p == 1) {
        std::copy(key_runs[0].data() + from[0], key_runs[0].data() + to[0], ko);
        if (vo) std::copy(value_at(0, from[0]), value_at(0, to[0]), vo);
      } else if (p == 2) {
        merge_range(key_runs[0].data() + from[0], value_at(0, from[0]), to[0] - from[0], key_runs[1].data() + from[1],
                    value_at(1, from[1]), to[1] - from[1], ko, vo, less);
      } else {
        std::vector<RunCursor<K, V>> cursors(p);
        for (std::size_t r = 0; r < p; ++r)
          cursors[r] = {key_runs[r].data() + from[r], value_at(r, from[r]), key_runs[r].data() + to[r]};
        merge_loser_tree(std::move(cursors), count, last, ko, vo, less);
      }
    }
  }
}

}  // namespace tandem::dist
