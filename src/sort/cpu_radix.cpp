// Parallel LSD radix sort (8-bit digits, per-thread histograms, trivial digits skipped) and the
// parallel comparison sort fallback. See cpu_radix.hpp for the floor.
#include "sort/cpu_radix.hpp"

#include <omp.h>

#include <algorithm>
#include <memory>
#include <parallel/algorithm>
#include <type_traits>
#include <vector>

#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::detail {
namespace {

constexpr int kRadixBits = 8;
constexpr int kBuckets = 1 << kRadixBits;
constexpr std::size_t kPerThreadMin = std::size_t{1} << 16;  // elements a thread needs to pay off
constexpr std::size_t kInsertionMax = 64;

template <class K, class V>
class Radix {
 public:
  using U = ordered_bits_t<K>;
  static constexpr bool kValues = !std::is_same_v<V, NoValue>;
  static constexpr int kDigits = static_cast<int>(sizeof(U)) * 8 / kRadixBits;

  Radix(std::span<K> keys, std::span<V> values, bool descending, int threads)
      : keys_(keys.data()), vals_(kValues ? values.data() : nullptr), n_(keys.size()), desc_(descending) {
    const std::size_t by_size = std::max<std::size_t>(1, n_ / kPerThreadMin);
    threads_ = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(threads), by_size));
  }

  void run() {
    if (n_ < 2) return;
    if (n_ <= kInsertionMax) return insertion();
    tk_ = std::make_unique_for_overwrite<U[]>(n_);
    if constexpr (kValues) tv_ = std::make_unique_for_overwrite<V[]>(n_);
    const int T = threads_;
    hist_.assign(static_cast<std::size_t>(T) * kDigits * kBuckets, 0);
    offs_.assign(static_cast<std::size_t>(T) * kBuckets, 0);
    digits_.clear();

#pragma omp parallel num_threads(T)
    {
      const int t = omp_get_thread_num();
      const std::size_t lo = n_ * t / T, hi = n_ * (t + 1) / T;
      std::size_t* h = &hist_[static_cast<std::size_t>(t) * kDigits * kBuckets];
      // One read counts every digit: the totals say which digits are trivial (all keys agree).
      for (std::size_t i = lo; i < hi; ++i) {
        const U b = bits(keys_[i]);
        for (int d = 0; d < kDigits; ++d) ++h[d * kBuckets + ((b >> (d * kRadixBits)) & (kBuckets - 1))];
      }
#pragma omp barrier
#pragma omp single
      {
        for (int d = 0; d < kDigits; ++d) {
          bool trivial = false;
          for (int b = 0; b < kBuckets && !trivial; ++b) {
            std::size_t total = 0;
            for (int u = 0; u < T; ++u) total += hist_[(static_cast<std::size_t>(u) * kDigits + d) * kBuckets + b];
            trivial = total == n_;
          }
          if (!trivial) digits_.push_back(d);
        }
      }
      bool from_keys = true;
      for (std::size_t p = 0; p < digits_.size(); ++p) {
        const int d = digits_[p];
        std::size_t* hd = &hist_[(static_cast<std::size_t>(t) * kDigits + d) * kBuckets];
        if (p > 0) {  // the first pass reads the input with the partition the counts were made on
          std::fill(hd, hd + kBuckets, std::size_t{0});
          if (from_keys) count<true>(hd, lo, hi, d);
          else count<false>(hd, lo, hi, d);
        }
#pragma omp barrier
#pragma omp single
        {
          std::size_t run = 0;
          for (int b = 0; b < kBuckets; ++b)
            for (int u = 0; u < T; ++u) {
              offs_[static_cast<std::size_t>(u) * kBuckets + b] = run;
              run += hist_[(static_cast<std::size_t>(u) * kDigits + d) * kBuckets + b];
            }
        }
        std::size_t* o = &offs_[static_cast<std::size_t>(t) * kBuckets];
        if (from_keys) scatter<true>(o, lo, hi, d);
        else scatter<false>(o, lo, hi, d);
        from_keys = !from_keys;
#pragma omp barrier
      }
      if (!from_keys) {  // the result is in the scratch bits: convert back into the caller's span
        for (std::size_t i = lo; i < hi; ++i) keys_[i] = key(tk_[i]);
        if constexpr (kValues) std::copy(tv_.get() + lo, tv_.get() + hi, vals_ + lo);
      }
    }
  }

 private:
  U bits(K k) const {
    const U b = to_ordered(k);
    return desc_ ? U(~b) : b;
  }
  K key(U b) const { return from_ordered<K>(desc_ ? U(~b) : b); }

  template <bool FromKeys>
  void count(std::size_t* h, std::size_t lo, std::size_t hi, int d) const {
    const int shift = d * kRadixBits;
    for (std::size_t i = lo; i < hi; ++i) {
      const U b = FromKeys ? bits(keys_[i]) : tk_[i];
      ++h[(b >> shift) & (kBuckets - 1)];
    }
  }

  // Keys live as K in the caller's span and as ordered bits in the scratch buffer; each pass
  // converts on the way, so no memory is read through a pointer of another type.
  template <bool FromKeys>
  void scatter(std::size_t* o, std::size_t lo, std::size_t hi, int d) {
    const int shift = d * kRadixBits;
    const V* sv = nullptr;
    V* dv = nullptr;
    if constexpr (kValues) {
      sv = FromKeys ? vals_ : tv_.get();
      dv = FromKeys ? tv_.get() : vals_;
    }
    for (std::size_t i = lo; i < hi; ++i) {
      const U b = FromKeys ? bits(keys_[i]) : tk_[i];
      const std::size_t pos = o[(b >> shift) & (kBuckets - 1)]++;
      if constexpr (FromKeys) tk_[pos] = b;
      else keys_[pos] = key(b);
      if constexpr (kValues) dv[pos] = sv[i];
    }
  }

  void insertion() {  // stable
    for (std::size_t i = 1; i < n_; ++i) {
      const K k = keys_[i];
      const U b = bits(k);
      V v{};
      if constexpr (kValues) v = vals_[i];
      std::size_t j = i;
      while (j > 0 && bits(keys_[j - 1]) > b) {
        keys_[j] = keys_[j - 1];
        if constexpr (kValues) vals_[j] = vals_[j - 1];
        --j;
      }
      keys_[j] = k;
      if constexpr (kValues) vals_[j] = v;
    }
  }

  K* keys_;
  V* vals_;
  std::size_t n_;
  bool desc_;
  int threads_{1};
  std::unique_ptr<U[]> tk_;
  std::unique_ptr<V[]> tv_;
  std::vector<std::size_t> hist_;  // [thread][digit][bucket]
  std::vector<std::size_t> offs_;  // [thread][bucket] for the current digit
  std::vector<int> digits_;        // the non-trivial digits, low to high
};

int resolve_threads(int threads) { return threads > 0 ? threads : default_threads(); }

}  // namespace

template <class K, class V>
void cpu_radix_sort(std::span<K> keys, std::span<V> values, bool descending, int threads) {
  Radix<K, V>(keys, values, descending, resolve_threads(threads)).run();
}

template <class K, class V>
void cpu_comparison_sort(std::span<K> keys, std::span<V> values, bool descending, int threads) {
  using U = ordered_bits_t<K>;
  const int T = resolve_threads(threads);
  auto bits = [descending](K k) {
    const U b = to_ordered(k);
    return descending ? U(~b) : b;
  };
  if constexpr (std::is_same_v<V, NoValue>) {
    __gnu_parallel::sort(
        keys.begin(), keys.end(), [&](K a, K b) { return bits(a) < bits(b); }, __gnu_parallel::default_parallel_tag(T));
  } else {
    struct Item {
      U b;
      V v;
    };
    std::vector<Item> items(keys.size());
#pragma omp parallel for num_threads(T) schedule(static)
    for (std::size_t i = 0; i < keys.size(); ++i) items[i] = {bits(keys[i]), values[i]};
    __gnu_parallel::stable_sort(
        items.begin(), items.end(), [](const Item& a, const Item& b) { return a.b < b.b; },
        __gnu_parallel::default_parallel_tag(T));
#pragma omp parallel for num_threads(T) schedule(static)
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const U b = descending ? U(~items[i].b) : items[i].b;
      keys[i] = from_ordered<K>(b);
      values[i] = items[i].v;
    }
  }
}

#define TANDEM_CPU_SORT(K, V)                                                \
  template void cpu_radix_sort<K, V>(std::span<K>, std::span<V>, bool, int); \
  template void cpu_comparison_sort<K, V>(std::span<K>, std::span<V>, bool, int);
#define TANDEM_CPU_SORT_ALL(K) \
  TANDEM_CPU_SORT(K, NoValue) TANDEM_CPU_SORT(K, std::uint32_t) TANDEM_CPU_SORT(K, std::uint64_t)
TANDEM_CPU_SORT_ALL(std::uint32_t)
TANDEM_CPU_SORT_ALL(std::int32_t)
TANDEM_CPU_SORT_ALL(std::uint64_t)
TANDEM_CPU_SORT_ALL(std::int64_t)
TANDEM_CPU_SORT_ALL(float)
TANDEM_CPU_SORT_ALL(double)

}  // namespace tandem::detail
