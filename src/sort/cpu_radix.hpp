// CPU sorts behind tandem::sort: a parallel stable radix sort on tandem's ordered key bits
// (key_order.hpp) and a parallel comparison sort. Internal to src/sort.
//
// The radix sort is MSD first, then in cache: one parallel pass scatters the keys by their top
// varying digit (8 to 11 bits, wide enough that a bucket fits in a core's L2), then each thread
// sorts whole buckets by further MSD passes on 8-bit digits, and insertion sort below 64 keys.
// Bits where all keys (of the array, of a bucket) agree are never passed over.
//
// Floor (memory traffic): the parallel pass reads the keys twice (count + varying bits, then
// scatter) and writes them once (plus the write's read-for-ownership): ~4 bytes moved per byte of
// keys (and values); the in-cache passes add one read + one write of each bucket from/to memory
// when buckets do not stay in cache. 2^24 u64 keys (128 MiB): ~0.5-0.8 GB, ~5-8 ms at 100 GB/s
// on 16 threads, ~50-80 ms at the ~10 GB/s two cores stream here. An LSD sort with 8-bit digits
// moves (1 + 4·8)·128 MiB ≈ 4.4 GB for the same keys, and a comparison sort does n·log2 n ≈
// 4·10^8 compares.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "tandem/core/parallel.hpp"

namespace tandem::detail {

// Sorts keys (and values with them, when values is not empty) stably in tandem's key order,
// descending when asked (stable too: equal keys keep their input order). threads <= 0: default.
// Uses n extra elements of each type; 64-bit sizes throughout.
template <class K, class V>
void cpu_radix_sort(std::span<K> keys, std::span<V> values, bool descending, int threads);

// The same sort into other memory: keys (values) receive keys_in (values_in) sorted, and the
// inputs are only read. The first pass reads them, so they need no copy of their own (a mapped
// file is sorted straight out of its pages). Inputs and outputs must not overlap; sizes equal.
template <class K, class V>
void cpu_radix_sort_copy(std::span<const K> keys_in, std::span<const V> values_in, std::span<K> keys,
                         std::span<V> values, bool descending, int threads);

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

// For the sorts that work in place: copies the sources (where given and not already the
// outputs) into keys (values) on `threads` threads (<= 0: default).
template <class K, class V>
void copy_sources(std::span<K> keys, std::span<V> values, const K* keys_in, const V* values_in, int threads) {
  if (keys_in && keys_in != keys.data()) parallel_copy(keys.data(), keys_in, keys.size_bytes(), threads);
  if constexpr (!std::is_same_v<V, NoValue>)
    if (values_in && values_in != values.data()) parallel_copy(values.data(), values_in, values.size_bytes(), threads);
}

// Scratch arrays of the radix sorts, uninitialised (T is trivial). From 2 MiB to 64 MiB they are
// blocks of the process's scratch pool (core/scratch_pool.hpp: 2 MiB aligned, on huge
// pages, kept for the next call), since a fresh block's first touch costs a page fault and the
// kernel zeroing each page: at 2^20 keys on 16 threads that is as long as the sort itself. Larger
// ones are allocated for the call (the fault cost is a small part of their sort, and the pool
// would keep gigabytes); below 2 MiB malloc. Throws std::bad_alloc.
struct ScratchDeleter {
  std::size_t pooled{0};  // the pool block's size, 0 when not from the pool
  void operator()(void* p) const noexcept;
};
template <class T>
using HugeBuffer = std::unique_ptr<T[], ScratchDeleter>;
struct ScratchBlock {
  void* p;
  std::size_t pooled;
};
ScratchBlock scratch_alloc(std::size_t bytes);
template <class T>
HugeBuffer<T> huge_page_buffer(std::size_t n) {
  const ScratchBlock b = scratch_alloc(n * sizeof(T));
  return HugeBuffer<T>(static_cast<T*>(b.p), ScratchDeleter{b.pooled});
}

}  // namespace tandem::detail
