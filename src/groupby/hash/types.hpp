// What the hash group-by's host code and kernels share: the accumulator types of a (key, value)
// pair, the slot layout of the global table, the counters the kernels fill and the pass modes.
// Plain C++: the plan (plan.hpp) and its CPU tests use it without nvcc.
#pragma once
#include <cstdint>
#include <type_traits>

#include "tandem/groupby/accumulators.hpp"
#include "tandem/groupby/gpu_hash_options.hpp"

namespace tandem::hash_groupby {

using Options = GpuHashOptions;
using EngineStats = GpuEngineStats;

template <class K, class V>
struct Traits {
  static_assert(std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::uint64_t>, "keys: u32 or u64 bit patterns");
  static constexpr bool kCount = std::is_void_v<V>;
  using Acc = group_acc_t<V>;                                   // u64 count, Agg<double>, Agg<int64>
  using SAcc = std::conditional_t<kCount, std::uint32_t, Acc>;  // shared accumulator (per block)
  using VIn = std::conditional_t<kCount, char, V>;
  static constexpr bool kPacked = kCount && sizeof(K) == 4;  // slot = key << 32 | count
  static constexpr K kEmpty = static_cast<K>(~K(0));
  static TANDEM_HD Acc identity() { return group_acc_identity<V>(); }
};

template <class K, class Acc>
struct alignas(16) Pair {
  K key;
  Acc acc;
};

template <class K, class V>
using slot_t = std::conditional_t<Traits<K, V>::kPacked, unsigned long long, Pair<K, typename Traits<K, V>::Acc>>;

// Counters the kernels add to; the host reads them after the sampling pass and after the compact.
struct Ctr {
  unsigned long long shared_hits, global_hits, lost, big_pairs;  // big_pairs: sampled pairs of keys in the last bin
  // Partitioned tier: pairs appended, pairs past a full region, pairs past a full reduce table.
  unsigned long long part_pairs, part_direct, part_missed;
  unsigned int overflow_n, out_n, sel_gt, sel_eq;
};

// The main pass's shared table (pass_kernel in kernels.cuh says what each does).
// kGlobal: none. kHot: hot keys preloaded, linear probing. kDynamic (the sampling pass): keys join
// until the table is half full. kHotTwoChoice: placed on the host by two-choice hashing.
// kHotMatch: as kHot, lanes grouped by key first (counts). kHotBuckets / kHotBucketsMatch: as
// kHot / kHotMatch in a bucketed two-choice table each block builds.
enum PassMode : int {
  kGlobal = 0,
  kHot = 1,
  kDynamic = 2,
  kHotTwoChoice = 3,
  kHotMatch = 4,
  kHotBuckets = 5,
  kHotBucketsMatch = 6
};
constexpr bool mode_match(int m) { return m == kHotMatch || m == kHotBucketsMatch; }
constexpr bool mode_buckets(int m) { return m == kHotBuckets || m == kHotBucketsMatch; }

}  // namespace tandem::hash_groupby
