// Merging sorted runs into one sorted array, in parallel and in one pass over memory (the runs a
// rank receives from its peers in the distributed sort; the windows of an array sort by runs). The output is cut into
// equal parts (a few per thread) by a multiway co-rank; each part is merged in chunks that stay in cache: a chunk's
// share of every run is found by the co-rank again, and merged pairwise, level by level, with a branch-free two-way
// merge through two chunk-sized scratch buffers, the last level into the output. Stable: on equal keys the earlier run
// goes first.
//
// Why not a loser tree: its replay is a chain of dependent loads and selections, and measured
// about 1.7x slower per element than the two-way levels over the same data (bench_dist_merge_runs).
// Why not __gnu_parallel::multiway_merge: it merges sequences of single elements, while keys and
// values live here in separate arrays (and values may be absent).
#pragma once
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::detail {

// tandem's key order, reversed for descending sorts, as unsigned bits: the order of every sorted
// run, and the merge's.
template <class K>
struct KeyOrder {
  using U = ordered_bits_t<K>;
  U flip;  // all ones for descending: the order is ascending in (bits ^ flip)
  U bits(K k) const { return U(to_ordered(k) ^ flip); }
  bool operator()(K a, K b) const { return bits(a) < bits(b); }
};

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

// c ? a : b by masking the bits: a ternary in the merge loop may become a branch, and the merge's
// choices are as random as the keys.
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

// Stable merge of a and b into out from both ends at once: the front takes the smaller head (ties:
// a), the back the larger tail (ties: b), until each has written its half. The two chains of
// dependent loads run side by side; with bounds that hold for a whole stretch, the inner loop
// checks none.
template <bool HasValues, class K, class V, class Less>
void merge_two_ends(const K* ka, const V* va, std::size_t na, const K* kb, const V* vb, std::size_t nb, K* ko, V* vo,
                    Less less) {
  const std::size_t half = (na + nb) / 2;
  std::size_t i = 0, j = 0, o = 0;             // front: next to take, next to write
  std::size_t ia = na, jb = nb, ob = na + nb;  // back: one past each
  auto front = [&] {
    const K a = ka[i], b = kb[j];
    const bool take_b = less(b, a);
    ko[o] = pick(take_b, b, a);
    if constexpr (HasValues) vo[o] = pick(take_b, vb[j], va[i]);
    j += take_b;
    i += !take_b;
    ++o;
  };
  auto back = [&] {
    const K a = ka[ia - 1], b = kb[jb - 1];
    const bool take_a = less(b, a);
    --ob;
    ko[ob] = pick(take_a, a, b);
    if constexpr (HasValues) vo[ob] = pick(take_a, va[ia - 1], vb[jb - 1]);
    ia -= take_a;
    jb -= !take_a;
  };
  for (std::size_t s; (s = std::min({half - o, na - i, nb - j, ob - half, ia, jb})) > 0;)
    for (std::size_t k = 0; k < s; ++k) {
      front();
      back();
    }
  while (o < half && i < na && j < nb) front();
  for (; o < half && i < na; ++i, ++o) {  // b ran out before the middle
    ko[o] = ka[i];
    if constexpr (HasValues) vo[o] = va[i];
  }
  for (; o < half && j < nb; ++j, ++o) {
    ko[o] = kb[j];
    if constexpr (HasValues) vo[o] = vb[j];
  }
  while (ob > half && ia > 0 && jb > 0) back();
  for (; ob > half && ia > 0; --ia) {
    ko[--ob] = ka[ia - 1];
    if constexpr (HasValues) vo[ob] = va[ia - 1];
  }
  for (; ob > half && jb > 0; --jb) {
    ko[--ob] = kb[jb - 1];
    if constexpr (HasValues) vo[ob] = vb[jb - 1];
  }
}

// Stable merge of a (na keys, values va) and b (nb) into out; vo null: keys only.
template <class K, class V, class Less>
void merge_range(const K* ka, const V* va, std::size_t na, const K* kb, const V* vb, std::size_t nb, K* ko, V* vo,
                 Less less) {
  if (vo) merge_two_ends<true>(ka, va, na, kb, vb, nb, ko, vo, less);
  else merge_two_ends<false>(ka, va, na, kb, vb, nb, ko, vo, less);
}

// A stretch of keys (and values, null for keys only) to merge: part of a run, or of a scratch
// buffer (which the next level but one overwrites).
template <class K, class V>
struct Piece {
  const K* key;
  const V* value;
  std::size_t size;
  bool in_scratch;
};

// Merges the pieces pairwise, level by level, each level into one of two scratch buffers of a
// chunk each (small enough to stay in cache), the last level into out. A piece left over at an
// odd count moves up as it is, unless it lies in the buffer the next level writes: then it is copied.
template <class K, class V, class Less>
void merge_pieces(std::vector<Piece<K, V>> pieces, K* ko, V* vo, K* const scratch_k[2], V* const scratch_v[2],
                  Less less) {
  int buf = 0;
  std::vector<Piece<K, V>> next;
  while (pieces.size() > 2) {
    K* dk = scratch_k[buf];
    V* dv = vo ? scratch_v[buf] : nullptr;
    next.clear();
    std::size_t at = 0;
    for (std::size_t i = 0; i + 1 < pieces.size(); i += 2) {
      const Piece<K, V>&a = pieces[i], &b = pieces[i + 1];
      merge_range(a.key, a.value, a.size, b.key, b.value, b.size, dk + at, dv ? dv + at : nullptr, less);
      next.push_back({dk + at, dv ? dv + at : nullptr, a.size + b.size, true});
      at += a.size + b.size;
    }
    if (pieces.size() % 2) {
      const Piece<K, V>& odd = pieces.back();
      if (!odd.in_scratch) {
        next.push_back(odd);
      } else {
        std::copy(odd.key, odd.key + odd.size, dk + at);
        if (dv) std::copy(odd.value, odd.value + odd.size, dv + at);
        next.push_back({dk + at, dv ? dv + at : nullptr, odd.size, true});
      }
    }
    std::swap(pieces, next);
    buf ^= 1;
  }
  if (pieces.size() == 2) {
    const Piece<K, V>&a = pieces[0], &b = pieces[1];
    merge_range(a.key, a.value, a.size, b.key, b.value, b.size, ko, vo, less);
  } else if (pieces.size() == 1) {
    std::copy(pieces[0].key, pieces[0].key + pieces[0].size, ko);
    if (vo) std::copy(pieces[0].value, pieces[0].value + pieces[0].size, vo);
  }
}

// Merges the runs' elements from[r] .. to[r] into out, a chunk of `step` elements at a time (with
// two runs, all at once: one level needs no scratch).
template <class K, class V, class Less>
void merge_part(const std::vector<std::span<const K>>& key_runs, const std::vector<const V*>& value_runs,
                const std::size_t* from, const std::size_t* to, K* ko, V* vo, std::size_t step, K* const sk[2],
                V* const sv[2], Less less) {
  const std::size_t p = key_runs.size();
  std::vector<std::span<const K>> rest(p);  // what is left of each run
  std::vector<const V*> rest_v(p);
  std::size_t left = 0;
  for (std::size_t r = 0; r < p; ++r) {
    rest[r] = key_runs[r].subspan(from[r], to[r] - from[r]);
    rest_v[r] = vo ? value_runs[r] + from[r] : nullptr;
    left += to[r] - from[r];
  }
  std::vector<std::size_t> take(p);
  while (left) {
    const std::size_t c = p <= 2 ? left : std::min(step, left);
    multiway_co_rank(c, std::span<const std::span<const K>>(rest), less, take.data());
    std::vector<Piece<K, V>> pieces;
    for (std::size_t r = 0; r < p; ++r) {
      if (take[r]) pieces.push_back({rest[r].data(), rest_v[r], take[r], false});
      rest[r] = rest[r].subspan(take[r]);
      if (rest_v[r]) rest_v[r] += take[r];
    }
    merge_pieces(std::move(pieces), ko, vo, sk, sv, less);
    ko += c;
    if (vo) vo += c;
    left -= c;
  }
}

// Merges the runs key_runs (values value_runs[r] beside run r's keys, or all null: keys only) into
// out_keys/out_values, stably: on equal keys the earlier run first. The output is cut into a few
// equal parts per thread, none shorter than min_part, and merged in chunks of `chunk` elements (0:
// what fits in 128 KiB); tests pass small sizes to cut tiny inputs.
template <class K, class V, class Less>
void merge_spans(std::vector<std::span<const K>> key_runs, std::vector<const V*> value_runs, K* out_keys, V* out_values,
                 Less less, int threads, std::size_t min_part = 4096, std::size_t chunk = 0) {
  for (std::size_t r = key_runs.size(); r-- > 0;)  // the co-rank wants no empty run
    if (key_runs[r].empty()) {
      key_runs.erase(key_runs.begin() + std::ptrdiff_t(r));
      value_runs.erase(value_runs.begin() + std::ptrdiff_t(r));
    }
  std::size_t n = 0;
  for (const auto& r : key_runs) n += r.size();
  if (n == 0) return;
  const bool values = out_values != nullptr;
  const std::size_t p = key_runs.size();
  const std::size_t t = std::size_t(std::max(threads, 1));
  const std::size_t parts = std::max<std::size_t>(1, std::min(t * 4, n / std::max<std::size_t>(min_part, 1)));
  constexpr std::size_t chunk_bytes = 128 << 10;  // keys and values of one chunk; two in scratch
  const std::size_t step =
      std::max<std::size_t>(1, chunk ? chunk : chunk_bytes / (sizeof(K) + (values ? sizeof(V) : 0)));
  std::vector<std::size_t> cut((parts + 1) * p);  // cut[k * p + r]: where part k starts in run r
  const int team = int(std::min(t, parts));
  parallel_for(parts + 1, team, [&](std::size_t k) {
    multiway_co_rank(n * k / parts, std::span<const std::span<const K>>(key_runs), less, &cut[k * p]);
  });
  struct Scratch {  // each thread's: its allocation may fail, which parallel_for_with carries out
    std::vector<K> keys;
    std::vector<V> values;
  };
  parallel_for_with(
      parts, team,
      [&] {
        return Scratch{std::vector<K>(p > 2 ? 2 * step : 0), std::vector<V>(p > 2 && values ? 2 * step : 0)};
      },
      [&](Scratch& s, std::size_t k) {
        K* const sk[2] = {s.keys.data(), s.keys.data() + step};
        V* const sv[2] = {s.values.data(), s.values.data() + step};
        const std::size_t o = n * k / parts;
        merge_part(key_runs, value_runs, &cut[k * p], &cut[(k + 1) * p], out_keys + o,
                   values ? out_values + o : nullptr, step, sk, sv, less);
      });
}

// Merges runs given by their lengths, back to back in keys/values, as merge_spans does. values may
// be null (keys only).
template <class K, class V, class Less>
void merge_runs(const K* keys, const V* values, std::span<const std::uint64_t> runs, K* out_keys, V* out_values,
                Less less, int threads, std::size_t min_part = 4096, std::size_t chunk = 0) {
  std::vector<std::span<const K>> key_runs;
  std::vector<const V*> value_runs;
  std::size_t n = 0;
  for (const std::uint64_t len : runs) {
    key_runs.emplace_back(keys + n, std::size_t(len));
    value_runs.push_back(values ? values + n : nullptr);
    n += std::size_t(len);
  }
  merge_spans(std::move(key_runs), std::move(value_runs), out_keys, values ? out_values : nullptr, less, threads,
              min_part, chunk);
}

}  // namespace tandem::detail
