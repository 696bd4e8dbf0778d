// MSD split plans and the host-side MSD partition (see msd.hpp).
//
// Floor of the partition, out of core: one histogram read of the data plus one read and one
// scattered write per level (one level for uniform keys): ~3 passes over the data at the host's
// memory bandwidth (2^28 u32 = 1 GiB: ~3 GiB at ~30 GB/s on 16 threads ≈ 0.1 s), then one staged
// round trip per piece (~61 ms per GiB on an H200 box), against n·log2 n comparisons for
// __gnu_parallel::sort (~2.8 s for 2^28 on 16 threads).
#include "sort/msd.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include <fmt/format.h>

#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"
#include "tandem/core/timing.hpp"

namespace tandem::detail {

std::vector<ElementRange> group_buckets(std::span<const std::uint64_t> counts, std::size_t target) {
  std::vector<ElementRange> out;
  std::size_t pos = 0;
  ElementRange cur{0, 0, 0};
  for (const std::uint64_t c64 : counts) {
    const auto c = static_cast<std::size_t>(c64);
    if (c == 0) continue;
    if (cur.size() > 0 && cur.size() + c > target) {
      out.push_back(cur);
      cur = {pos, pos, 0};
    }
    cur.end += c;
    cur.buckets += 1;
    pos += c;
    if (cur.size() >= target) {  // a full (or oversized single-bucket) group
      out.push_back(cur);
      cur = {pos, pos, 0};
    }
  }
  if (cur.size() > 0) out.push_back(cur);
  return out;
}

GpuSplitPlan plan_gpu_split(std::span<const std::uint64_t> digit_counts, std::size_t n, int key_bits,
                            std::size_t min_elements, int groups) {
  GpuSplitPlan p;
  p.sort_bits = key_bits;
  const int digits = key_bits / kMsdBits;
  if (digit_counts.size() != static_cast<std::size_t>(digits) * kMsdBuckets) {
    p.why = fmt::format("{} elements, below the split threshold of {}: one whole-array sort", n, min_elements);
    return p;
  }
  // The highest digit where the keys differ; the counts of each digit must add up to n.
  int d = -1;
  for (int k = digits - 1; k >= 0; --k) {
    std::uint64_t total = 0, biggest = 0;
    for (int b = 0; b < kMsdBuckets; ++b) {
      total += digit_counts[static_cast<std::size_t>(k) * kMsdBuckets + b];
      biggest = std::max(biggest, digit_counts[static_cast<std::size_t>(k) * kMsdBuckets + b]);
    }
    if (total != n) {  // cannot happen unless the histogram is broken: never trust it then
      p.why = fmt::format("histogram counted {} of {} keys: one whole-array sort", total, n);
      return p;
    }
    if (biggest != n) {
      d = k;
      break;
    }
  }
  if (d < 0) {
    p.sort_bits = 0;
    p.why = "all keys are equal: nothing to sort";
    return p;
  }
  p.sort_bits = (d + 1) * kMsdBits;
  const std::string skip =
      p.sort_bits < key_bits ? fmt::format(" (the top {} bits agree: skipped)", key_bits - p.sort_bits) : std::string();
  const std::span<const std::uint64_t> counts =
      digit_counts.subspan(static_cast<std::size_t>(d) * kMsdBuckets, kMsdBuckets);
  const std::uint64_t biggest = *std::max_element(counts.begin(), counts.end());
  if (n < min_elements) {
    p.why = fmt::format("{} elements, below the split threshold of {}: one sort of bits 0..{}{}", n, min_elements,
                        p.sort_bits - 1, skip);
    return p;
  }
  if (biggest * 2 > n) {
    p.why = fmt::format("skewed: {:.0f}% of the keys share bits {}..{}: one sort of bits 0..{}{}",
                        100.0 * double(biggest) / double(n), d * kMsdBits, p.sort_bits - 1, p.sort_bits - 1, skip);
    return p;
  }
  const std::size_t target = (n + static_cast<std::size_t>(groups) - 1) / static_cast<std::size_t>(groups);
  p.groups = group_buckets(counts, target);
  if (p.groups.size() < 2) {
    p.groups.clear();
    p.why = "one group: one whole-array sort" + skip;
    return p;
  }
  p.split = true;
  p.msd_shift = d * kMsdBits;
  std::size_t largest = 0;
  for (const auto& g : p.groups) largest = std::max(largest, g.size());
  p.why = fmt::format(
      "MSD split on bits {}..{}{}: {} groups of <= {} elements sorted on bits below {}, each copied "
      "back while the next sorts (largest bucket {:.1f}%)",
      p.msd_shift, p.sort_bits - 1, skip, p.groups.size(), largest, p.msd_shift, 100.0 * double(biggest) / double(n));
  return p;
}

namespace {

constexpr std::size_t kPerThread = std::size_t{1} << 16;

template <class K, class V>
class Partition {
 public:
  using U = ordered_bits_t<K>;
  static constexpr bool kValues = !std::is_same_v<V, NoValue>;
  static constexpr int kKeyBits = static_cast<int>(sizeof(U)) * 8;

  Partition(std::span<K> keys, std::span<V> values, bool desc, std::size_t cap, int threads,
            const PieceSort<K, V>& sort, const std::function<void(std::size_t, std::size_t)>& progress)
      : keys_(keys.data()),
        vals_(kValues ? values.data() : nullptr),
        n_(keys.size()),
        desc_(desc),
        cap_(std::max<std::size_t>(cap, 1)),
        threads_(threads > 0 ? threads : default_threads()),
        sort_(sort),
        progress_(progress) {}

  MsdStats run() {
    if (n_ < 2) return st_;
    if (n_ <= cap_) {
      piece(keys_, vals_, 0, n_);
      return st_;
    }
    tk_ = huge_page_buffer<K>(n_);
    if constexpr (kValues) tv_ = huge_page_buffer<V>(n_);
    part(0, n_, true, kKeyBits - kMsdBits, 1);
    return st_;
  }

 private:
  U bits(K k) const {
    const U b = to_ordered(k);
    return desc_ ? U(~b) : b;
  }
  K* kbuf(bool in_keys) const { return in_keys ? keys_ : tk_.get(); }
  V* vbuf(bool in_keys) const { return in_keys ? vals_ : tv_.get(); }

  void piece(const K* sk, const V* sv, std::size_t off, std::size_t len) {
    Stopwatch w;
    sort_(sk, sv, keys_ + off, kValues ? vals_ + off : nullptr, len);
    st_.pieces_s += w.seconds();
    ++st_.pieces;
    st_.max_piece = std::max(st_.max_piece, len);
    done_ += len;
    if (progress_) progress_(done_, n_);
  }

  // Elements [off, off+len) live in the caller's arrays (in_keys) or the scratch ones.
  void part(std::size_t off, std::size_t len, bool in_keys, int shift, int level) {
    Stopwatch w;
    const int T = static_cast<int>(std::clamp<std::size_t>(len / kPerThread, 1, static_cast<std::size_t>(threads_)));
    std::vector<std::size_t> hist(static_cast<std::size_t>(T) * kMsdBuckets);
    std::array<std::uint64_t, kMsdBuckets> total{};
    const K* src = kbuf(in_keys) + off;
    for (;;) {  // skip digits where every key of the range agrees
      std::fill(hist.begin(), hist.end(), std::size_t{0});
#pragma omp parallel num_threads(T)
      {
        const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
        const std::size_t lo = len * t / T, hi = len * (t + 1) / T;
        std::size_t* h = &hist[t * kMsdBuckets];
        for (std::size_t i = lo; i < hi; ++i) ++h[(bits(src[i]) >> shift) & (kMsdBuckets - 1)];
      }
      total.fill(0);
      bool one = false;
      for (int b = 0; b < kMsdBuckets; ++b) {
        for (int t = 0; t < T; ++t) total[b] += hist[static_cast<std::size_t>(t) * kMsdBuckets + b];
        one = one || total[b] == len;
      }
      if (!one) break;
      if (shift == 0) {  // every key of the range is equal: input order is the stable order
        if (!in_keys) {
          parallel_copy(keys_ + off, src, len * sizeof(K), T);
          if constexpr (kValues) parallel_copy(vals_ + off, tv_.get() + off, len * sizeof(V), T);
        }
        st_.copied += len;
        st_.partition_s += w.seconds();
        done_ += len;
        if (progress_) progress_(done_, n_);
        return;
      }
      shift -= kMsdBits;
    }
    // Stable scatter: thread t's keys of bucket b go after those of threads < t.
    K* dk = kbuf(!in_keys) + off;
    const V* sv = kValues ? vbuf(in_keys) + off : nullptr;
    V* dv = kValues ? vbuf(!in_keys) + off : nullptr;
    {
      std::size_t run = 0;
      for (int b = 0; b < kMsdBuckets; ++b)
        for (int t = 0; t < T; ++t) {
          std::size_t& h = hist[static_cast<std::size_t>(t) * kMsdBuckets + b];
          const std::size_t c = h;
          h = run;
          run += c;
        }
    }
#pragma omp parallel num_threads(T)
    {
      const std::size_t t = static_cast<std::size_t>(omp_get_thread_num());
      const std::size_t lo = len * t / T, hi = len * (t + 1) / T;
      std::size_t* o = &hist[t * kMsdBuckets];
      for (std::size_t i = lo; i < hi; ++i) {
        const std::size_t pos = o[(bits(src[i]) >> shift) & (kMsdBuckets - 1)]++;
        dk[pos] = src[i];
        if constexpr (kValues) dv[pos] = sv[i];
      }
    }
    st_.partition_s += w.seconds();
    st_.levels = std::max(st_.levels, level);
    const bool now_in_keys = !in_keys;
    // Pieces of consecutive buckets up to cap; larger buckets one digit further down.
    for (const ElementRange& g : group_buckets(total, cap_)) {
      const std::size_t o = off + g.begin;
      if (g.size() <= cap_) {
        piece(kbuf(now_in_keys) + o, kValues ? vbuf(now_in_keys) + o : nullptr, o, g.size());
      } else if (shift == 0) {  // one bucket of the last digit: all keys equal, already in order
        if (!now_in_keys) {
          parallel_copy(keys_ + o, tk_.get() + o, g.size() * sizeof(K), T);
          if constexpr (kValues) parallel_copy(vals_ + o, tv_.get() + o, g.size() * sizeof(V), T);
        }
        st_.copied += g.size();
        done_ += g.size();
        if (progress_) progress_(done_, n_);
      } else {
        part(o, g.size(), now_in_keys, shift - kMsdBits, level + 1);
      }
    }
  }

  K* keys_;
  V* vals_;
  std::size_t n_;
  bool desc_;
  std::size_t cap_;
  int threads_;
  const PieceSort<K, V>& sort_;
  const std::function<void(std::size_t, std::size_t)>& progress_;
  HugeBuffer<K> tk_;
  HugeBuffer<V> tv_;
  MsdStats st_;
  std::size_t done_{0};
};

}  // namespace

template <class K, class V>
MsdStats msd_partition_sort(std::span<K> keys, std::span<V> values, bool descending, std::size_t cap, int threads,
                            const PieceSort<K, V>& sort_piece,
                            const std::function<void(std::size_t, std::size_t)>& progress) {
  return Partition<K, V>(keys, values, descending, cap, threads, sort_piece, progress).run();
}

#define TANDEM_MSD(K, V)                                                                         \
  template MsdStats msd_partition_sort<K, V>(std::span<K>, std::span<V>, bool, std::size_t, int, \
                                             const PieceSort<K, V>&,                             \
                                             const std::function<void(std::size_t, std::size_t)>&);
#define TANDEM_MSD_ALL(K) TANDEM_MSD(K, NoValue) TANDEM_MSD(K, std::uint32_t) TANDEM_MSD(K, std::uint64_t)
TANDEM_MSD_ALL(std::uint32_t)
TANDEM_MSD_ALL(std::int32_t)
TANDEM_MSD_ALL(std::uint64_t)
TANDEM_MSD_ALL(std::int64_t)
TANDEM_MSD_ALL(float)
TANDEM_MSD_ALL(double)

}  // namespace tandem::detail
