// Fast GPU group-by for fixed-width integer keys (u32/u64): open addressing in which the key and
// its aggregate share one slot, with the chained engine's hot keys (sampled, kept in shared
// memory) on top. Include from .cu files only. The chained engine (gpu_engine.cuh) stays the
// reference and Options::Mode::chained.
//
//   1. Sampling pass over the first p% of the records (as in the chained engine): aggregate them into a
//      sample table (never overflows: 2x the sample size), compact it to arrays with each key's
//      sampled count and a histogram of the counts. One host round trip here: the sizes below
//      need the counts.
//   2. The global table is sized 3x (tuned: 2x or 3x) the distinct estimate from the histogram
//      (distinct_estimate.hpp: Good–Turing's upper bound while the table stays within half the L2
//      cache, else Chao1's D_s + f1^2/2f2) and the sample's aggregates are merged into it: every
//      record is reduced once.
//   3. Hot keys: when every sampled key fits in shared memory (low cardinality) all of them are hot
//      (then the block aggregates almost entirely in shared memory, in per-warp sub-tables when they
//      fit, to cut shared atomic contention); else the top H by sampled count, H = hot fraction of
//      the sampled distinct keys, at most what shared memory holds, picked by a count threshold
//      read off the histogram (no sort; CUB radix sort only when more than H keys share the top
//      bin). When the hot keys hold less than 3% of the sample there is no shared table at all.
//   4. Main pass over the rest, grid = SMs x blocks per SM looping over the input with 16-byte
//      streaming loads: each block preloads the hot keys into a shared table (a bucketed
//      two-choice table, bucket_table.hpp, or linear probing at half load); a key
//      found there is reduced with a shared atomic, any other goes straight to the global table:
//      one read of the slot (L1 allowed: keys never change once set), then one atomicCAS (new key) or one atomic update
//      (u32 keys with counts pack key and count into one 64-bit word). At the end each block flushes its shared
//      aggregates into the global table. Counts with many cold keys take the partitioned tier
//      instead (partition_plan.hpp): cold keys sorted by hash partition per tile and written in
//      runs, then each partition reduced in shared memory (partition_reduce_kernel).
//   5. Compact the table to arrays. Second host round trip: the counters (overflow, entries).
// Nothing is lost: an insert that finds no slot within the probe limit goes to an overflow list;
// after the pass the table is grown (rehashed into one large enough for everything) and the list
// merged. Only if the overflow list itself fills is the whole job rerun with a table and list 4x
// larger (reported as a retry). The all-ones key (the empty marker) has its own accumulator.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <cub/device/device_radix_sort.cuh>

#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/mapreduce/bucket_table.hpp"
#include "tandem/mapreduce/distinct_estimate.hpp"
#include "tandem/mapreduce/gpu_engine.cuh"
#include "tandem/mapreduce/partition_plan.hpp"
#include "tandem/mapreduce/two_choice.hpp"

namespace tandem::mr::hash_groupby {
using gpu_engine::DeviceResult;
using gpu_engine::Scratch;

template <class K, class V>
struct Traits {
  static_assert(std::is_same_v<K, std::uint32_t> || std::is_same_v<K, std::uint64_t>, "keys: u32 or u64 bit patterns");
  static constexpr bool kCount = std::is_void_v<V>;
  using Job = GroupByJob<K, V>;
  using Acc = typename Job::value_type;                         // u64 count, Agg<double>, Agg<int64>
  using SAcc = std::conditional_t<kCount, std::uint32_t, Acc>;  // shared accumulator (per block)
  using VIn = std::conditional_t<kCount, char, V>;
  static constexpr bool kPacked = kCount && sizeof(K) == 4;  // slot = key << 32 | count
  static constexpr K kEmpty = static_cast<K>(~K(0));
};

template <class K, class Acc>
struct alignas(16) Pair {
  K key;
  Acc acc;
};

template <class K, class V>
using slot_t = std::conditional_t<Traits<K, V>::kPacked, unsigned long long, Pair<K, typename Traits<K, V>::Acc>>;

struct Ctr {
  unsigned long long shared_hits, global_hits, lost, big_pairs;  // big_pairs: sampled pairs of keys in the last bin
  // Partitioned tier: pairs appended, pairs past a full region, pairs past a full reduce table.
  unsigned long long part_pairs, part_direct, part_missed;
  unsigned int overflow_n, out_n, sel_gt, sel_eq;
};
// Histogram of the sampled counts: bin c holds the keys seen c times, the last bin those seen more.
constexpr std::uint32_t kBins = 4096;

// ---- device helpers ------------------------------------------------------------------------------
// Range reduction without a power-of-two size (Lemire): h * n / 2^32.
__device__ __forceinline__ std::uint32_t slot_of(std::uint32_t h, std::uint32_t n) { return two_choice::reduce(h, n); }

template <class K>
using word_t = std::conditional_t<sizeof(K) == 4, unsigned int, unsigned long long>;
// Keys change once (empty -> key) and never again, so a probe may read them through L1: a stale
// "empty" only sends the thread to the atomicCAS, which returns the truth.
template <class K>
__device__ __forceinline__ K ld_key_ca(const K* p) {
  return static_cast<K>(__ldca(reinterpret_cast<const word_t<K>*>(p)));
}
template <class K>
__device__ __forceinline__ K cas_key(K* p, K cmp, K val) {
  return static_cast<K>(atomicCAS(reinterpret_cast<word_t<K>*>(p), word_t<K>(cmp), word_t<K>(val)));
}

template <class Acc>
__device__ __forceinline__ std::uint64_t count_of(const Acc& a) {
  if constexpr (std::is_same_v<Acc, std::uint64_t> || std::is_same_v<Acc, std::uint32_t>) return a;
  else return a.count;
}
template <class Acc>
__device__ __forceinline__ void combine(Acc& a, const Acc& b) {
  if constexpr (std::is_same_v<Acc, std::uint64_t>) a += b;
  else agg_reduce(a, b);
}
// Atomic reduce of v into *p (global or shared memory through a generic pointer).
template <class Acc>
__device__ __forceinline__ void acc_atomic(Acc* p, const Acc& v) {
  if constexpr (std::is_same_v<Acc, std::uint64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<Acc, Agg<double>>) {
    atomicAdd(&p->sum, v.sum);
    gpu_engine::atomic_min_f64(&p->min, v.min);
    gpu_engine::atomic_max_f64(&p->max, v.max);
    atomicAdd(reinterpret_cast<unsigned long long*>(&p->count), static_cast<unsigned long long>(v.count));
  } else {
    static_assert(std::is_same_v<Acc, Agg<std::int64_t>>);
    atomicAdd(reinterpret_cast<unsigned long long*>(&p->sum), static_cast<unsigned long long>(v.sum));
    atomicMin(reinterpret_cast<long long*>(&p->min), static_cast<long long>(v.min));
    atomicMax(reinterpret_cast<long long*>(&p->max), static_cast<long long>(v.max));
    atomicAdd(reinterpret_cast<unsigned long long*>(&p->count), static_cast<unsigned long long>(v.count));
  }
}
template <class SAcc, class Acc>
__device__ __forceinline__ void sacc_atomic(SAcc* p, const Acc& v) {
  if constexpr (std::is_same_v<SAcc, std::uint32_t>)
    atomicAdd(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v));
  else acc_atomic(p, v);
}

template <class V>
__device__ __forceinline__ V ld_stream(const V* p) {
  if constexpr (std::is_same_v<V, double>) return __ldcs(p);
  else return static_cast<V>(__ldcs(reinterpret_cast<const long long*>(p)));
}

// The aggregate of record i.
template <class K, class V>
__device__ __forceinline__ typename Traits<K, V>::Acc acc_at(const typename Traits<K, V>::VIn* values,
                                                             std::uint64_t i) {
  if constexpr (Traits<K, V>::kCount) {
    (void)values;
    (void)i;
    return 1;
  } else {
    return agg_of<agg_acc_t<V>>(ld_stream(values + i));
  }
}

template <class K, class V>
struct TableRef {
  slot_t<K, V>* slots;
  std::uint32_t cap;
  typename Traits<K, V>::Acc* sentinel;  // aggregate of the key Traits::kEmpty
};

// Overflow list: keys and aggregates that found no slot. cap 0: every failure counts as lost.
template <class K, class V>
struct Sink {
  K* keys;
  typename Traits<K, V>::Acc* accs;
  std::uint32_t cap;
  Ctr* ctr;
  __device__ void push(K k, const typename Traits<K, V>::Acc& a) const {
    const unsigned i = atomicAdd(&ctr->overflow_n, 1u);
    if (i < cap) {
      keys[i] = k;
      accs[i] = a;
    } else {
      atomicAdd(&ctr->lost, 1ull);
    }
  }
};

// Reduces (k, a) into the table; false when no slot was found within `limit` probes.
template <class K, class V>
__device__ __forceinline__ bool upsert(const TableRef<K, V>& t, K k, const typename Traits<K, V>::Acc& a,
                                       std::uint32_t limit) {
  using T = Traits<K, V>;
  if (k == T::kEmpty) {
    acc_atomic(t.sentinel, a);
    return true;
  }
  std::uint32_t i = slot_of(hash32(k), t.cap);
  for (std::uint32_t p = 0; p < limit; ++p) {
    if constexpr (T::kPacked) {
      unsigned long long* s = t.slots + i;
      unsigned long long cur = __ldca(s);  // only the key half is used: a stale count is harmless
      if (cur == ~0ull) {
        cur = atomicCAS(s, ~0ull, (static_cast<unsigned long long>(k) << 32) | static_cast<unsigned long long>(a));
        if (cur == ~0ull) return true;
      }
      if (static_cast<std::uint32_t>(cur >> 32) == k) {
        atomicAdd(s, static_cast<unsigned long long>(a));  // counts stay below 2^32 (M < 2^32)
        return true;
      }
    } else {
      K* kp = &t.slots[i].key;
      K cur = ld_key_ca(kp);
      if (cur == T::kEmpty) {
        cur = cas_key(kp, T::kEmpty, k);
        if (cur == T::kEmpty) cur = k;
      }
      if (cur == k) {
        acc_atomic(&t.slots[i].acc, a);  // initialised to the identity with the table
        return true;
      }
    }
    if (++i == t.cap) i = 0;
  }
  return false;
}

// ---- kernels ---------------------------------------------------------------------------------------
template <class K, class V>
__global__ void init_table_kernel(TableRef<K, V> t) {
  using T = Traits<K, V>;
  const typename T::Acc id = typename T::Job{}.identity();
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < t.cap;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    if constexpr (T::kPacked) {
      t.slots[i] = ~0ull;
    } else {
      t.slots[i].key = T::kEmpty;
      t.slots[i].acc = id;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) *t.sentinel = id;
}

constexpr unsigned kPartVecs = 4;  // vectors per thread in a tile of the partitioned tier

// The partitioned cold tier (counts): partition p's keys sit at keys[p * cap, p * cap + cursor[p]);
// a key past `cap` went straight to the global table.
template <class K>
struct PartRef {
  K* keys{nullptr};
  std::uint32_t* cursor{nullptr};
  std::uint64_t cap{0};
  std::uint32_t bits{0};      // partition = top `bits` bits of hash32(key)
  std::uint32_t smem_off{0};  // where the tile buffer starts in dynamic shared memory
  __device__ __forceinline__ std::uint32_t of(K k) const { return bits ? hash32(k) >> (32u - bits) : 0u; }
};

template <class K, class V>
struct PassArgs {
  const K* keys;
  const typename Traits<K, V>::VIn* values;
  std::uint64_t begin, end;
  TableRef<K, V> table;
  std::uint32_t limit;  // probes before an insert gives up (overflow list)
  Sink<K, V> sink;
  Ctr* ctr;
  const K* hot;                  // hot keys (device)
  std::uint32_t hot_n;           // their number (0: the shared table stays empty)
  const K* top;                  // kHot with counts: up to 8 keys combined per warp first
  const std::uint32_t* top_n;    // their number (device)
  std::uint32_t dyn_limit;       // kDynamic: most keys inserted into the shared table
  std::uint32_t S;               // shared table slots
  std::uint32_t copies;          // accumulator copies per block (warp w uses copy w % copies)
  const K* two_choice{nullptr};  // kHotTwoChoice: the shared table built on the host (two_choice.hpp)
  std::uint32_t seed{0};         // its second hash's seed
  PartRef<K> part{};             // Part kernels: the partitioned cold tier (partition_plan.hpp)
};

template <class K, class V>
__host__ __device__ constexpr std::size_t shared_acc_offset(std::uint32_t S) {
  return (std::size_t(S) * sizeof(K) + 15) & ~std::size_t(15);
}

// Hash for the shared tables (multiplicative: cheap; the global table uses hash32).
template <class K>
__device__ __forceinline__ std::uint32_t shash(K k) {
  return two_choice::hash1(k);
}

// A bucket of buckets::kWays keys read with 16-byte shared loads. `Volatile`: from memory every
// time (tables that other threads fill during the pass).
template <class K, bool Volatile = false>
__device__ __forceinline__ void load_bucket(const K* bucket, K (&out)[buckets::kWays]) {
  static_assert(buckets::kWays == 4);
  const auto a = static_cast<unsigned>(__cvta_generic_to_shared(bucket));
  if constexpr (sizeof(K) == 4) {
    unsigned x, y, z, w;
    if constexpr (Volatile)
      asm volatile("ld.volatile.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(a));
    else asm("ld.shared.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(a));
    out[0] = x, out[1] = y, out[2] = z, out[3] = w;
  } else {
    unsigned long long x, y, z, w;
    if constexpr (Volatile) {
      asm volatile("ld.volatile.shared.v2.u64 {%0,%1}, [%2];" : "=l"(x), "=l"(y) : "r"(a));
      asm volatile("ld.volatile.shared.v2.u64 {%0,%1}, [%2];" : "=l"(z), "=l"(w) : "r"(a + 16));
    } else {
      asm("ld.shared.v2.u64 {%0,%1}, [%2];" : "=l"(x), "=l"(y) : "r"(a));
      asm("ld.shared.v2.u64 {%0,%1}, [%2];" : "=l"(z), "=l"(w) : "r"(a + 16));
    }
    out[0] = x, out[1] = y, out[2] = z, out[3] = w;
  }
}

// Slot of k in a bucketed two-choice table of nb buckets (buckets::), or -1: two bucket loads,
// no loop.
template <class K>
__device__ __forceinline__ int bucket_find(const K* skeys, K k, std::uint32_t nb) {
  const std::uint32_t b1 = buckets::bucket1(k, nb), b2 = buckets::bucket2(k, nb);
  K x[buckets::kWays], y[buckets::kWays];
  load_bucket(skeys + b1 * buckets::kWays, x);
  load_bucket(skeys + b2 * buckets::kWays, y);
  int j = -1;
#pragma unroll
  for (int w = 0; w < int(buckets::kWays); ++w) {
    if (x[w] == k) j = int(b1 * buckets::kWays) + w;
    if (y[w] == k) j = int(b2 * buckets::kWays) + w;
  }
  return j;
}

// Places the block's hot keys in its shared two-choice table (skeys: nb buckets, all empty) by
// parallel cuckoo walks: slots change only through atomics, so every key is always in one slot or
// held by one thread. A key left without a place is not hot in this block (the global path
// reduces it). The caller's barrier ends the build.
template <class K>
__device__ void build_bucket_table(K* skeys, std::uint32_t nb, const K* hot, std::uint32_t H, K empty) {
  for (std::uint32_t h = threadIdx.x; h < H; h += blockDim.x) {
    const K k = hot[h];
    if (k == empty) continue;  // has its own accumulator
    buckets::insert_walk<K>(
        k, nb, empty, h, [&](std::uint32_t i) { return *reinterpret_cast<volatile K*>(&skeys[i]); },
        [&](std::uint32_t i, K x) { return cas_key(&skeys[i], empty, x) == empty; },
        [&](std::uint32_t i, K x) {
          return static_cast<K>(atomicExch(reinterpret_cast<word_t<K>*>(&skeys[i]), word_t<K>(x)));
        });
  }
}

// Finds or inserts k in a shared table of nb buckets that keys join during the pass (bucketed
// linear probing, bucket_table.hpp): reads the home bucket whole and takes its first empty slot,
// so at half load nearly every lane is done after one bucket. A new key first reserves room in
// *fill (at most `limit` keys join). Returns k's slot, or -1 (table at its limit, or no room).
template <class K>
__device__ __forceinline__ int bucket_upsert(K* skeys, std::uint32_t nb, K k, K empty, std::uint32_t* fill,
                                             std::uint32_t limit) {
  constexpr std::uint32_t W = buckets::kWays;
  std::uint32_t b = buckets::bucket1(k, nb);
  for (std::uint32_t probed = 0; probed < nb;) {
    K x[W];
    load_bucket<K, true>(skeys + b * W, x);
    int hit = -1, free = -1;
#pragma unroll
    for (int w = W - 1; w >= 0; --w) {
      if (x[w] == k) hit = w;
      if (x[w] == empty) free = w;  // the first empty slot
    }
    if (hit >= 0) return int(b * W) + hit;
    if (free >= 0) {
      if (*reinterpret_cast<volatile std::uint32_t*>(fill) >= limit || atomicAdd(fill, 1u) >= limit) return -1;
      const K old = cas_key(&skeys[b * W + free], empty, k);
      if (old == empty || old == k) return int(b * W) + free;
      continue;  // another key took the slot: read the bucket again
    }
    if (++b == nb) b = 0;
    ++probed;
  }
  return -1;
}

// Inclusive prefix sum over a full warp.
__device__ __forceinline__ std::uint32_t warp_inclusive_sum(std::uint32_t x) {
  const std::uint32_t lane = threadIdx.x & 31u;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const std::uint32_t y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= unsigned(o)) x += y;
  }
  return x;
}

// Shared bytes of the partitioned tier's tile region (layout in part_body).
template <class K>
__host__ __device__ constexpr std::size_t part_tile_bytes(std::uint32_t tile_keys, std::uint32_t partitions) {
  return std::size_t(tile_keys) * sizeof(K) + (3 * std::size_t(partitions) + 1 + 32) * sizeof(std::uint32_t);
}

// The tiles of the partitioned tier (pass_kernel<..., Part>): every thread loads kPartVecs vectors
// per tile; `step` reduces hot keys and returns true for a single cold key, which gets its rank in
// its partition's tile counter. Then the block scans the counters, reserves each partition's run
// with one global atomic, sorts the cold keys by partition in shared memory and writes each run
// with consecutive threads (whole sectors, not one L2 transaction per key). A key whose region is
// full goes to the global table. Block-uniform loop: `step` may use warp votes.
// Shared memory from pr.smem_off: tile keys, then hist[P], off[P + 1], base[P], wsum[32].
template <class K, class V, class Step>
__device__ __forceinline__ void part_body(const PartRef<K>& pr, const uint4* vp, std::uint64_t nv, unsigned char* smem,
                                          Step&& step, const TableRef<K, V>& t, std::uint32_t limit,
                                          const Sink<K, V>& sink, Ctr* ctr) {
  constexpr unsigned kVec = 16 / sizeof(K), kItems = kPartVecs * kVec;
  const std::uint32_t tid = threadIdx.x, N = blockDim.x, lane = tid & 31u, warp = tid >> 5;
  const std::uint32_t P = 1u << pr.bits;
  K* buf = reinterpret_cast<K*>(smem + pr.smem_off);
  std::uint32_t* hist = reinterpret_cast<std::uint32_t*>(buf + std::size_t(kItems) * N);
  std::uint32_t* off = hist + P;
  std::uint32_t* base = off + P + 1;
  std::uint32_t* wsum = base + P;
  for (std::uint32_t i = tid; i < P; i += N) hist[i] = 0;
  __syncthreads();
  unsigned long long direct = 0, appended = 0;
  const std::uint64_t tile = std::uint64_t(kPartVecs) * N;
  for (std::uint64_t tb = blockIdx.x * tile; tb < nv; tb += std::uint64_t(gridDim.x) * tile) {
    K kk[kItems];
    std::uint32_t rk[kItems];
    uint4 q[kPartVecs];
#pragma unroll
    for (unsigned v = 0; v < kPartVecs; ++v) {
      const std::uint64_t j = tb + v * N + tid;
      q[v] = j < nv ? __ldcs(vp + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (unsigned v = 0; v < kPartVecs; ++v) {
      const std::uint64_t j = tb + v * N + tid;
      K kv[kVec];
      memcpy(kv, &q[v], 16);
#pragma unroll
      for (unsigned u = 0; u < kVec; ++u) {
        kk[v * kVec + u] = kv[u];
        rk[v * kVec + u] = step(kv[u], j < nv, j, u) ? atomicAdd(&hist[pr.of(kv[u])], 1u) : ~0u;
      }
    }
    __syncthreads();
    // exclusive scan of hist (P <= N: one entry per thread), then the runs' places in the regions
    const std::uint32_t x = tid < P ? hist[tid] : 0u;
    const std::uint32_t incl = warp_inclusive_sum(x);
    if (lane == 31) wsum[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      const std::uint32_t w = lane < N / 32 ? wsum[lane] : 0u;
      const std::uint32_t wi = warp_inclusive_sum(w);
      if (lane < N / 32) wsum[lane] = wi - w;
      if (lane == 31) off[P] = wi;
    }
    __syncthreads();
    if (tid < P) {
      off[tid] = incl - x + wsum[warp];
      base[tid] = x ? atomicAdd(&pr.cursor[tid], x) : 0u;
    }
    __syncthreads();
#pragma unroll
    for (unsigned i = 0; i < kItems; ++i)
      if (rk[i] != ~0u) buf[off[pr.of(kk[i])] + rk[i]] = kk[i];
    __syncthreads();
    const std::uint32_t total = off[P];
    appended += tid == 0 ? total : 0u;
    for (std::uint32_t i = tid; i < total; i += N) {
      const K k = buf[i];
      const std::uint32_t p = pr.of(k);
      const std::uint64_t pos = std::uint64_t(base[p]) + (i - off[p]);
      if (pos < pr.cap) {
        pr.keys[p * pr.cap + pos] = k;
      } else {
        ++direct;
        if (!upsert(t, k, typename Traits<K, V>::Acc(1), limit)) sink.push(k, 1);
      }
    }
    if (tid < P) hist[tid] = 0;
    __syncthreads();
  }
  if (appended) atomicAdd(&ctr->part_pairs, appended);
  if (direct) atomicAdd(&ctr->part_direct, direct);
}

// Reduces partition blockIdx.x of the partitioned tier in a shared table of S slots (keys, u32
// counts; S a multiple of buckets::kWays) that new keys join until half full; then each distinct
// key goes to the global table once. Keys arriving after the table is half full go to the global
// table directly (bucket_upsert).
template <class K, class V>
__global__ void __launch_bounds__(512) partition_reduce_kernel(PartRef<K> pr, std::uint32_t S, TableRef<K, V> t,
                                                               std::uint32_t limit, Sink<K, V> sink, Ctr* ctr) {
  using T = Traits<K, V>;
  static_assert(T::kCount, "the partitioned tier: counts");
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ std::uint32_t s_fill;
  K* skeys = reinterpret_cast<K*>(smem);
  std::uint32_t* scnt = reinterpret_cast<std::uint32_t*>(smem + shared_acc_offset<K, V>(S));
  const std::uint32_t tid = threadIdx.x, N = blockDim.x, nb = S / buckets::kWays, lim = S / 2;
  for (std::uint32_t i = tid; i < S; i += N) {
    skeys[i] = T::kEmpty;
    scnt[i] = 0;
  }
  if (tid == 0) s_fill = 0;
  __syncthreads();
  const std::uint64_t n = std::min<std::uint64_t>(pr.cursor[blockIdx.x], pr.cap);
  const K* src = pr.keys + std::uint64_t(blockIdx.x) * pr.cap;
  unsigned long long missed = 0;
  auto add = [&](K k) {
    const int j = bucket_upsert(skeys, nb, k, T::kEmpty, &s_fill, lim);
    if (j >= 0) {
      atomicAdd(&scnt[j], 1u);
      return;
    }
    ++missed;
    if (!upsert(t, k, typename T::Acc(1), limit)) sink.push(k, 1);
  };
  constexpr unsigned kVec = 16 / sizeof(K);
  const std::uint64_t nvec = n / kVec;  // regions start 16-byte aligned (cap is a multiple of 4)
  const uint4* vp = reinterpret_cast<const uint4*>(src);
  for (std::uint64_t i = tid; i < nvec; i += N) {
    const uint4 q = __ldcs(vp + i);
    K kv[kVec];
    memcpy(kv, &q, 16);
#pragma unroll
    for (unsigned u = 0; u < kVec; ++u) add(kv[u]);
  }
  for (std::uint64_t i = nvec * kVec + tid; i < n; i += N) add(src[i]);
  if (missed) atomicAdd(&ctr->part_missed, missed);
  __syncthreads();
  for (std::uint32_t j = tid; j < S; j += N) {
    const K k = skeys[j];
    const std::uint32_t c = scnt[j];
    if (k != T::kEmpty && c && !upsert(t, k, typename T::Acc(c), limit)) sink.push(k, c);
  }
}

// Shared memory: skeys[S], then copies x (S + 1) accumulators (slot S: the all-ones key).
// Mode kGlobal: no shared table. kHot: the hot keys preloaded, read-only during the pass; with
// counts, the keys holding >= 1/16 of the sample ("top" keys) are also combined per warp with a
// ballot first (one shared atomic per warp instead of many on one address). kDynamic (the sampling
// pass): the table starts empty and new keys take slots until `dyn_limit` are used (the chained
// engine's "shared memory until it is full"), so heavy hitters never hammer one global address; bucketed
// linear probing (bucket_upsert), S a multiple of buckets::kWays.
// kHotTwoChoice: as kHot, the table placed on the host by two-choice hashing (two_choice.hpp): two
// fixed slots per key, no probe loop. A mode of its own, so kHot's code (and registers) stay as
// they are.
// kHotMatch (counts only): as kHot, but every step first groups the warp's lanes by key with
// __match_any_sync and one lane per group adds the group's size, so no two lanes of a warp update
// one counter (skewed keys: the heavy hitters' shared atomics stop serialising) and a cold key
// repeated in a warp costs one L2 update.
// kHotBuckets / kHotBucketsMatch: as kHot / kHotMatch, the table a bucketed two-choice table that
// each block builds from the hot list (bucket_table.hpp): two 16-byte loads per lookup, no probe
// loop, and 4/5 of the slots usable (linear probing: half).
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

// Part (counts, not with kDynamic): the body runs in block-wide tiles of kPartVecs vectors per
// thread; a single cold key is not reduced into the global table but appended, with the tile's
// other cold keys sorted by partition in shared memory, to its partition's region in whole runs
// (partition_reduce_kernel reduces the regions afterwards).
template <class K, class V, int Mode, bool Part = false>
__global__ void __launch_bounds__(1024) pass_kernel(PassArgs<K, V> a) {
  using T = Traits<K, V>;
  using Acc = typename T::Acc;
  using SAcc = typename T::SAcc;
  constexpr bool kShared = Mode != kGlobal;
  static_assert(!mode_match(Mode) || T::kCount, "kHotMatch adds group sizes: counts only");
  static_assert(!Part || (T::kCount && Mode != kDynamic), "the partitioned tier: counts, main pass");
  constexpr bool kTop = (Mode == kHot || Mode == kHotTwoChoice || Mode == kHotBuckets) && T::kCount;
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ K s_top[8];
  __shared__ std::uint32_t s_topn, s_fill;
  const std::uint32_t tid = threadIdx.x, N = blockDim.x, lane = tid & 31u;
  K* skeys = reinterpret_cast<K*>(smem);
  SAcc* sacc = reinterpret_cast<SAcc*>(smem + shared_acc_offset<K, V>(a.S));
  SAcc* mine = nullptr;
  if constexpr (kShared) {
    const std::uint32_t S = a.S, C = a.copies, H = a.hot_n;
    for (std::uint32_t i = tid; i < S; i += N) skeys[i] = T::kEmpty;
    SAcc id;
    if constexpr (T::kCount) id = 0;
    else id = typename T::Job{}.identity();
    for (std::uint32_t i = tid; i < C * (S + 1); i += N) sacc[i] = id;
    if (tid == 0) {
      s_fill = H;
      std::uint32_t tn = 0;
      if constexpr (kTop) {
        tn = a.top_n ? *a.top_n : 0u;
        tn = tn < 8u ? tn : 8u;
        for (std::uint32_t t = 0; t < tn; ++t) s_top[t] = a.top[t];
      }
      s_topn = tn;
    }
    __syncthreads();
    if constexpr (Mode == kHotTwoChoice) {
      for (std::uint32_t i = tid; i < S; i += N) skeys[i] = a.two_choice[i];
    } else if constexpr (mode_buckets(Mode)) {
      build_bucket_table<K>(skeys, S / buckets::kWays, a.hot, H, T::kEmpty);
    } else {
      for (std::uint32_t h = tid; h < H; h += N) {
        const K k = a.hot[h];
        if (k == T::kEmpty) continue;  // has its own accumulator
        std::uint32_t j = slot_of(shash(k), S);
        while (true) {  // H <= S/2: a free slot exists
          const K old = cas_key(&skeys[j], T::kEmpty, k);
          if (old == T::kEmpty || old == k) break;
          if (++j == S) j = 0;
        }
      }
    }
    __syncthreads();
    mine = sacc + std::size_t((tid / 32) % C) * (S + 1);
  }
  unsigned long long n_shared = 0, n_global = 0;
  // Reduces (k, v), standing for w pairs. With `defer` (Part), a single cold key is left to the
  // caller, who appends it to its partition: returns true then.
  auto process = [&](K k, const Acc& v, unsigned w, bool defer = false) -> bool {
    if constexpr (kShared) {
      if (k == T::kEmpty) {
        sacc_atomic(&mine[a.S], v);
        n_shared += w;
        return false;
      }
      if constexpr (Mode == kHotTwoChoice) {
        // two fixed slots: no probe loop, the warp stays converged
        const std::uint32_t j1 = two_choice::slot1(k, a.S), j2 = two_choice::slot2(k, a.seed, a.S);
        const K s1 = skeys[j1], s2 = skeys[j2];
        if (s1 == k || s2 == k) {
          sacc_atomic(&mine[s1 == k ? j1 : j2], v);
          n_shared += w;
          return false;
        }
      } else if constexpr (mode_buckets(Mode)) {
        const int j = bucket_find(skeys, k, a.S / buckets::kWays);
        if (j >= 0) {
          sacc_atomic(&mine[j], v);
          n_shared += w;
          return false;
        }
      } else if constexpr (Mode == kDynamic) {
        const int j =
            bucket_upsert(skeys, a.S / buckets::kWays, k, T::kEmpty, &s_fill, a.dyn_limit);  // dyn_limit <= S/2
        if (j >= 0) {
          sacc_atomic(&mine[j], v);
          n_shared += w;
          return false;
        }
      } else {
        std::uint32_t j = slot_of(shash(k), a.S);
        while (true) {
          const K s = skeys[j];
          if (s == k) {
            sacc_atomic(&mine[j], v);
            n_shared += w;
            return false;
          }
          if (s == T::kEmpty) break;
          if (++j == a.S) j = 0;
        }
      }
    }
    n_global += w;
    if (Part && defer && w == 1 && k != T::kEmpty) return true;
    if (!upsert(a.table, k, v, a.limit)) a.sink.push(k, v);
    return false;
  };
  // One key of the warp-uniform body; `valid` false for lanes past the end. True: the key is a
  // single cold key left to the caller (Part only).
  auto step = [&](K k, bool valid, std::uint64_t idx) -> bool {
    if constexpr (mode_match(Mode)) {  // uniform: every lane gets here
      const unsigned m = __match_any_sync(0xffffffffu, k) & __ballot_sync(0xffffffffu, valid);
      if (valid && lane == static_cast<std::uint32_t>(__ffs(m) - 1))
        return process(k, Acc(__popc(m)), static_cast<unsigned>(__popc(m)), Part);
      return false;
    }
    if constexpr (kTop) {
      const std::uint32_t tn = s_topn;
      for (std::uint32_t t = 0; t < tn; ++t) {  // uniform: every lane runs the ballots
        const bool mine_t = valid && k == s_top[t];
        const unsigned m = __ballot_sync(0xffffffffu, mine_t);
        if (mine_t) {
          valid = false;
          if (lane == static_cast<std::uint32_t>(__ffs(m) - 1))
            process(k, Acc(__popc(m)), static_cast<unsigned>(__popc(m)));
        }
      }
    }
    if (valid) return process(k, acc_at<K, V>(a.values, idx), 1u, Part);
    return false;
  };

  const std::uint64_t gtid = std::uint64_t(blockIdx.x) * N + tid, gstride = std::uint64_t(gridDim.x) * N;
  constexpr unsigned kVec = 16 / sizeof(K);
  const K* keys = a.keys;
  const std::uint64_t b = a.begin, e = a.end;
  // scalar head up to a 16-byte boundary, uint4 body (two vectors per thread in flight, a loop
  // whose trip count is the same for every lane of a warp), scalar tail
  const std::uint64_t mis = (reinterpret_cast<std::uintptr_t>(keys + b) & 15u) / sizeof(K);
  const std::uint64_t body = std::min<std::uint64_t>(e, mis ? b + (kVec - mis) : b);
  for (std::uint64_t i = b + gtid; i < body; i += gstride) process(keys[i], acc_at<K, V>(a.values, i), 1u);
  const std::uint64_t nv = (e - body) / kVec;
  const uint4* vp = reinterpret_cast<const uint4*>(keys + body);
  if constexpr (Part) {
    part_body<K, V>(
        a.part, vp, nv, smem,
        [&](K k, bool valid, std::uint64_t j, unsigned u) { return step(k, valid, body + j * kVec + u); }, a.table,
        a.limit, a.sink, a.ctr);
  } else {
    for (std::uint64_t jb = gtid - lane; jb < nv; jb += 2 * gstride) {
      const std::uint64_t j0 = jb + lane, j1 = j0 + gstride;
      uint4 q0 = make_uint4(0, 0, 0, 0), q1 = q0;
      if (j0 < nv) q0 = __ldcs(vp + j0);
      if (j1 < nv) q1 = __ldcs(vp + j1);
      K k0[kVec], k1[kVec];
      memcpy(k0, &q0, 16);
      memcpy(k1, &q1, 16);
#pragma unroll
      for (unsigned u = 0; u < kVec; ++u) step(k0[u], j0 < nv, body + j0 * kVec + u);
#pragma unroll
      for (unsigned u = 0; u < kVec; ++u) step(k1[u], j1 < nv, body + j1 * kVec + u);
    }
  }
  for (std::uint64_t i = body + nv * kVec + gtid; i < e; i += gstride) process(keys[i], acc_at<K, V>(a.values, i), 1u);

    // hit counters: every thread of the block gets here (block size is a multiple of 32)
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    n_shared += __shfl_down_sync(0xffffffffu, n_shared, o);
    n_global += __shfl_down_sync(0xffffffffu, n_global, o);
  }
  if (lane == 0) {
    if (n_shared) atomicAdd(&a.ctr->shared_hits, n_shared);
    if (n_global) atomicAdd(&a.ctr->global_hits, n_global);
  }
  if constexpr (kShared) {
    __syncthreads();
    // flush: one global update per key the block holds in shared memory
    for (std::uint32_t j = tid; j <= a.S; j += N) {
      const K k = j < a.S ? skeys[j] : T::kEmpty;
      if (j < a.S && k == T::kEmpty) continue;
      Acc tot = typename T::Job{}.identity();
      for (std::uint32_t c = 0; c < a.copies; ++c) {
        const SAcc& x = sacc[std::size_t(c) * (a.S + 1) + j];
        if constexpr (T::kCount) tot += x;
        else combine(tot, x);
      }
      if (count_of(tot) == 0) continue;
      if (j == a.S) acc_atomic(a.table.sentinel, tot);
      else if (!upsert(a.table, k, tot, a.limit)) a.sink.push(k, tot);
    }
  }
}

// Counts the distinct keys of keys[0, m) into ctr->out_n through a set of cap > m slots (all
// empty; the empty marker key itself is not counted).
template <class K>
__global__ void count_distinct_kernel(const K* keys, std::uint64_t m, K* set, std::uint32_t cap, Ctr* ctr) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned mine = 0;
  for (std::uint64_t base = std::uint64_t(blockIdx.x) * blockDim.x; base < m;
       base += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t i = base + threadIdx.x;
    if (i >= m) continue;
    const K k = keys[i];
    if (k == Traits<K, void>::kEmpty) continue;
    for (std::uint32_t j = slot_of(hash32(k), cap);; j = j + 1 == cap ? 0 : j + 1) {  // cap > m: a free slot exists
      K old = ld_key_ca(&set[j]);  // read first: a heavy key would otherwise CAS one address from every lane
      if (old == k) break;
      if (old == Traits<K, void>::kEmpty) old = cas_key(&set[j], Traits<K, void>::kEmpty, k);
      if (old == Traits<K, void>::kEmpty) ++mine;
      if (old == Traits<K, void>::kEmpty || old == k) break;
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) mine += __shfl_down_sync(0xffffffffu, mine, o);
  if (lane == 0 && mine) atomicAdd(&ctr->out_n, mine);
}

// Merges n (key, aggregate) pairs into the table.
template <class K, class V>
__global__ void merge_kernel(TableRef<K, V> t, const K* keys, const typename Traits<K, V>::Acc* accs, std::uint32_t n,
                             std::uint32_t limit, Sink<K, V> sink) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    if (!upsert(t, keys[i], accs[i], limit)) sink.push(keys[i], accs[i]);
}

constexpr unsigned kCompactThreads = 256, kCompactItems = 4;  // block size, slots per thread and round
constexpr std::uint64_t kCompactTile = std::uint64_t(kCompactThreads) * kCompactItems;

// Table -> arrays; for the sample (Stats) also the counts and their histogram. Slot `cap` stands
// for the all-ones key. The loop is uniform per block (barriers need every thread). Each block
// reserves a round's output with one atomic: one per warp was ~100K atomics on one counter for a
// 3.3M-slot table, 0.06-0.10 ms of contention at the L2.
template <class K, class V, bool Stats>
__global__ void __launch_bounds__(kCompactThreads)
    compact_kernel(TableRef<K, V> t, K* ok, typename Traits<K, V>::Acc* oa, std::uint32_t* oc, std::uint32_t out_cap,
                   Ctr* ctr, std::uint32_t* hist, std::uint64_t top_min, K* top, std::uint32_t* top_n) {
  using T = Traits<K, V>;
  __shared__ std::uint32_t sh[Stats ? kBins : 1];
  __shared__ std::uint32_t s_warp[kCompactThreads / 32], s_base;
  if constexpr (Stats) {
    for (std::uint32_t i = threadIdx.x; i < kBins; i += blockDim.x) sh[i] = 0;
    __syncthreads();
  }
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  for (std::uint64_t base = std::uint64_t(blockIdx.x) * kCompactTile; base <= t.cap;
       base += std::uint64_t(gridDim.x) * kCompactTile) {
    bool have[kCompactItems];
    K k[kCompactItems];
    typename T::Acc v[kCompactItems];
    std::uint32_t mine = 0;
#pragma unroll
    for (unsigned r = 0; r < kCompactItems; ++r) {
      const std::uint64_t i = base + r * kCompactThreads + threadIdx.x;
      have[r] = false;
      k[r] = T::kEmpty;
      v[r] = typename T::Acc{};
      if (i < t.cap) {
        if constexpr (T::kPacked) {
          const unsigned long long w = t.slots[i];
          have[r] = w != ~0ull;
          k[r] = static_cast<K>(w >> 32);
          v[r] = w & 0xffffffffull;
        } else {
          k[r] = t.slots[i].key;
          have[r] = k[r] != T::kEmpty;
          v[r] = t.slots[i].acc;
        }
      } else if (i == t.cap) {
        v[r] = *t.sentinel;
        have[r] = count_of(v[r]) > 0;
      }
      mine += have[r] ? 1u : 0u;
    }
    // block-wide exclusive scan of the counts, one atomic for the block's run
    const std::uint32_t incl = warp_inclusive_sum(mine);
    if (lane == 31) s_warp[warp] = incl;
    __syncthreads();
    if (threadIdx.x == 0) {
      std::uint32_t run = 0;
      for (unsigned w = 0; w < kCompactThreads / 32; ++w) {
        const std::uint32_t x = s_warp[w];
        s_warp[w] = run;
        run += x;
      }
      s_base = run ? atomicAdd(&ctr->out_n, run) : 0u;
    }
    __syncthreads();
    unsigned o = s_base + s_warp[warp] + incl - mine;
    __syncthreads();  // s_warp and s_base are rewritten next round
#pragma unroll
    for (unsigned r = 0; r < kCompactItems; ++r) {
      if (!have[r]) continue;
      if (o < out_cap) {
        ok[o] = k[r];
        oa[o] = v[r];
      }
      if constexpr (Stats) {
        const std::uint64_t c = count_of(v[r]);
        if (o < out_cap) oc[o] = c > 0xffffffffull ? 0xffffffffu : static_cast<std::uint32_t>(c);
        atomicAdd(&sh[c < kBins ? c : kBins - 1], 1u);
        if (c >= kBins - 1) atomicAdd(&ctr->big_pairs, static_cast<unsigned long long>(c));
        if (c >= top_min) {
          const std::uint32_t q = atomicAdd(top_n, 1u);
          if (q < 8) top[q] = k[r];
        }
      }
      ++o;
    }
  }
  if constexpr (Stats) {
    __syncthreads();
    for (std::uint32_t i = threadIdx.x; i < kBins; i += blockDim.x)
      if (sh[i]) atomicAdd(&hist[i], sh[i]);
  }
}

// The hot keys without sorting: every key seen more than t times, and `need_eq` of those seen
// exactly t times (t below the last histogram bin, so counts compare exactly). Uniform loop.
template <class K>
__global__ void select_hot_kernel(const K* keys, const std::uint32_t* counts, std::uint32_t n, std::uint32_t t,
                                  std::uint32_t above, std::uint32_t need_eq, K* hot, Ctr* ctr) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned lt = (1u << lane) - 1u;
  for (std::uint64_t base = std::uint64_t(blockIdx.x) * blockDim.x; base < n;
       base += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t i = base + threadIdx.x;
    const std::uint32_t c = i < n ? counts[i] : 0u;
    const bool gt = i < n && c > t, eq = i < n && c == t && need_eq > 0;
    const unsigned mg = __ballot_sync(0xffffffffu, gt), me = __ballot_sync(0xffffffffu, eq);
    unsigned pg = 0, pe = 0;
    if (lane == 0 && mg) pg = atomicAdd(&ctr->sel_gt, unsigned(__popc(mg)));
    if (lane == 0 && me) pe = atomicAdd(&ctr->sel_eq, unsigned(__popc(me)));
    pg = __shfl_sync(0xffffffffu, pg, 0);
    pe = __shfl_sync(0xffffffffu, pe, 0);
    if (gt) {
      const unsigned j = pg + __popc(mg & lt);
      if (j < above) hot[j] = keys[i];
    }
    if (eq) {
      const unsigned j = pe + __popc(me & lt);
      if (j < need_eq) hot[above + j] = keys[i];
    }
  }
}

// ---- host side -------------------------------------------------------------------------------------
struct HashPlan {
  int threads{512};
  int blocks_per_sm{4};
  double p{0.01};
  double hot_fraction{0.10};
  std::size_t smem_budget{48 * 1024};  // shared bytes per block for the hot table
  std::uint64_t table_entries{0};      // 0: table_factor x the distinct estimate
  double table_factor{3.0};
  std::uint32_t overflow_cap{0};  // 0: from the input size
  bool hot{true};
  bool warp_match{true};  // kHotMatch where it applies (Options::warp_match allowing)
  bool partition{true};   // the partitioned cold tier where it applies (Options::partition_cold allowing)
  bool buckets{true};     // a bucketed two-choice hot table (Options::hot_buckets allowing)
  std::string label() const {
    return gpu::format("N={} blocks/SM={} p={} hot={} smem={}K table={}x{}{}{}", threads, blocks_per_sm, p,
                       hot_fraction, smem_budget / 1024, table_factor, warp_match ? "" : " no match",
                       partition ? "" : " no partitions", buckets ? "" : " linear probing");
  }
};

template <class K, class V>
class HashGroupBy {
 public:
  using T = Traits<K, V>;
  using Acc = typename T::Acc;
  using VIn = typename T::VIn;
  using Slot = slot_t<K, V>;
  static constexpr double kMinHotShare = 0.03;
  // The global table may take this share of the L2 cache when the sample cannot rule out that
  // many keys (distinct_estimate.hpp). H100, Zipf 1.0 over 1M keys: 3.3M slots (half the L2)
  // against 1.9M (Chao1): main pass 1.35 vs 1.41 ms.
  static constexpr double kTableL2Share = 0.5;
  // With the partitioned cold tier available, a hot table must hold this much of the sample: every
  // cold key pays a shared-table probe (H100, Zipf 0.5: 6% hot, main pass 2.28 ms against 0.83 ms
  // without the table).
  static constexpr double kMinHotSharePartitioned = 0.25;

  // Group-by of keys[0, M) (values[0, M) unless counting) already on the device. The result stays
  // on the device until the next call.
  DeviceResult<K, Acc> run_device(const K* keys, const VIn* values, std::uint64_t M, const Options& o, EngineStats& st,
                                  Report& rep, cudaStream_t stream) {
    if (M >= (std::uint64_t{1} << 32)) throw UsageError("hash group-by: 2^32 records or more (use the chained engine)");
    HashPlan pl = resolve(keys, values, M, o, rep, stream);
    for (int attempt = 0;; ++attempt) {
      if (attempt > 12) throw Error("hash group-by: the table kept overflowing after 12 retries");
      if (attempt_once(keys, values, M, pl, st, rep, stream)) {
        st.retries = attempt;
        return {out_keys_, out_accs_, n_out_};
      }
      rep.note(
          gpu::format("retry {}: the overflow list filled (table {} slots, list {}); rerunning with both 4x larger",
                      attempt + 1, st.table_slots, st.spill_entries));
      pl.table_entries = std::max<std::uint64_t>(st.table_slots, 16) * 4;
      pl.overflow_cap =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(std::uint64_t(st.spill_entries) * 4, 1u << 30));
    }
  }

  std::vector<std::pair<K, Acc>> run(const K* keys, const VIn* values, std::uint64_t M, const Options& o,
                                     EngineStats& st, Report& rep, cudaStream_t stream) {
    return gpu_engine::to_host(run_device(keys, values, M, o, st, rep, stream), rep, stream);
  }

  // The plan from the options alone (no tuning).
  static HashPlan plan_from(const Options& o) {
    HashPlan pl;
    if (o.block_threads > 0) pl.threads = std::clamp((o.block_threads + 31) / 32 * 32, 32, 1024);
    if (o.sample_fraction >= 0) pl.p = std::min(o.sample_fraction, 0.5);
    if (o.hot_fraction >= 0) pl.hot_fraction = std::min(o.hot_fraction, 1.0);
    pl.hot = o.hot_keys;
    pl.table_entries = o.result_entries;
    pl.overflow_cap = static_cast<std::uint32_t>(std::min<std::size_t>(o.spill_entries, 1u << 30));
    if (o.shared_entries) pl.smem_budget = 0;  // sized from shared_entries below
    return pl;
  }

 private:
  // Tuning (Tuner + TuningCache, op "mapreduce.hash"): on the first large job of a problem class,
  // a few (N, blocks per SM, shared budget, p, hot fraction) sets are each timed on the whole job.
  HashPlan resolve(const K* keys, const VIn* values, std::uint64_t M, const Options& o, Report& rep,
                   cudaStream_t stream) {
    HashPlan base = plan_from(o);
    base.smem_budget = o.shared_entries ? 0 : base.smem_budget;
    opts_ = o;
    const bool fixed = o.block_threads > 0 || o.blocks > 0 || o.sample_fraction >= 0 || o.hot_fraction >= 0 ||
                       o.shared_entries || o.result_entries || o.spill_entries;
    if (!o.tune || fixed || M < o.tune_min_records) return base;
    // The problem class includes the cardinality seen by a small sample (first 2^16 records).
    const std::uint64_t m = std::min<std::uint64_t>(M, 1u << 16);
    const std::uint64_t ds = sample_distinct(keys, m, stream);
    const int card = ds <= 1024 ? 0 : (ds * 8 < m ? 1 : (ds * 2 < m ? 2 : 3));  // few ... many distinct keys
    int dev = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    const auto gpus = gpu_info();
    const std::string gkey = dev < int(gpus.size()) ? gpus[dev].key() : std::string("gpu");
    const std::string cls =
        gpu::format("k{}v{}/{}/card{}/hot{}", sizeof(K), sizeof(Acc), size_class(M), card, o.hot_keys ? 1 : 0);
    auto from = [&](const nlohmann::json& j) {
      HashPlan p = base;
      p.threads = positive_field<int>(j, "N");
      p.blocks_per_sm = positive_field<int>(j, "bps");
      p.p = positive_field(j, "p");
      p.hot_fraction = positive_field(j, "hot");
      p.smem_budget = positive_field<std::size_t>(j, "smem");
      p.table_factor = j.value("tf", 3.0);
      p.warp_match = j.value("wm", true);
      p.partition = j.value("pt", true);
      p.buckets = j.value("bk", true);
      return p;
    };
    auto& cache = TuningCache::global();
    auto parse = [&](const nlohmann::json& j) {
      HashPlan p = from(j);
      if (p.threads < 32 || p.threads > 1024 || p.threads % 32 || p.blocks_per_sm > 64 || p.p > 0.5 ||
          p.hot_fraction > 1 || !(p.table_factor >= 1 && p.table_factor <= 64))
        throw std::out_of_range("a parameter is out of range: " + j.dump());
      return p;
    };
    if (auto p = cache.lookup("mapreduce.hash", gkey, cls, parse, &rep)) {
      rep.note(gpu::format("hash group-by parameters from the tuning cache ({}): {}", cls, p->label()));
      return *p;
    }
    std::vector<Candidate> cands;
    auto add = [&](int N, int bps, double p, double hf, std::size_t smem, double tf = 3.0, bool wm = true,
                   bool pt = true, bool bk = true) {
      nlohmann::json j{{"N", N},   {"bps", bps}, {"p", p},   {"hot", hf}, {"smem", smem},
                       {"tf", tf}, {"wm", wm},   {"pt", pt}, {"bk", bk}};
      cands.push_back({from(j).label(), j});
    };
    add(512, 4, 0.01, 0.10, 48 * 1024);
    add(1024, 2, 0.01, 0.10, 96 * 1024);
    add(256, 8, 0.01, 0.10, 24 * 1024);
    add(512, 4, 0.003, 0.10, 48 * 1024);
    add(512, 4, 0.03, 0.05, 48 * 1024);
    add(512, 4, 0.01, 0.50, 48 * 1024);
    add(512, 4, 0.01, 0.10, 48 * 1024, 2.0);
    if (T::kCount && o.warp_match) {  // lanes grouped by key or not (match_any costs more the more keys a warp holds)
      add(512, 4, 0.01, 0.10, 48 * 1024, 3.0, false);
      add(1024, 2, 0.01, 0.10, 96 * 1024, 3.0, false);
    }
    if (T::kCount && o.partition_cold && card > 0) {  // cold keys straight into the global table
      add(512, 4, 0.01, 0.10, 48 * 1024, 3.0, true, false);
      add(1024, 2, 0.01, 0.10, 96 * 1024, 3.0, true, false);
      add(1024, 2, 0.01, 0.10, 96 * 1024, 2.0, true, false);
      add(1024, 2, 0.01, 0.10, 110 * 1024, 3.0, true, false);  // the most two blocks of an SM hold
    }
    if (o.hot_buckets && card > 0) {
      // hot keys in a linear-probing table (half full) instead of the bucketed two-choice one
      add(512, 4, 0.01, 0.10, 48 * 1024, 3.0, true, true, false);
      add(1024, 2, 0.01, 0.10, 96 * 1024, 3.0, true, true, false);
      // a larger bucketed table: more of a skewed input stays in shared memory, fewer blocks
      add(1024, 1, 0.01, 0.10, 144 * 1024);
      add(512, 2, 0.01, 0.10, 96 * 1024);
    }
    if (card == 0) {
      // at most 1,024 keys in the first 2^16 records: a sample of 0.1% finds them all, and the
      // sampling pass costs ~3x the main pass per record
      add(512, 4, 0.001, 0.10, 48 * 1024);
      add(1024, 2, 0.001, 0.10, 96 * 1024);
    }
    auto res = Tuner().repetitions(3).warmup(1).run(cands, [&](const Candidate& c) {
      EngineStats st;
      Report scratch;
      const HashPlan p = from(c.params);
      TANDEM_CUDA(cudaStreamSynchronize(stream));
      Stopwatch w;
      if (!attempt_once(keys, values, M, p, st, scratch, stream)) return 1e9;  // overflowed: not a winner
      return w.seconds();
    });
    const auto& win = res.winner();
    cache.put("mapreduce.hash", gkey, cls, win.candidate.params);
    rep.note(gpu::format("tuned hash group-by ({}):\n{}", cls, res.report()));
    return from(win.candidate.params);
  }

  static constexpr std::uint64_t kGridCap = 4096;  // its grid-stride kernels loop over the rest
  // A compact of a table of `cap` slots (and the empty marker's slot cap).
  static int compact_grid(std::uint64_t cap) {
    return static_cast<int>(std::clamp<std::uint64_t>((cap + kCompactTile) / kCompactTile, 1, 4096));
  }

  // The counters (and with `hist`, the sample's count histogram into hist_host_), through pinned
  // memory: a pageable copy costs more than the small kernels.
  // With `keys`, also the first `nkeys` of them into keys_host_ (speculatively: the sample's keys
  // before its size is known, for a two-choice table).
  Ctr read_ctr(cudaStream_t stream, const std::uint32_t* hist = nullptr, const K* keys = nullptr,
               std::uint32_t nkeys = 0) {
    if (!pinned_.data()) pinned_ = gpu::PinnedBuffer<Ctr>(1);
    TANDEM_CUDA(cudaMemcpyAsync(pinned_.data(), ctr_, sizeof(Ctr), cudaMemcpyDeviceToHost, stream));
    if (hist) {
      if (!hist_host_.data()) hist_host_ = gpu::PinnedBuffer<std::uint32_t>(kBins);
      TANDEM_CUDA(
          cudaMemcpyAsync(hist_host_.data(), hist, kBins * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, stream));
    }
    if (keys && nkeys) {
      if (!keys_host_.data()) keys_host_ = gpu::PinnedBuffer<K>(kTwoChoiceMax);
      TANDEM_CUDA(cudaMemcpyAsync(keys_host_.data(), keys, std::min(nkeys, kTwoChoiceMax) * sizeof(K),
                                  cudaMemcpyDeviceToHost, stream));
    }
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    return pinned_[0];
  }

  struct Dev {
    int id{-1}, sms{0};
    std::size_t optin{0}, l2{0};
  };
  // Device attributes, cached (cudaGetDeviceProperties is slow).
  const Dev& dev() {
    int id = 0;
    TANDEM_CUDA(cudaGetDevice(&id));
    if (dev_.id != id) {
      int sms = 0, optin = 0, l2 = 0;
      TANDEM_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, id));
      TANDEM_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, id));
      TANDEM_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, id));
      dev_ = Dev{id, sms, static_cast<std::size_t>(optin), static_cast<std::size_t>(l2)};
    }
    return dev_;
  }

  void init_table(const TableRef<K, V>& t, cudaStream_t stream) {
    init_table_kernel<K, V><<<gpu::grid_for(t.cap, 256, kGridCap), 256, 0, stream>>>(t);
    TANDEM_CUDA_LAUNCH("hash group-by: init table");
  }

  void compact(const TableRef<K, V>& t, K* ok, Acc* oa, std::uint32_t out_cap, cudaStream_t stream) {
    compact_kernel<K, V, false><<<compact_grid(t.cap), kCompactThreads, 0, stream>>>(t, ok, oa, nullptr, out_cap, ctr_,
                                                                                     nullptr, 0, nullptr, nullptr);
    TANDEM_CUDA_LAUNCH("hash group-by: compact");
  }

  using PassFn = void (*)(PassArgs<K, V>);
  // The pass kernel of a mode (kHotMatch exists for counts only); `part`: with the partitioned
  // cold tier (counts; kGlobal and the hot modes but kHotTwoChoice).
  static PassFn pass_fn(int mode, bool part = false) {
    if (part) {
      if constexpr (T::kCount) {
        switch (mode) {
          case kGlobal: return pass_kernel<K, V, kGlobal, true>;
          case kHot: return pass_kernel<K, V, kHot, true>;
          case kHotMatch: return pass_kernel<K, V, kHotMatch, true>;
          case kHotBuckets: return pass_kernel<K, V, kHotBuckets, true>;
          case kHotBucketsMatch: return pass_kernel<K, V, kHotBucketsMatch, true>;
          default: break;
        }
      }
      throw Error("hash group-by: internal error, no partitioned pass for this mode");
    }
    switch (mode) {
      case kHot: return pass_kernel<K, V, kHot>;
      case kDynamic: return pass_kernel<K, V, kDynamic>;
      case kHotTwoChoice: return pass_kernel<K, V, kHotTwoChoice>;
      case kHotBuckets: return pass_kernel<K, V, kHotBuckets>;
      case kHotMatch:
        if constexpr (T::kCount) return pass_kernel<K, V, kHotMatch>;
        else throw Error("hash group-by: internal error, lanes grouped by key outside a count");
      case kHotBucketsMatch:
        if constexpr (T::kCount) return pass_kernel<K, V, kHotBucketsMatch>;
        else throw Error("hash group-by: internal error, lanes grouped by key outside a count");
      default: return pass_kernel<K, V, kGlobal>;
    }
  }

  void launch_pass(int mode, const PassArgs<K, V>& args, int blocks, int threads, std::size_t smem, cudaStream_t stream,
                   bool part = false) {
    const PassFn k = pass_fn(mode, part);
    TANDEM_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    k<<<blocks, threads, smem, stream>>>(args);
    TANDEM_CUDA_LAUNCH("hash group-by: pass");
  }

  // Distinct keys among the first m records (for the tuning class): one kernel over a key set
  // (memset to the empty marker) that counts its inserts, one round trip.
  std::uint64_t sample_distinct(const K* keys, std::uint64_t m, cudaStream_t stream) {
    ctr_ = ctr_buf_.get<Ctr>(1);
    TANDEM_CUDA(cudaMemsetAsync(ctr_, 0, sizeof(Ctr), stream));
    const std::uint32_t cap = static_cast<std::uint32_t>(2 * m + 16);
    K* set = sample_keys_.get<K>(cap);
    TANDEM_CUDA(cudaMemsetAsync(set, 0xff, std::size_t(cap) * sizeof(K), stream));
    count_distinct_kernel<K><<<gpu::grid_for(m, 256, kGridCap), 256, 0, stream>>>(keys, m, set, cap, ctr_);
    TANDEM_CUDA_LAUNCH("hash group-by: distinct keys of a small sample");
    return read_ctr(stream).out_n;
  }

  bool attempt_once(const K* keys, const VIn* values, std::uint64_t M, const HashPlan& pl, EngineStats& st, Report& rep,
                    cudaStream_t stream) {
    const Dev& prop = dev();
    gpu::Event t0, t1, t2, t3, t3b, t4;
    t0.record(stream);
    st = EngineStats{};
    st.engine = "hash";
    st.records = M;
    st.block_threads = pl.threads;
    st.sample_fraction = pl.p;
    st.hot_fraction = pl.hot_fraction;
    st.hot_path = pl.hot;
    st.block_tables = false;
    ctr_ = ctr_buf_.get<Ctr>(1);
    TANDEM_CUDA(cudaMemsetAsync(ctr_, 0, sizeof(Ctr), stream));
    Acc* sent = sentinel_.get<Acc>(2);
    const std::uint32_t ovf_cap = pl.overflow_cap
                                      ? pl.overflow_cap
                                      : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(M / 32, 4096, 1u << 24));
    st.spill_entries = ovf_cap;
    Sink<K, V> sink{ovf_keys_.get<K>(ovf_cap), ovf_accs_.get<Acc>(ovf_cap), ovf_cap, ctr_};
    const int sms = prop.sms;

    // 1. sampling pass over the first p% (all of a small input)
    std::uint64_t Ms = M;
    if (M > 4096) Ms = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(std::ceil(double(M) * pl.p)), 4096, M);
    st.sampled_records = Ms;
    const std::uint32_t cap_s = static_cast<std::uint32_t>(2 * Ms + 16);
    TableRef<K, V> ts{sample_slots_.get<Slot>(cap_s), cap_s, sent + 1};
    K* sk = sample_keys_.get<K>(std::size_t(cap_s) + 1);
    Acc* sa = sample_accs_.get<Acc>(std::size_t(cap_s) + 1);
    std::uint32_t* sc = sample_counts_.get<std::uint32_t>(2 * (std::size_t(cap_s) + 1));
    std::uint32_t* hist = hist_.get<std::uint32_t>(kBins);
    TANDEM_CUDA(cudaMemsetAsync(hist, 0, kBins * sizeof(std::uint32_t), stream));
    init_table(ts, stream);
    K* top = top_keys_.get<K>(8);
    std::uint32_t* top_n = top_n_.get<std::uint32_t>(1);
    TANDEM_CUDA(cudaMemsetAsync(top_n, 0, sizeof(std::uint32_t), stream));
    {
      // small dynamic shared tables (256 keys per block): heavy hitters of the sample stay in
      // shared memory; each block flushes at most 256 keys
      constexpr std::uint32_t kSampleKeys = 256, kSampleSlots = 2 * kSampleKeys;  // whole buckets
      const std::size_t ssm = shared_acc_offset<K, V>(kSampleSlots) + (kSampleSlots + 1) * sizeof(typename T::SAcc);
      PassArgs<K, V> a{keys,    values, 0,       Ms,      ts,          cap_s,        sink, ctr_,
                       nullptr, 0,      nullptr, nullptr, kSampleKeys, kSampleSlots, 1};
      if (pl.hot) launch_pass(kDynamic, a, sms * 4, 512, ssm, stream);
      else launch_pass(kGlobal, a, sms * 8, 256, 0, stream);
    }
    // keys holding >= 1/16 of the sample are combined per warp in the main pass
    const std::uint64_t top_min = std::max<std::uint64_t>(2, Ms / 16);
    compact_kernel<K, V, true><<<compact_grid(cap_s), kCompactThreads, 0, stream>>>(ts, sk, sa, sc, cap_s + 1, ctr_,
                                                                                    hist, top_min, top, top_n);
    TANDEM_CUDA_LAUNCH("hash group-by: compact sample");
    const Ctr c1 = read_ctr(stream, hist, opts_.two_choice && pl.hot ? sk : nullptr,
                            std::min<std::uint32_t>(cap_s + 1, kTwoChoiceMax));
    const std::uint32_t* hh = hist_host_.data();
    const double f1 = hh[1], f2 = hh[2];
    if (c1.overflow_n || c1.lost || c1.out_n > cap_s + 1)
      throw Error("hash group-by: internal error, the sample table overflowed");
    const std::uint32_t Ds = c1.out_n;
    TANDEM_CUDA(cudaMemsetAsync(ctr_, 0, sizeof(Ctr), stream));
    t1.record(stream);

    // 2. global table: 3x the distinct estimate (distinct_estimate.hpp), the sample merged in
    const double cheap_keys = kTableL2Share * double(prop.l2) / (pl.table_factor * sizeof(Slot));
    const auto de = distinct_estimate::estimate({Ms, M, double(Ds), f1, f2}, cheap_keys);
    const double est = de.keys;
    st.sampled_distinct = Ds;
    st.distinct_estimate = static_cast<std::uint64_t>(de.chao1);
    st.distinct_upper = static_cast<std::uint64_t>(de.upper);
    const std::uint64_t want =
        pl.table_entries ? pl.table_entries : static_cast<std::uint64_t>(pl.table_factor * est) + 1024;
    const std::uint32_t cap = static_cast<std::uint32_t>(std::clamp<std::uint64_t>(want, 2, 0x7fffffffull));
    st.table_slots = cap;
    TableRef<K, V> t{table_[cur_].get<Slot>(cap), cap, sent};
    const std::uint32_t limit = std::min<std::uint32_t>(cap, 512);
    init_table(t, stream);
    if (Ds) {
      merge_kernel<K, V><<<gpu::grid_for(Ds, 256, kGridCap), 256, 0, stream>>>(t, sk, sa, Ds, limit, sink);
      TANDEM_CUDA_LAUNCH("hash group-by: merge sample");
    }

    // 3. hot keys
    std::uint32_t S = 0, C = 1, H = 0, tc_seed = 0;
    const K* tc = nullptr;  // two-choice table on the device
    std::size_t smem = 0;
    const K* hot = nullptr;
    const bool hot_possible = pl.hot && Ms < M && Ds > 0;
    const bool use_buckets = opts_.hot_buckets && pl.buckets;
    bool all_hot = false;  // every sampled key is hot
    // The largest sampled count a key outside the hot table may have (bounds the skew the
    // partitioned tier sees): without hot keys the highest histogram bin in use; keys in the
    // last bin are bounded by their pairs' sum.
    double cold_max = 0;
    for (std::uint32_t b = kBins - 1; b > 0; --b)
      if (hh[b]) {
        cold_max = b == kBins - 1 ? double(c1.big_pairs) : double(b);
        break;
      }
    const bool may_partition = T::kCount && opts_.partition_cold && pl.partition && Ms < M;
    std::size_t free_b = 0, total_b = 0;
    if (may_partition) TANDEM_CUDA(cudaMemGetInfo(&free_b, &total_b));
    // The partitioned tier's inputs with H hot keys holding `hot_share` of the sample.
    auto part_inputs = [&](std::uint32_t hot_n, double hot_share, double max_count) {
      partition_plan::Inputs in;
      in.cold_pairs = static_cast<std::uint64_t>(double(M - Ms) * std::max(0.0, 1.0 - hot_share));
      in.cold_distinct = std::max(1.0, est - hot_n);
      in.max_cold_share = max_count / double(Ms);
      in.threads = static_cast<std::uint32_t>(pl.threads);
      in.tile_keys = kPartVecs * (16 / sizeof(K)) * static_cast<std::uint32_t>(pl.threads);
      in.key_bytes = sizeof(K);
      in.free_bytes = free_b + part_keys_.buf.size();
      in.shared_max = std::min<std::size_t>(prop.optin, 64 * 1024);
      return in;
    };
    const bool part_without_hot = may_partition && partition_plan::plan(part_inputs(0, 0.0, cold_max)).use;
    if (hot_possible) {
      const std::size_t budget = pl.smem_budget ? std::min<std::size_t>(pl.smem_budget, prop.optin - 1024) : 0;
      const std::uint32_t warps = std::uint32_t(pl.threads / 32);
      auto bytes = [&](std::uint32_t s, std::uint32_t c) {
        return shared_acc_offset<K, V>(s) + std::size_t(c) * (s + 1) * sizeof(typename T::SAcc);
      };
      std::uint32_t Hmax;
      if (budget) {
        const std::uint32_t smax = static_cast<std::uint32_t>((budget - 16 - sizeof(typename T::SAcc)) /
                                                              (sizeof(K) + sizeof(typename T::SAcc)));
        Hmax = use_buckets ? buckets::capacity(smax) : smax / 2;
      } else {
        Hmax = static_cast<std::uint32_t>(opts_.shared_entries);
      }
      const bool all = Ds <= Hmax;
      all_hot = all;
      std::uint32_t want =
          all ? Ds : std::min<std::uint32_t>(Hmax, static_cast<std::uint32_t>(std::ceil(pl.hot_fraction * Ds)));
      double share = 1.0;
      if (all) {
        hot = sk;  // every sampled key
      } else if (want) {
        // Threshold t from the histogram: the `above` keys seen more than t times plus need_eq of
        // those seen exactly t times make `want`. No sort.
        std::uint64_t above = 0, pairs = 0;
        std::uint32_t t = kBins - 1;
        if (hh[kBins - 1] < want) {
          above = hh[kBins - 1];
          pairs = c1.big_pairs;
          for (t = kBins - 2; t > 1; --t) {
            if (above + hh[t] >= want) break;
            above += hh[t];
            pairs += std::uint64_t(hh[t]) * t;
          }
          // t == 1 here means: every key seen more than once is in, the rest from those seen once
        }
        if (t == kBins - 1) {  // more than `want` keys in the last bin: sort the counts
          std::uint32_t* counts_sorted = sc + (cap_s + 1);
          K* sorted = hot_keys_.get<K>(Ds);
          const int end_bit = std::max(1, int(std::bit_width(static_cast<std::uint64_t>(Ms))));
          std::size_t temp = 0;
          TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp, sc, counts_sorted, sk, sorted, int(Ds),
                                                                0, end_bit, stream));
          void* tmp = temp_.get<unsigned char>(temp);
          TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(tmp, temp, sc, counts_sorted, sk, sorted, int(Ds), 0,
                                                                end_bit, stream));
          hot = sorted;
          share = double(c1.big_pairs) * want / std::max<double>(1, hh[kBins - 1]) /
                  double(Ms);  // average key of the last bin
        } else {
          const std::uint32_t need_eq = static_cast<std::uint32_t>(std::min<std::uint64_t>(want - above, hh[t]));
          want = static_cast<std::uint32_t>(above + need_eq);
          pairs += std::uint64_t(need_eq) * t;
          share = double(pairs) / double(Ms);
          if (share >= (part_without_hot ? kMinHotSharePartitioned : kMinHotShare) && want) {
            cold_max = t;  // every key seen more than t times is hot
            K* dst = hot_keys_.get<K>(want);
            select_hot_kernel<K><<<gpu::grid_for(Ds, 256, kGridCap), 256, 0, stream>>>(
                sk, sc, Ds, t, static_cast<std::uint32_t>(above), need_eq, dst, ctr_);
            TANDEM_CUDA_LAUNCH("hash group-by: select hot keys");
            hot = dst;
          } else {
            want = 0;  // the hot keys hold too little of the sample: no shared table
          }
        }
      }
      H = want;
      st.hot_share = H ? share : 0.0;
      if (H) {
        S = 2 * H + 1;
        if (all && opts_.two_choice && Ds <= kTwoChoiceMax) {
          // Every sampled key is hot and they are few: two fixed slots per key in a table at most
          // a quarter full (two-choice placement then succeeds at the first or second seed).
          const std::uint32_t S2 = std::max<std::uint32_t>(64, 4 * Ds);
          tc_seed = two_choice::build<K>(std::span<const K>(keys_host_.data(), Ds), S2, T::kEmpty, two_choice_table_);
          if (tc_seed) {
            S = S2;
            if (!two_choice_host_.data())
              two_choice_host_ = gpu::PinnedBuffer<K>(std::max<std::uint32_t>(64, 4 * kTwoChoiceMax));
            std::copy(two_choice_table_.begin(), two_choice_table_.end(), two_choice_host_.data());
            K* dst = two_choice_keys_.get<K>(S);
            TANDEM_CUDA(cudaMemcpyAsync(dst, two_choice_host_.data(), S * sizeof(K), cudaMemcpyHostToDevice, stream));
            tc = dst;
          }
        }
        if (!tc && use_buckets) S = buckets::kWays * buckets::buckets_for(H);
        const std::size_t cap_bytes = budget ? budget : bytes(S, 1);
        while (C * 2 <= warps && bytes(S, C * 2) <= cap_bytes) C *= 2;
        smem = bytes(S, C);
        if (smem > prop.optin)
          throw UsageError(
              gpu::format("hot table of {} keys needs {} bytes of shared memory; the GPU has {}", H, smem, prop.optin));
      }
    }
    st.hot_keys = H;
    st.two_choice = tc != nullptr;
    st.hot_buckets = H > 0 && !tc && use_buckets;
    st.shared_entries = S;
    st.sub_tables = C;
    t2.record(stream);

    // the partitioned cold tier (counts): where the cold keys are many and none is heavy
    partition_plan::Plan pp;
    PartRef<K> part{};
    if constexpr (T::kCount) {
      if (may_partition && !all_hot) {
        const partition_plan::Inputs in = part_inputs(H, H ? st.hot_share : 0.0, cold_max);
        pp = partition_plan::plan(in);
        const std::size_t part_off = (smem + 15) & ~std::size_t(15);
        const std::size_t part_smem = part_off + part_tile_bytes<K>(in.tile_keys, pp.partitions);
        if (pp.use && part_smem > prop.optin) {
          pp.use = false;
          pp.why = "the tile buffer does not fit in shared memory beside the hot table";
        }
        if (pp.use) {
          part.keys = part_keys_.get<K>(std::size_t(pp.partitions) * pp.capacity);
          part.cursor = part_cursor_.get<std::uint32_t>(pp.partitions);
          part.cap = pp.capacity;
          part.bits = pp.bits;
          part.smem_off = static_cast<std::uint32_t>(part_off);
          TANDEM_CUDA(cudaMemsetAsync(part.cursor, 0, pp.partitions * sizeof(std::uint32_t), stream));
          smem = part_smem;
        }
      } else {
        pp.why = !opts_.partition_cold || !pl.partition ? "off"
                 : Ms >= M                              ? "the sample covers the input"
                                                        : "every sampled key is hot";
      }
    }
    st.partitions = pp.use ? pp.partitions : 0;
    st.partition_note = pp.use ? gpu::format("{} partitions of {} keys, reduce tables of {} slots", pp.partitions,
                                             pp.capacity, pp.slots)
                               : pp.why;

    // 4. main pass
    const bool hot_pass = H > 0;
    // counts with a probed hot table: lanes grouped by key first (kHotMatch)
    // Untuned, only where the hot keys are the top of a larger key set (skewed data): with every
    // key hot (few distinct keys, often near-uniform) a warp holds ~32 different keys, match_any
    // costs most and the per-warp sub-tables already keep warps apart (measured 2.6x slower at 128
    // uniform keys with linear probing).
    const bool match = T::kCount && hot_pass && !tc && opts_.warp_match && pl.warp_match && !all_hot;
    st.warp_match = match;
    const int mode = !hot_pass ? kGlobal
                     : tc      ? kHotTwoChoice
                     : match   ? (st.hot_buckets ? kHotBucketsMatch : kHotMatch)
                               : (st.hot_buckets ? kHotBuckets : kHot);
    int per_sm = 1;
    {
      const PassFn kf = pass_fn(mode, pp.use);
      TANDEM_CUDA(cudaFuncSetAttribute(kf, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
      TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kf, pl.threads, smem));
    }
    const int blocks = opts_.blocks > 0 ? opts_.blocks : sms * std::max(1, std::min(per_sm, pl.blocks_per_sm));
    st.blocks = blocks;
    if (Ms < M) {
      PassArgs<K, V> a{keys, values, Ms, M, t, limit, sink, ctr_, hot, H, top, top_n, 0, S, C, tc, tc_seed, part};
      launch_pass(mode, a, blocks, pl.threads, smem, stream, pp.use);
    }
    t3.record(stream);
    if constexpr (T::kCount) {
      if (pp.use) {
        const std::size_t rsm = shared_acc_offset<K, V>(pp.slots) + std::size_t(pp.slots) * sizeof(std::uint32_t);
        auto rk = partition_reduce_kernel<K, V>;
        TANDEM_CUDA(cudaFuncSetAttribute(rk, cudaFuncAttributeMaxDynamicSharedMemorySize, int(rsm)));
        rk<<<pp.partitions, 512, rsm, stream>>>(part, pp.slots, t, limit, sink, ctr_);
        TANDEM_CUDA_LAUNCH("hash group-by: reduce partitions");
      }
    }
    t3b.record(stream);

    // 5. compact (speculatively: an overflow below compacts again)
    int o = cur_;
    out_keys_ = out_k_[o].get<K>(std::size_t(cap) + 1);
    out_accs_ = out_a_[o].get<Acc>(std::size_t(cap) + 1);
    compact(t, out_keys_, out_accs_, cap + 1, stream);
    Ctr c = read_ctr(stream);
    st.partitioned = c.part_pairs;
    st.partition_direct = c.part_direct + c.part_missed;
    st.shared_hits = c.shared_hits;
    st.global_hits = c.global_hits + Ms;  // the sample went to the sample table in global memory
    if (c.lost) return false;
    std::uint32_t n = c.out_n;
    if (c.overflow_n) {
      // grow: everything (the compacted table + the overflow list) into a table 2x what it holds
      const std::uint32_t ovf = c.overflow_n;
      st.spilled = ovf;
      const std::uint64_t need = 2 * (std::uint64_t(n) + ovf) + 1024;
      const std::uint32_t cap2 = static_cast<std::uint32_t>(
          std::min<std::uint64_t>(std::max<std::uint64_t>(need, std::uint64_t(cap) * 2), 0x7fffffffull));
      const int nx = 1 - cur_;
      TableRef<K, V> t2{table_[nx].get<Slot>(cap2), cap2, sent + 1};
      init_table(t2, stream);
      const Sink<K, V> none{nullptr, nullptr, 0, ctr_};
      merge_kernel<K, V><<<gpu::grid_for(n, 256, kGridCap), 256, 0, stream>>>(t2, out_keys_, out_accs_, n, cap2, none);
      TANDEM_CUDA_LAUNCH("hash group-by: grow (table)");
      merge_kernel<K, V>
          <<<gpu::grid_for(ovf, 256, kGridCap), 256, 0, stream>>>(t2, sink.keys, sink.accs, ovf, cap2, none);
      TANDEM_CUDA_LAUNCH("hash group-by: grow (overflow list)");
      TANDEM_CUDA(cudaMemsetAsync(&ctr_->out_n, 0, sizeof(unsigned), stream));
      out_keys_ = out_k_[nx].get<K>(std::size_t(cap2) + 1);
      out_accs_ = out_a_[nx].get<Acc>(std::size_t(cap2) + 1);
      compact(t2, out_keys_, out_accs_, cap2 + 1, stream);
      c = read_ctr(stream);
      if (c.lost) return false;
      n = c.out_n;
      cur_ = nx;
      st.table_slots = cap2;
      st.result_grows = 1;
      rep.note(gpu::format("table grown from {} to {} slots: {} pairs overflowed the probe limit", cap, cap2, ovf));
    }
    t4.record(stream);
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    n_out_ = n;
    st.distinct = n;
    rep.add("GPU sampling pass", "gpu0", t1.seconds_since(t0), gpu::format("{} records, {} distinct", Ms, Ds));
    rep.add("GPU table init + sample merge + hot keys", "gpu0", t2.seconds_since(t1),
            gpu::format("{} slots, H={}", cap, st.hot_keys));
    rep.add("GPU main pass", "gpu0", t3.seconds_since(t2),
            gpu::format("{} records, {} blocks x {}", M - Ms, blocks, pl.threads));
    if (pp.use)
      rep.add("GPU partition reduce", "gpu0", t3b.seconds_since(t3),
              gpu::format("{} partitions, {} keys", pp.partitions, st.partitioned));
    rep.add("GPU compact", "gpu0", t4.seconds_since(t3b), gpu::format("{} groups", n));
    return true;
  }

  Options opts_{};
  Dev dev_{};
  gpu::PinnedBuffer<Ctr> pinned_;
  gpu::PinnedBuffer<std::uint32_t> hist_host_;
  static constexpr std::uint32_t kTwoChoiceMax = 1024;  // most hot keys placed by two-choice hashing
  gpu::PinnedBuffer<K> keys_host_, two_choice_host_;
  std::vector<K> two_choice_table_;
  Ctr* ctr_{nullptr};
  Scratch two_choice_keys_, part_keys_, part_cursor_;
  Scratch ctr_buf_, hist_, top_keys_, top_n_, sentinel_, sample_slots_, sample_keys_, sample_accs_, sample_counts_,
      hot_keys_, temp_, ovf_keys_, ovf_accs_;
  Scratch table_[2], out_k_[2], out_a_[2];
  int cur_{0};
  K* out_keys_{nullptr};
  Acc* out_accs_{nullptr};
  std::size_t n_out_{0};
};

}  // namespace tandem::mr::hash_groupby
