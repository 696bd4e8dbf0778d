// Stable sort of key-value pairs with a bounded scratch (see cpu_radix.hpp): blocks of at most
// in_place_bucket_limit(n, threads) pairs sorted by the stable cpu_radix_sort, one block per thread
// at a time, then merged bottom-up in place. A merge copies its shorter run into the thread's
// buffer (of one block) when that run fits; otherwise it splits both runs at a key (binary
// search), rotates the middle so that the two halves can be merged apart, and merges those as
// OpenMP tasks, which also spreads the last, largest merges over the threads.
#include <omp.h>

#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "sort/cpu_radix.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/core/parallel.hpp"

namespace tandem::detail {
namespace {

constexpr std::size_t kTaskMin = std::size_t{1} << 14;  // merges smaller than this run in the caller's task

template <class K, class V>
class StablePairs {
 public:
  using U = ordered_bits_t<K>;

  StablePairs(std::span<K> keys, std::span<V> values, bool descending, int threads, std::size_t min_block)
      : k_(keys.data()),
        v_(values.data()),
        n_(keys.size()),
        desc_(descending),
        threads_(in_place_threads(keys.size(), threads, min_block)),
        block_(in_place_bucket_limit(keys.size(), threads_, min_block)) {}

  void run() {
    if (n_ <= block_) {  // the radix sort's scratch of n pairs is within the bound
      cpu_radix_sort(std::span<K>(k_, n_), std::span<V>(v_, n_), desc_, threads_);
      return;
    }
    const auto blocks = static_cast<std::ptrdiff_t>((n_ + block_ - 1) / block_);
    parallel_for(static_cast<std::size_t>(blocks), threads_, [&](std::size_t b) {  // each sort allocates scratch
      const std::size_t lo = b * block_, m = std::min(block_, n_ - lo);
      cpu_radix_sort(std::span<K>(k_ + lo, m), std::span<V>(v_ + lo, m), desc_, 1);
    });
    // Each thread allocates its own buffer: from the memory its block sorts' scratch left in its
    // malloc arena, not on top of it (the peak stays one block per thread).
    buf_keys_.resize(static_cast<std::size_t>(threads_));
    buf_values_.resize(static_cast<std::size_t>(threads_));
    parallel_region(threads_, [&](int t, int) {
      buf_keys_[static_cast<std::size_t>(t)] = std::make_unique_for_overwrite<K[]>(block_);
      buf_values_[static_cast<std::size_t>(t)] = std::make_unique_for_overwrite<V[]>(block_);
    });
    for (std::size_t width = block_; width < n_; width *= 2) {
#pragma omp parallel num_threads(threads_)
#pragma omp single
      for (std::size_t lo = 0; lo + width < n_; lo += 2 * width) {
        const std::size_t mid = lo + width, hi = std::min(lo + 2 * width, n_);
#pragma omp task
        merge(lo, mid, hi);
      }
    }
  }

 private:
  bool less(K a, K b) const {
    const U x = to_ordered(a), y = to_ordered(b);
    return desc_ ? y < x : x < y;
  }

  // Merges the sorted runs [lo, mid) and [mid, hi) stably (equal keys: the left run's first).
  void merge(std::size_t lo, std::size_t mid, std::size_t hi) {
    if (lo == mid || mid == hi || !less(k_[mid], k_[mid - 1])) return;
    const std::size_t len1 = mid - lo, len2 = hi - mid;
    if (std::min(len1, len2) <= block_) {
      if (len1 <= len2) merge_left_buffered(lo, mid, hi);
      else merge_right_buffered(lo, mid, hi);
      return;
    }
    auto cmp = [this](K a, K b) { return less(a, b); };
    std::size_t cut1, cut2;
    if (len1 > len2) {
      cut1 = lo + len1 / 2;
      cut2 = static_cast<std::size_t>(std::lower_bound(k_ + mid, k_ + hi, k_[cut1], cmp) - k_);
    } else {
      cut2 = mid + len2 / 2;
      cut1 = static_cast<std::size_t>(std::upper_bound(k_ + lo, k_ + mid, k_[cut2], cmp) - k_);
    }
    std::rotate(k_ + cut1, k_ + mid, k_ + cut2);
    std::rotate(v_ + cut1, v_ + mid, v_ + cut2);
    const std::size_t new_mid = cut1 + (cut2 - mid);
#pragma omp task if (new_mid - lo >= kTaskMin)
    merge(lo, cut1, new_mid);
    merge(new_mid, cut2, hi);
  }

  // The left run goes to the buffer and is merged forward into [lo, hi).
  void merge_left_buffered(std::size_t lo, std::size_t mid, std::size_t hi) {
    K* bk = buf_keys_[static_cast<std::size_t>(omp_get_thread_num())].get();
    V* bv = buf_values_[static_cast<std::size_t>(omp_get_thread_num())].get();
    const std::size_t len = mid - lo;
    std::copy(k_ + lo, k_ + mid, bk);
    std::copy(v_ + lo, v_ + mid, bv);
    std::size_t i = 0, j = mid, out = lo;
    while (i < len && j < hi) {
      if (less(k_[j], bk[i])) k_[out] = k_[j], v_[out++] = v_[j++];
      else k_[out] = bk[i], v_[out++] = bv[i++];
    }
    std::copy(bk + i, bk + len, k_ + out);  // what is left of the right run is in place already
    std::copy(bv + i, bv + len, v_ + out);
  }

  // The right run goes to the buffer and is merged backward into [lo, hi).
  void merge_right_buffered(std::size_t lo, std::size_t mid, std::size_t hi) {
    K* bk = buf_keys_[static_cast<std::size_t>(omp_get_thread_num())].get();
    V* bv = buf_values_[static_cast<std::size_t>(omp_get_thread_num())].get();
    std::size_t i = hi - mid, j = mid, out = hi;
    std::copy(k_ + mid, k_ + hi, bk);
    std::copy(v_ + mid, v_ + hi, bv);
    while (i > 0 && j > lo) {
      if (less(bk[i - 1], k_[j - 1])) --out, --j, k_[out] = k_[j], v_[out] = v_[j];
      else --out, --i, k_[out] = bk[i], v_[out] = bv[i];
    }
    std::copy(bk, bk + i, k_ + lo);  // what is left of the left run is in place already
    std::copy(bv, bv + i, v_ + lo);
  }

  K* k_;
  V* v_;
  std::size_t n_;
  bool desc_;
  int threads_;
  std::size_t block_;
  std::vector<std::unique_ptr<K[]>> buf_keys_;  // one block per thread
  std::vector<std::unique_ptr<V[]>> buf_values_;
};

}  // namespace

template <class K, class V>
void cpu_in_place_sort_pairs(std::span<K> keys, std::span<V> values, bool descending, int threads,
                             std::size_t min_block) {
  StablePairs<K, V>(keys, values, descending, threads > 0 ? threads : default_threads(), min_block).run();
}

#define TANDEM_IN_PLACE_PAIRS(K)                                                                             \
  template void cpu_in_place_sort_pairs<K, std::uint32_t>(std::span<K>, std::span<std::uint32_t>, bool, int, \
                                                          std::size_t);                                      \
  template void cpu_in_place_sort_pairs<K, std::uint64_t>(std::span<K>, std::span<std::uint64_t>, bool, int, \
                                                          std::size_t);
TANDEM_IN_PLACE_PAIRS(std::uint32_t)
TANDEM_IN_PLACE_PAIRS(std::int32_t)
TANDEM_IN_PLACE_PAIRS(std::uint64_t)
TANDEM_IN_PLACE_PAIRS(std::int64_t)
TANDEM_IN_PLACE_PAIRS(float)
TANDEM_IN_PLACE_PAIRS(double)

}  // namespace tandem::detail
