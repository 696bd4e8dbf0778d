// Merging the sorted runs a rank receives from its peers into one sorted array, in parallel and in
// one pass over the data: the output is cut into equal ranges, a multiway co-rank finds where each
// range starts in every run, and each range is merged from its P sub-ranges with a loser tree (a
// branch-free two-way merge once two runs are left). Stable: on equal keys the earlier run goes first.
//
// Hand-written rather than __gnu_parallel::multiway_merge: that merges sequences of single
// elements, while keys and values live here in separate arrays (and values may be absent).
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
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

// c ? a : b by masking the bits, so that the compiler cannot turn it into a branch (it does for
// the loser tree's selections, and their outcome is as random as the keys).
template <class T>
T pick(bool c, T a, T b) {
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) {
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    const U mask = U(0) - U(c);
    return std::bit_cast<T>(U((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask)));
  } else {
    return c ? a : b;
  }
}

// The loser tree's hot loop: writes the winner, advances its run and replays its path to the
// root, until a run ends (returns the elements written). Keys and leaves of the nodes' losers in
// separate arrays, every choice a conditional move. Levels > 0 fixes the depth at compile time.
template <int Levels, class K, class V, class Less>
std::size_t replay_loser_tree(RunCursor<K, V>* runs, std::uint32_t levels, K* lost_key, std::uint32_t* lost_leaf,
                              K win_key, std::uint32_t win_leaf, K* ko, V* vo, Less less) {
  if constexpr (Levels > 0) levels = Levels;
  const std::uint32_t leaves = 1u << levels;
  std::size_t o = 0;
  for (;;) {
    RunCursor<K, V>& run = runs[win_leaf];
    ko[o] = win_key;
    if (vo) vo[o] = *run.value++;
    ++o;
    if (++run.key == run.end) return o;
    K key = *run.key;
    std::uint32_t leaf = win_leaf;
    std::uint32_t n = win_leaf + leaves;
    for (std::uint32_t d = 0; d < levels; ++d) {
      // Coming from the right, the loser kept at the node came from the left: it wins ties.
      const bool from_right = n & 1;
      n >>= 1;
      const K other = lost_key[n];
      const std::uint32_t other_leaf = lost_leaf[n];
      const bool swap = less(pick(from_right, key, other), pick(from_right, other, key)) != from_right;
      lost_key[n] = pick(swap, key, other);
      lost_leaf[n] = pick(swap, leaf, other_leaf);
      key = pick(swap, other, key);
      leaf = pick(swap, other_leaf, leaf);
    }
    win_key = key;
    win_leaf = leaf;
  }
}

// Stable merge of the runs' sub-ranges into out with a loser tree: each element costs log2(runs)
// comparisons. Ties go to the left subtree (the earlier runs), so one comparison a level keeps the
// merge stable. When a run ends, the tree is built again over the runs left (they stay in order,
// and the stand-ins that pad it to a power of two stay right of them); with two runs left, the
// branch-free two-way merge finishes.
template <class K, class V, class Less>
void merge_loser_tree(std::vector<RunCursor<K, V>> runs, const K& last, K* ko, V* vo, Less less) {
  std::vector<K> keys, lost_key;
  std::vector<std::uint32_t> leaf, lost_leaf;
  for (;;) {
    std::erase_if(runs, [](const RunCursor<K, V>& r) { return r.key == r.end; });
    if (runs.size() <= 2) break;
    const std::uint32_t leaves = std::bit_ceil(std::uint32_t(runs.size()));
    const std::uint32_t levels = std::uint32_t(std::countr_zero(leaves));
    // Bottom-up tournament: node n holds its subtree's winner (keys, leaf) and the loser at it
    // (lost_key, lost_leaf). Stand-ins hold `last`, a key no element follows: right of every run,
    // they never win a tie.
    keys.resize(2 * leaves);
    leaf.resize(2 * leaves);
    lost_key.resize(leaves);
    lost_leaf.resize(leaves);
    for (std::uint32_t q = 0; q < leaves; ++q) {
      keys[leaves + q] = q < runs.size() ? *runs[q].key : last;
      leaf[leaves + q] = q;
    }
    for (std::uint32_t n = leaves - 1; n >= 1; --n) {
      const std::uint32_t l = 2 * n, r = 2 * n + 1, w = less(keys[r], keys[l]) ? r : l;
      keys[n] = keys[w];
      leaf[n] = leaf[w];
      lost_key[n] = keys[w ^ 1];
      lost_leaf[n] = leaf[w ^ 1];
    }
    const auto replay = [&]<int Levels>() {
      return replay_loser_tree<Levels>(runs.data(), levels, lost_key.data(), lost_leaf.data(), keys[1], leaf[1], ko,
                                       vo, less);
    };
    const std::size_t written = levels == 2   ? replay.template operator()<2>()
                                : levels == 3 ? replay.template operator()<3>()
                                : levels == 4 ? replay.template operator()<4>()
                                              : replay.template operator()<0>();
    ko += written;
    if (vo) vo += written;
  }
  auto value = [&](std::size_t r) { return vo ? runs[r].value : nullptr; };
  if (runs.size() == 2)
    merge_range(runs[0].key, value(0), std::size_t(runs[0].end - runs[0].key), runs[1].key, value(1),
                std::size_t(runs[1].end - runs[1].key), ko, vo, less);
  else if (runs.size() == 1) {
    std::copy(runs[0].key, runs[0].end, ko);
    if (vo) std::copy(runs[0].value, runs[0].value + (runs[0].end - runs[0].key), vo);
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
      const std::size_t o = n * k / parts;
      K* ko = out_keys + o;
      V* vo = values ? out_values + o : nullptr;
      auto value_at = [&](std::size_t r, std::size_t at) { return values ? value_runs[r] + at : nullptr; };
      std::vector<RunCursor<K, V>> cursors(p);
      for (std::size_t r = 0; r < p; ++r)
        cursors[r] = {key_runs[r].data() + from[r], value_at(r, from[r]), key_runs[r].data() + to[r]};
      merge_loser_tree(std::move(cursors), last, ko, vo, less);
    }
  }
}

}  // namespace tandem::dist
