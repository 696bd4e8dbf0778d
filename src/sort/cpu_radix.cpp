// Parallel stable MSD radix sort with an in-cache finish per bucket, and the parallel comparison
// sort fallback. See cpu_radix.hpp for the design and the floor.
#include "sort/cpu_radix.hpp"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <new>
#include <parallel/algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/scratch_pool.hpp"
#include "tandem/core/detail/huge_pages.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::detail {

void ScratchDeleter::operator()(void* p) const noexcept {
  if (pooled) give_scratch(p, pooled);
  else std::free(p);  // malloc's and allocate_huge_pages' blocks alike
}

ScratchBlock scratch_alloc(std::size_t bytes) {
  constexpr std::size_t kHuge = std::size_t{2} << 20, kPooledMax = std::size_t{64} << 20;
  if (bytes < kHuge) {  // small sorts (many of them in a group-by): no page-sized allocation
    void* p = std::malloc(std::max<std::size_t>(bytes, 1));
    if (!p) throw std::bad_alloc();
    return {p, 0};
  }
  if (bytes <= kPooledMax) {
    const std::size_t size = scratch_class(bytes);
    return {take_scratch(size), size};
  }
  return {detail::allocate_huge_pages(bytes), 0};
}

namespace {

// The parallel pass: a digit of 8 to 11 bits, wide enough that a bucket fits in a core's L2.
constexpr int kTopBitsMin = 8, kTopBitsMax = 11;
constexpr std::size_t kBucketBytes = std::size_t{1} << 18;
constexpr std::size_t kPerThreadMin = std::size_t{1} << 16;  // elements a thread needs to pay off
// A bucket that goes through the parallel pass again (skewed keys, e.g. floats whose exponents
// crowd a few top digits) has the other threads waiting on it: it takes more of them.
constexpr std::size_t kNestedPerThreadMin = std::size_t{1} << 14;
// The in-cache passes: LSD when at most kLsdMaxPasses digits of at most m / 2^kLsdBucketsBelow
// buckets cover the varying bits, else an MSD level leaving ~kLeafTarget keys per bucket.
constexpr int kLocalBitsMax = 11;
constexpr int kLsdMaxPasses = 3;
constexpr std::size_t kLsdFallbackMin = 512;  // LSD's 256-bucket passes pay off from about here
constexpr int kLsdBucketsBelow = 4;
constexpr std::size_t kLeafTarget = 8;
constexpr std::size_t kLeafMax = 16;  // rank-sorted

// A digit: bits [shift, shift + width) of the ordered key bits.
struct Digit {
  int shift{0}, width{0};
  std::size_t buckets() const { return std::size_t{1} << width; }
};

// The digit of at most `width` bits whose top bit is the highest bit set in `diff` (!= 0).
template <class U>
Digit digit_below(U diff, int width) {
  const int top = static_cast<int>(std::bit_width(diff));
  const int w = std::min(width, top);
  return {top - w, w};
}

template <class K, class V>
class Radix {
 public:
  using U = ordered_bits_t<K>;
  static constexpr bool kValues = !std::is_same_v<V, NoValue>;
  static constexpr int kKeyBits = static_cast<int>(sizeof(U)) * 8;
  static constexpr std::size_t kElementBytes = sizeof(U) + (kValues ? sizeof(V) : 0);

  // Sorts keys (values) in place, or, when the sources are given, into keys (values) from them.
  Radix(std::span<K> keys, std::span<V> values, bool descending, int threads, const K* keys_in = nullptr,
        const V* values_in = nullptr)
      : keys_(keys.data()),
        vals_(kValues ? values.data() : nullptr),
        src_(keys_in ? keys_in : keys_),
        vsrc_(kValues && values_in ? values_in : vals_),
        n_(keys.size()),
        flip_(descending ? ~U(0) : U(0)),
        threads_(std::max(1, threads)) {}

  void run() {
    if (n_ < 2) return adopt_source(0, n_);
    if (n_ <= kLeafMax) {
      adopt_source(0, n_);
      return leaf(0, n_, true);
    }
    tk_ = huge_page_buffer<U>(n_);
    if constexpr (kValues) tv_ = huge_page_buffer<V>(n_);
    parallel_sort(0, n_, true, kKeyBits);
  }

 private:
  U bits(K k) const { return to_ordered(k) ^ flip_; }
  K key(U b) const { return from_ordered<K>(b ^ flip_); }
  // Element i's bits, from the caller's keys ("home") or from the scratch bits. Until the first
  // pass is done, home is read from the source (the caller's keys when sorting in place).
  template <bool Home>
  U load(std::size_t i) const {
    if constexpr (Home) return bits(src_[i]);
    else return tk_[i];
  }

  // Copies the source's [lo, hi) home, where the first pass does not read it itself.
  void adopt_source(std::size_t lo, std::size_t hi) {
    if (src_ != keys_) std::copy(src_ + lo, src_ + hi, keys_ + lo);
    if constexpr (kValues)
      if (vsrc_ != vals_) std::copy(vsrc_ + lo, vsrc_ + hi, vals_ + lo);
  }
  void home_is_source() {
    src_ = keys_;
    vsrc_ = vals_;
  }

  // Sorts [lo, hi), whose keys agree on every bit from `top` up, with all threads: one scatter by
  // the digit below `top` (or below the highest varying bit), then the buckets: large ones again
  // with all threads, the others one per thread. The data is in home or scratch; the result goes
  // to home.
  void parallel_sort(std::size_t lo, std::size_t hi, bool in_home, int top, bool nested = false) {
    const std::size_t m = hi - lo;
    const std::size_t per_thread = nested ? kNestedPerThreadMin : kPerThreadMin;
    const int T = static_cast<int>(std::min<std::size_t>(threads_, std::max<std::size_t>(1, m / per_thread)));
    if (T == 1) {
      if (in_home) adopt_source(lo, hi), home_is_source();
      return local_sort(lo, hi, in_home);
    }
    const int width =
        std::clamp(static_cast<int>(std::bit_width(m * kElementBytes / kBucketBytes)), kTopBitsMin, kTopBitsMax);
    const std::size_t stride = std::size_t{1} << width;
    Digit d{std::max(0, top - width), std::min(top, width)};
    std::vector<std::size_t> hist(static_cast<std::size_t>(T) * stride);
    std::vector<U> ors(static_cast<std::size_t>(T)), ands(static_cast<std::size_t>(T));
    std::vector<std::size_t> ends(stride);
    U diff = 0;
    bool recount = false;
#pragma omp parallel num_threads(T)
    {
      const int t = omp_get_thread_num();
      const std::size_t a = lo + m * t / T, b = lo + m * (t + 1) / T;
      std::size_t* h = &hist[static_cast<std::size_t>(t) * stride];
      // One read counts the guessed digit and finds the varying bits; a guess that misses them
      // (keys agree on the digit's top bits) costs a second count.
      if (in_home) count_and_vary<true>(h, a, b, d, ors[t], ands[t]);
      else count_and_vary<false>(h, a, b, d, ors[t], ands[t]);
#pragma omp barrier
#pragma omp single
      {
        U o = 0, n = ~U(0);
        for (int u = 0; u < T; ++u) o |= ors[u], n &= ands[u];
        diff = o ^ n;
        if (diff != 0 && static_cast<int>(std::bit_width(diff)) <= d.shift) {
          d = digit_below(diff, width);
          recount = true;
        }
      }
      if (diff != 0) {
        if (recount) {
          std::fill(h, h + stride, std::size_t{0});
          if (in_home) count<true>(h, a, b, d);
          else count<false>(h, a, b, d);
        }
#pragma omp barrier
#pragma omp single
        {
          std::size_t run = lo;
          for (std::size_t k = 0; k < d.buckets(); ++k) {
            for (int u = 0; u < T; ++u) {
              const std::size_t c = hist[static_cast<std::size_t>(u) * stride + k];
              hist[static_cast<std::size_t>(u) * stride + k] = run;
              run += c;
            }
            ends[k] = run;
          }
        }
        if (in_home) scatter<true>(h, a, b, d);
        else scatter<false>(h, a, b, d);
      } else if (!in_home) {
        copy_home(a, b);  // all keys equal, already in order
      } else {
        adopt_source(a, b);
      }
    }
    if (in_home) home_is_source();  // the source has been read whole
    if (diff == 0) return;
    // Buckets too large for one thread to keep the others busy go through this again.
    const std::size_t large = std::max(m / (2 * static_cast<std::size_t>(T)), 2 * kPerThreadMin);
    std::vector<std::pair<std::size_t, std::size_t>> small;
    std::size_t start = lo;
    for (std::size_t k = 0; k < d.buckets(); start = ends[k], ++k) {
      if (ends[k] - start > large) parallel_sort(start, ends[k], !in_home, d.shift, true);
      else if (ends[k] > start) small.emplace_back(start, ends[k]);
    }
    const int Ts = static_cast<int>(std::min<std::size_t>(threads_, small.size()));
    parallel_for(small.size(), std::max(1, Ts),
                 [&](std::size_t i) { local_sort(small[i].first, small[i].second, !in_home); });
  }

  // Sorts [lo, hi) on this thread: MSD passes, each on the digit that starts at the highest bit
  // where the bucket's keys differ and is wide enough to leave ~kLeafTarget keys per bucket, then
  // insertion sort. The result goes to home. `counts` holds every level's bucket ends from `at` on.
  void local_sort(std::size_t lo, std::size_t hi, bool in_home) {
    std::vector<std::size_t> counts;
    local_sort(lo, hi, in_home, counts, 0);
  }
  void local_sort(std::size_t lo, std::size_t hi, bool in_home, std::vector<std::size_t>& counts, std::size_t at) {
    const std::size_t m = hi - lo;
    if (m <= kLeafMax) return leaf(lo, hi, in_home);
    const U diff = in_home ? varying<true>(lo, hi) : varying<false>(lo, hi);
    if (diff == 0) {
      if (!in_home) copy_home(lo, hi);
      return;
    }
    // Few varying bits for the bucket's size: LSD passes over them finish the bucket.
    const int low = std::countr_zero(diff), span = static_cast<int>(std::bit_width(diff)) - low;
    const int lsd_width = std::clamp(static_cast<int>(std::bit_width(m)) - kLsdBucketsBelow, 1, kLocalBitsMax);
    const int passes = (span + lsd_width - 1) / lsd_width;
    if (passes <= kLsdMaxPasses) return lsd(lo, hi, in_home, low, span, passes, counts, at);
    const int width = std::clamp(static_cast<int>(std::bit_width(m / kLeafTarget)) - 1, 1, kLocalBitsMax);
    const Digit d = digit_below(diff, width);
    const std::size_t nb = d.buckets();
    if (counts.size() < at + nb) counts.resize(at + nb);
    std::size_t* o = counts.data() + at;  // counts, then where each bucket goes next
    std::fill(o, o + nb, std::size_t{0});
    if (in_home) count<true>(o, lo, hi, d);
    else count<false>(o, lo, hi, d);
    // A small sort on one thread whose keys mostly fall in one bucket (top bits that crowd a few
    // values, as counts on top of a word count's order keys): MSD would pass over them again and
    // again; LSD passes of 8-bit digits over all the varying bits instead (15 ns a key there,
    // against 21). Large sorts' buckets keep MSD.
    if (m == n_ && m >= kLsdFallbackMin && *std::max_element(o, o + nb) * 2 > m)
      return lsd(lo, hi, in_home, low, span, (span + 7) / 8, counts, at);
    std::size_t run = lo;
    for (std::size_t k = 0; k < nb; ++k) run += std::exchange(o[k], run);
    if (in_home) scatter<true>(o, lo, hi, d);
    else scatter<false>(o, lo, hi, d);
    // counts[at + k] is now the end of bucket k (read by index: deeper levels may grow counts)
    std::size_t start = lo;
    for (std::size_t k = 0; k < nb; ++k) {
      const std::size_t end = counts[at + k];
      if (end > start) local_sort(start, end, !in_home, counts, at + nb);
      start = end;
    }
  }

  // LSD passes over bits [low, low + span) of [lo, hi) (the other bits agree), of equal widths,
  // all counted in one read; the result goes to home.
  void lsd(std::size_t lo, std::size_t hi, bool in_home, int low, int span, int passes,
           std::vector<std::size_t>& counts, std::size_t at) {
    const int width = (span + passes - 1) / passes;  // passes digits of this width cover span
    const std::size_t stride = std::size_t{1} << width;
    Digit d[std::max(kLsdMaxPasses, kKeyBits / 8)];
    passes = 0;
    for (int b = low; b < low + span; b += width) d[passes++] = {b, std::min(width, low + span - b)};
    if (counts.size() < at + passes * stride) counts.resize(at + passes * stride);
    std::size_t* h = counts.data() + at;
    std::fill(h, h + passes * stride, std::size_t{0});
    if (in_home) count_digits<true>(h, stride, lo, hi, d, passes);
    else count_digits<false>(h, stride, lo, hi, d, passes);
    for (int q = 0; q < passes; ++q, in_home = !in_home) {
      std::size_t* o = h + q * stride;
      std::size_t run = lo;
      for (std::size_t k = 0; k < d[q].buckets(); ++k) run += std::exchange(o[k], run);
      if (in_home) scatter<true>(o, lo, hi, d[q]);
      else scatter<false>(o, lo, hi, d[q]);
    }
    if (!in_home) copy_home(lo, hi);
  }

  template <bool Home>
  void count_digits(std::size_t* h, std::size_t stride, std::size_t lo, std::size_t hi, const Digit* d,
                    int passes) const {
    for (std::size_t i = lo; i < hi; ++i) {
      const U b = load<Home>(i);
      for (int q = 0; q < passes; ++q) ++h[q * stride + ((b >> d[q].shift) & ((U{1} << d[q].width) - 1))];
    }
  }

  template <bool Home>
  U varying(std::size_t lo, std::size_t hi) const {
    U o = 0, a = ~U(0);
    for (std::size_t i = lo; i < hi; ++i) {
      const U b = load<Home>(i);
      o |= b;
      a &= b;
    }
    return o ^ a;
  }

  template <bool Home>
  void count_and_vary(std::size_t* h, std::size_t lo, std::size_t hi, Digit d, U& ors, U& ands) const {
    const U mask = static_cast<U>(d.buckets() - 1);
    U o = 0, a = ~U(0);
    for (std::size_t i = lo; i < hi; ++i) {
      const U b = load<Home>(i);
      o |= b;
      a &= b;
      ++h[(b >> d.shift) & mask];
    }
    ors = o;
    ands = a;
  }

  template <bool Home>
  void count(std::size_t* h, std::size_t lo, std::size_t hi, Digit d) const {
    const U mask = static_cast<U>(d.buckets() - 1);
    for (std::size_t i = lo; i < hi; ++i) ++h[(load<Home>(i) >> d.shift) & mask];
  }

  // Keys live as K in the caller's span and as ordered bits in the scratch buffer; each pass
  // converts on the way, so no memory is read through a pointer of another type.
  template <bool Home>
  void scatter(std::size_t* o, std::size_t lo, std::size_t hi, Digit d) {
    const U mask = static_cast<U>(d.buckets() - 1);
    const V* sv = nullptr;
    V* dv = nullptr;
    if constexpr (kValues) {
      sv = Home ? vsrc_ : tv_.get();
      dv = Home ? tv_.get() : vals_;
    }
    for (std::size_t i = lo; i < hi; ++i) {
      const U b = load<Home>(i);
      const std::size_t pos = o[(b >> d.shift) & mask]++;
      if constexpr (Home) tk_[pos] = b;
      else keys_[pos] = key(b);
      if constexpr (kValues) dv[pos] = sv[i];
    }
  }

  void copy_home(std::size_t lo, std::size_t hi) {
    for (std::size_t i = lo; i < hi; ++i) keys_[i] = key(tk_[i]);
    if constexpr (kValues) std::copy(tv_.get() + lo, tv_.get() + hi, vals_ + lo);
  }

  // At most kLeafMax elements, sorted by rank: an element's place is the number of elements
  // before it in the order (smaller, or equal and earlier: stable). Branch-free, so random keys
  // cost no mispredictions (an insertion sort takes about one per key).
  void leaf(std::size_t lo, std::size_t hi, bool in_home) {
    const std::size_t m = hi - lo;
    U k[kLeafMax];
    for (std::size_t i = 0; i < m; ++i) k[i] = in_home ? bits(keys_[lo + i]) : tk_[lo + i];
    [[maybe_unused]] V v[kValues ? kLeafMax : 1];
    if constexpr (kValues)
      for (std::size_t i = 0; i < m; ++i) v[i] = in_home ? vals_[lo + i] : tv_[lo + i];
    for (std::size_t i = 0; i < m; ++i) {
      std::size_t rank = 0;
      for (std::size_t j = 0; j < i; ++j) rank += k[j] <= k[i];
      for (std::size_t j = i + 1; j < m; ++j) rank += k[j] < k[i];
      keys_[lo + rank] = key(k[i]);
      if constexpr (kValues) vals_[lo + rank] = v[i];
    }
  }

  K* keys_;
  V* vals_;
  const K* src_;  // where home is read from: the caller's source until the first pass has read it
  const V* vsrc_;
  std::size_t n_;
  U flip_;  // all ones when descending: the inverted bits sort in descending key order
  std::size_t threads_;
  HugeBuffer<U> tk_;
  HugeBuffer<V> tv_;
};

int resolve_threads(int threads) { return threads > 0 ? threads : default_threads(); }

}  // namespace

template <class K, class V>
void cpu_radix_sort(std::span<K> keys, std::span<V> values, bool descending, int threads) {
  Radix<K, V>(keys, values, descending, resolve_threads(threads)).run();
}

template <class K, class V>
void cpu_radix_sort_copy(std::span<const K> keys_in, std::span<const V> values_in, std::span<K> keys,
                         std::span<V> values, bool descending, int threads) {
  Radix<K, V>(keys, values, descending, resolve_threads(threads), keys_in.data(), values_in.data()).run();
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

#define TANDEM_CPU_SORT(K, V)                                                                                       \
  template void cpu_radix_sort<K, V>(std::span<K>, std::span<V>, bool, int);                                        \
  template void cpu_radix_sort_copy<K, V>(std::span<const K>, std::span<const V>, std::span<K>, std::span<V>, bool, \
                                          int);                                                                     \
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
