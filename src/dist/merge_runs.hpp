// Merging the sorted runs a rank receives from its peers into one sorted array, in parallel.
// Pairwise merges in a tree; each merge is cut into equal output ranges by co-ranking, so every
// thread merges the same number of elements. Stable: on equal keys the earlier run goes first.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tandem::dist {

// The number of elements taken from a among the first i of the stable merge of a and b.
template <class K, class Less>
std::size_t co_rank(std::size_t i, std::span<const K> a, std::span<const K> b, Less less) {
  std::size_t lo = i > b.size() ? i - b.size() : 0;
  std::size_t hi = std::min(i, a.size());
  while (lo < hi) {
    const std::size_t j = lo + (hi - lo) / 2;
    // a[j] belongs among the first i unless b[i-j-1] is strictly before it.
    if (i - j > 0 && !less(b[i - j - 1], a[j])) lo = j + 1;
    else hi = j;
  }
  return lo;
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

// Merges runs (given by their lengths, back to back in keys/values) into out_keys/out_values.
// keys/values are used as scratch. values may be null (keys only).
template <class K, class V, class Less>
void merge_runs(K* keys, V* values, std::vector<std::uint64_t> runs, K* out_keys, V* out_values, Less less,
                int threads) {
  const std::size_t n = [&] {
    std::uint64_t t = 0;
    for (auto r : runs) t += r;
    return std::size_t(t);
  }();
  K* src_k = keys;
  V* src_v = values;
  K* dst_k = out_keys;
  V* dst_v = out_values;
  bool in_out = false;  // where the current runs live
  while (runs.size() > 1) {
    std::vector<std::uint64_t> next;
    std::size_t at = 0;
    for (std::size_t r = 0; r < runs.size(); r += 2) {
      const std::size_t na = runs[r], nb = r + 1 < runs.size() ? runs[r + 1] : 0;
      const K* ka = src_k + at;
      const K* kb = ka + na;
      const V* va = src_v ? src_v + at : nullptr;
      const V* vb = va ? va + na : nullptr;
      const std::size_t total = na + nb;
      const int parts = int(std::max<std::size_t>(1, std::min<std::size_t>(std::size_t(threads), total / 4096 + 1)));
#pragma omp parallel for num_threads(parts) schedule(static)
      for (int t = 0; t < parts; ++t) {
        const std::size_t i0 = total * std::size_t(t) / std::size_t(parts);
        const std::size_t i1 = total * std::size_t(t + 1) / std::size_t(parts);
        const std::span<const K> a(ka, na), b(kb, nb);
        const std::size_t j0 = co_rank(i0, a, b, less), j1 = co_rank(i1, a, b, less);
        merge_range(ka + j0, va ? va + j0 : nullptr, j1 - j0, kb + (i0 - j0), vb ? vb + (i0 - j0) : nullptr,
                    (i1 - j1) - (i0 - j0), dst_k + at + i0, dst_v ? dst_v + at + i0 : nullptr, less);
      }
      next.push_back(total);
      at += total;
    }
    runs = std::move(next);
    std::swap(src_k, dst_k);
    std::swap(src_v, dst_v);
    in_out = !in_out;
  }
  if (!in_out) {  // the single run is still in the scratch: move it over
    std::copy(keys, keys + n, out_keys);
    if (values) std::copy(values, values + n, out_values);
  }
}

}  // namespace tandem::dist
