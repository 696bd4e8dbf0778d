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

// Sorts keys in place with no n-sized scratch (cpu_in_place.cpp): an MSD radix sort that
// partitions by 8-bit digits of the key bits in place (American flag), then sorts each bucket of
// at most in_place_bucket_limit(n, threads) keys with cpu_radix_sort, one bucket per thread at a
// time, so the scratch never exceeds n / kInPlaceScratchDivisor keys (below 2^20 keys: one
// thread and at most kInPlaceMinBucket keys). Same order as cpu_radix_sort; equal keys are indistinguishable, so
// stability does not arise (there are no values). threads <= 0: default; min_bucket: see below
// (tests lower it to reach the partition with small inputs).
constexpr std::size_t kInPlaceScratchDivisor = 16;               // scratch <= n/16 keys in all
constexpr std::size_t kInPlaceMinBucket = std::size_t{1} << 16;  // buckets this small are never split further
template <class K>
void cpu_in_place_sort(std::span<K> keys, bool descending, int threads, std::size_t min_bucket = kInPlaceMinBucket);

// Pairs, stably (equal keys keep their input order) with the same bound on the scratch, counted
// over keys and values (cpu_in_place_pairs.cpp): blocks of at most in_place_bucket_limit pairs
// sorted by cpu_radix_sort, then merged in place with a buffer of one block per thread.
template <class K, class V>
void cpu_in_place_sort_pairs(std::span<K> keys, std::span<V> values, bool descending, int threads,
                             std::size_t min_block = kInPlaceMinBucket);

// The threads the in-place sorts use: at most `threads`, and few enough that one bucket of at
// least min_bucket keys per thread stays within n / kInPlaceScratchDivisor (at least 1).
int in_place_threads(std::size_t n, int threads, std::size_t min_bucket = kInPlaceMinBucket);
// The largest bucket the in-place sort hands to cpu_radix_sort on one of its threads.
std::size_t in_place_bucket_limit(std::size_t n, int threads, std::size_t min_bucket = kInPlaceMinBucket);

// Value type used for "no values" (an empty span of it).
struct NoValue {};

}  // namespace tandem::detail
