// MSD (most significant digit first) splitting of sorts, the part that is plain CPU code:
//  * the GPU pipeline's split plan: from a histogram of the top 8 ordered key bits (counted on the
//    GPU per chunk during the upload), groups of consecutive buckets that are sorted one after the
//    other on the remaining bits, so each group's D2H copy starts while the next group sorts;
//  * the out-of-core partition on the host: a stable parallel MSD partition into pieces that fit
//    on the GPU, each sorted there independently (no merge), recursing into buckets larger than a
//    piece and skipping digits where all keys agree.
// Buckets are of the ordered bits (key_order.hpp), inverted when descending, so bucket order is
// the output order. 64-bit sizes throughout. Internal to src/sort.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sort/cpu_radix.hpp"

namespace tandem::detail {

constexpr int kMsdBits = 8;
constexpr int kMsdBuckets = 1 << kMsdBits;

struct ElementRange {
  std::size_t begin{0}, end{0};
  int buckets{1};  // non-empty buckets in the range (group_buckets)
  std::size_t size() const { return end - begin; }
  bool operator==(const ElementRange& o) const { return begin == o.begin && end == o.end; }
};

// Consecutive non-empty buckets gathered into ranges of at most `target` elements; a bucket
// larger than `target` forms a range of its own. Ranges cover [0, sum(counts)) in order, and say
// how many non-empty buckets they hold.
std::vector<ElementRange> group_buckets(std::span<const std::uint64_t> counts, std::size_t target);

// The GPU pipeline's choice, from the histograms of every 8-bit digit of the ordered key bits
// (counted on the GPU during the upload). High digits where all keys agree need no sorting at all;
// d is the highest digit where they differ. Split: one CUB pass on digit d (bits [msd_shift,
// msd_shift+8)), then `groups` of consecutive buckets sorted on bits [0, msd_shift) one after the
// other, each copied back while the next sorts. Whole: one CUB sort of bits [0, sort_bits).
struct GpuSplitPlan {
  bool split{false};
  std::string why;
  std::vector<ElementRange> groups;  // when split
  int msd_shift{0};                  // when split
  int sort_bits{0};                  // whole: bits [0, sort_bits) are sorted (0: all keys equal)
};
constexpr std::size_t kGpuSplitMinElements = std::size_t{1} << 22;
constexpr int kGpuSplitGroups = 16;
// digit_counts: key_bits/8 histograms of 256 counts, least significant digit first (empty: none
// counted, one whole sort). Not split below `min_elements` (the sort is short there) or when one
// bucket of digit d holds more than half the keys (skewed: the split would hide little and cost a
// pass); the whole sort then still skips the agreeing high digits.
GpuSplitPlan plan_gpu_split(std::span<const std::uint64_t> digit_counts, std::size_t n, int key_bits,
                            std::size_t min_elements = kGpuSplitMinElements, int groups = kGpuSplitGroups);

// What the host partition did.
struct MsdStats {
  double partition_s{0};  // histograms + scatters
  double pieces_s{0};     // inside sort_piece
  std::size_t pieces{0};
  std::size_t max_piece{0};
  int levels{0};          // digits scattered on the deepest path
  std::size_t copied{0};  // elements of all-equal buckets copied back without sorting
};

// Sorts keys (and values) in place, stably, by a parallel MSD partition on 8-bit digits into
// groups of consecutive buckets of at most `cap` elements, each handed to
// sort_piece(src_keys, src_values, dst_keys, dst_values, len), which must sort src into dst
// (stably for pairs; src may equal dst). Buckets larger than `cap` are partitioned on the next
// digit; digits where all keys of a range agree are skipped; ranges whose keys are all equal
// are left in input order. n <= cap: one piece, in place, no extra memory; otherwise n extra
// keys (and values). `progress(done, n)` is called after each piece when set.
template <class K, class V>
using PieceSort = std::function<void(const K*, const V*, K*, V*, std::size_t)>;
template <class K, class V>
MsdStats msd_partition_sort(std::span<K> keys, std::span<V> values, bool descending, std::size_t cap, int threads,
                            const PieceSort<K, V>& sort_piece,
                            const std::function<void(std::size_t, std::size_t)>& progress = {});

}  // namespace tandem::detail
