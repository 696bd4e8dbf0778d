// CPU sorts behind tandem::sort: a parallel LSD radix sort on tandem's ordered key bits
// (key_order.hpp) and a parallel comparison sort. Internal to src/sort.
//
// Floor (keys only, u32, 8-bit digits): one counting read of the input, then per non-trivial
// digit one read for the per-thread histogram and one read + one scattered write: about
// (1 + 3·d)·4n bytes for d digits, so 2^24 u32 (64 MiB) moves ~0.8 GB; at the ~10 GB/s two cores
// stream here that is ~80 ms, against ~1 s for a comparison sort (n·log2 n ≈ 4·10^8 compares).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace tandem::detail {

// Sorts keys (and values with them, when values is not empty) stably in tandem's key order,
// descending when asked (stable too: equal keys keep their input order). threads <= 0: default.
// Uses n extra elements of each type; 64-bit sizes throughout.
template <class K, class V>
void cpu_radix_sort(std::span<K> keys, std::span<V> values, bool descending, int threads);

// A parallel comparison sort (__gnu_parallel), stable for pairs. The fallback for algorithm=merge.
template <class K, class V>
void cpu_comparison_sort(std::span<K> keys, std::span<V> values, bool descending, int threads);

// Value type used for "no values" (an empty span of it).
struct NoValue {};

}  // namespace tandem::detail
