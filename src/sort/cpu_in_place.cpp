// In-place parallel MSD radix sort of keys (see cpu_radix.hpp): an American-flag partition by one
// 8-bit digit of the ordered key bits (histogram counted by all threads), then every bucket small
// enough is sorted by cpu_radix_sort with a scratch of its own size, buckets handed to threads
// largest first; a larger bucket is partitioned again in place on the next digit.
#include <omp.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

#include "sort/cpu_radix.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::detail {

int in_place_threads(std::size_t n, int threads, std::size_t min_bucket) {
  const std::size_t fit = n / (kInPlaceScratchDivisor * std::max<std::size_t>(1, min_bucket));
  return static_cast<int>(std::clamp<std::size_t>(fit, 1, static_cast<std::size_t>(std::max(1, threads))));
}

std::size_t in_place_bucket_limit(std::size_t n, int threads, std::size_t min_bucket) {
  const auto t = static_cast<std::size_t>(in_place_threads(n, threads, min_bucket));
  return std::max(min_bucket, n / (kInPlaceScratchDivisor * t));
}

namespace {

constexpr int kBits = 8;
constexpr int kBuckets = 1 << kBits;
constexpr std::size_t kParallelCountMin = std::size_t{1} << 20;  // elements before a count is split
using Counts = std::array<std::size_t, kBuckets>;

template <class K>
class InPlaceMsd {
 public:
  using U = ordered_bits_t<K>;
  static constexpr int kTopDigit = static_cast<int>(sizeof(U)) * 8 / kBits - 1;

  InPlaceMsd(std::span<K> keys, bool descending, int threads, std::size_t min_bucket)
      : a_(keys.data()),
        n_(keys.size()),
        desc_(descending),
        threads_(in_place_threads(keys.size(), threads, min_bucket)),
        limit_(in_place_bucket_limit(keys.size(), threads_, min_bucket)) {}

  void run() { sort(0, n_, kTopDigit, true); }

 private:
  int digit(K k, int d) const {
    const U b = to_ordered(k);
    return static_cast<int>(((desc_ ? U(~b) : b) >> (d * kBits)) & (kBuckets - 1));
  }

  // Sorts [lo, hi), whose keys agree on every digit above d; `all` says whether every thread
  // may work on it (else the caller's thread alone).
  void sort(std::size_t lo, std::size_t hi, int d, bool all) {
    const std::size_t m = hi - lo;
    if (m <= limit_) {  // cpu_radix_sort's scratch of m elements stays within the bound
      cpu_radix_sort(std::span<K>(a_ + lo, m), std::span<NoValue>{}, desc_, all ? threads_ : 1);
      return;
    }
    Counts c{};
    for (;; --d) {  // skip digits where every key agrees
      if (d < 0) return;
      c = count(lo, hi, d, all);
      if (*std::max_element(c.begin(), c.end()) != m) break;
    }
    partition(lo, c, d);
    std::vector<std::pair<std::size_t, std::size_t>> small;  // [begin, end) of each bucket
    std::size_t at = lo;
    for (int b = 0; b < kBuckets; at += c[b], ++b) {
      if (c[b] > limit_) sort(at, at + c[b], d - 1, all);  // all threads on it, one bucket after another
      else if (c[b] > 1) small.emplace_back(at, at + c[b]);
    }
    std::sort(small.begin(), small.end(),
              [](auto x, auto y) { return x.second - x.first > y.second - y.first; });  // largest first
    const auto count = static_cast<std::ptrdiff_t>(small.size());
    parallel_for(static_cast<std::size_t>(count), all ? threads_ : 1,
                 [&](std::size_t i) { sort(small[i].first, small[i].second, d - 1, false); });
  }

  Counts count(std::size_t lo, std::size_t hi, int d, bool all) const {
    Counts total{};
    const int t = all && hi - lo >= kParallelCountMin ? threads_ : 1;
    std::vector<Counts> part(static_cast<std::size_t>(t), Counts{});
#pragma omp parallel num_threads(t)
    {
      Counts& mine = part[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(static)
      for (std::size_t i = lo; i < hi; ++i) ++mine[digit(a_[i], d)];
    }
    for (const Counts& p : part)
      for (int b = 0; b < kBuckets; ++b) total[b] += p[b];
    return total;
  }

  // American flag: each key is swapped straight into the next free slot of its bucket.
  void partition(std::size_t lo, const Counts& c, int d) {
    Counts head{}, tail{};
    std::size_t at = lo;
    for (int b = 0; b < kBuckets; ++b) {
      head[b] = at;
      tail[b] = at += c[b];
    }
    for (int b = 0; b < kBuckets; ++b) {
      while (head[b] < tail[b]) {
        K v = a_[head[b]];
        for (int db = digit(v, d); db != b; db = digit(v, d)) std::swap(v, a_[head[db]++]);
        a_[head[b]++] = v;
      }
    }
  }

  K* a_;
  std::size_t n_;
  bool desc_;
  int threads_;
  std::size_t limit_;
};

}  // namespace

template <class K>
void cpu_in_place_sort(std::span<K> keys, bool descending, int threads, std::size_t min_bucket) {
  InPlaceMsd<K>(keys, descending, threads > 0 ? threads : default_threads(), min_bucket).run();
}

template void cpu_in_place_sort<std::uint32_t>(std::span<std::uint32_t>, bool, int, std::size_t);
template void cpu_in_place_sort<std::int32_t>(std::span<std::int32_t>, bool, int, std::size_t);
template void cpu_in_place_sort<std::uint64_t>(std::span<std::uint64_t>, bool, int, std::size_t);
template void cpu_in_place_sort<std::int64_t>(std::span<std::int64_t>, bool, int, std::size_t);
template void cpu_in_place_sort<float>(std::span<float>, bool, int, std::size_t);
template void cpu_in_place_sort<double>(std::span<double>, bool, int, std::size_t);

}  // namespace tandem::detail
