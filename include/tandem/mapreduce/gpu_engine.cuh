// The chained GPU MapReduce engine: unified shared/global memory management. Include from .cu
// files only.
//
//   Bs blocks x N threads. Every block owns an intermediate table in global memory: buckets[] (chain
//   heads) and gm_pool[] (entries), the pool split into one allocation range per 32-thread group
//   (gm_offset[gid] = gm_size*gid/num_groups), plus a block-wide tail range when a group's range is
//   full, plus a global spill list when the block is full. Pairs are never dropped: a full spill
//   list is counted, and the whole job is run again with larger buffers.
//   1. Sampling pass over records [0, M*p): reduce into the block tables with a reduction count.
//      Merge every block table into the global result table (buckets + pool, entry counts kept).
//   2. Hot keys: the H most frequent keys of the result (H = hot fraction of its distinct keys).
//   3. Main pass over [M*p, M): each block preloads the H hot keys into sm_pool (shared memory; an
//      entry reference with the mem_flag bit set), finds keys in shared memory first, then in its
//      global table; new keys take sm_pool space until it is full (sm_flag), global space after.
//      At the end each block flushes sm_pool into the result; the block tables are merged.
//   The sampled records' partial results stay in the result table: every record is reduced once.
//
// With block_tables = false the global tier is the result table itself (cold keys are reduced
// straight into it; on GPUs with a large L2 this is faster than per-block tables).
//
// A GPU job: key_type (trivially copyable), value_type, map(i, emit) and reduce(a, b) as for the CPU
// engine, callable on the device, plus identity() -> value_type. Optional: hash(k), equal(a, b),
// atomic_reduce(value_type* dst, const value_type& v) (else: atomicAdd for u64 values, field-wise
// atomics for Agg<A>, and a 64-bit CAS loop around reduce for other 8-byte values).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include <cub/device/device_radix_sort.cuh>
#include <string>
#include <string_view>

#include "tandem/core/device.hpp"
#include "tandem/core/timing.hpp"
#include "tandem/core/tune.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/format.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"
#include "tandem/cuda/stream.hpp"
#include "tandem/mapreduce.hpp"

namespace tandem::mapreduce::gpu_engine {

constexpr std::uint32_t kNil = 0xffffffffu;
constexpr std::uint32_t kSharedFlag = 0x80000000u;  // mem_flag bit of an entry reference

template <class K, class V>
struct Entry {
  K key;
  std::uint32_t next;
  std::uint32_t count;  // reduction count (sampling pass)
  V value;
};

// ---- job hooks ---------------------------------------------------------------------------------
template <class Job, class K>
__device__ __forceinline__ std::uint64_t job_hash(const Job& job, const K& k) {
  if constexpr (requires { job.hash(k); }) return job.hash(k);
  else return mix64(static_cast<std::uint64_t>(k));
}
template <class Job, class K>
__device__ __forceinline__ bool job_equal(const Job& job, const K& a, const K& b) {
  if constexpr (requires { job.equal(a, b); }) return job.equal(a, b);
  else return a == b;
}

__device__ __forceinline__ void atomic_min_f64(double* p, double v) {
  if (v != v) return;
  auto* a = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(a);
  while (true) {
    const double cur = __longlong_as_double(static_cast<long long>(old));
    if (!agg_less(v, cur)) return;
    const auto prev = atomicCAS(a, old, static_cast<unsigned long long>(__double_as_longlong(v)));
    if (prev == old) return;
    old = prev;
  }
}
__device__ __forceinline__ void atomic_max_f64(double* p, double v) {
  if (v != v) return;
  auto* a = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(a);
  while (true) {
    const double cur = __longlong_as_double(static_cast<long long>(old));
    if (!agg_greater(v, cur)) return;
    const auto prev = atomicCAS(a, old, static_cast<unsigned long long>(__double_as_longlong(v)));
    if (prev == old) return;
    old = prev;
  }
}

template <class Job, class V>
__device__ __forceinline__ void job_atomic_reduce(const Job& job, V* dst, const V& v) {
  if constexpr (requires { job.atomic_reduce(dst, v); }) {
    job.atomic_reduce(dst, v);
  } else if constexpr (std::is_same_v<V, std::uint64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(dst), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<V, Agg<double>>) {
    atomicAdd(&dst->sum, v.sum);
    atomic_min_f64(&dst->min, v.min);
    atomic_max_f64(&dst->max, v.max);
    atomicAdd(reinterpret_cast<unsigned long long*>(&dst->count), static_cast<unsigned long long>(v.count));
  } else if constexpr (std::is_same_v<V, Agg<std::int64_t>>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&dst->sum), static_cast<unsigned long long>(v.sum));
    atomicMin(reinterpret_cast<long long*>(&dst->min), static_cast<long long>(v.min));
    atomicMax(reinterpret_cast<long long*>(&dst->max), static_cast<long long>(v.max));
    atomicAdd(reinterpret_cast<unsigned long long*>(&dst->count), static_cast<unsigned long long>(v.count));
  } else {
    static_assert(sizeof(V) == 8 && std::is_trivially_copyable_v<V>,
                  "a GPU job with a value other than u64/Agg needs atomic_reduce(V*, const V&) or an 8-byte value");
    auto* a = reinterpret_cast<unsigned long long*>(dst);
    unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(a);
    while (true) {
      V cur, next;
      memcpy(&cur, &old, 8);
      next = cur;
      job.reduce(next, v);
      unsigned long long nv;
      memcpy(&nv, &next, 8);
      const auto prev = atomicCAS(a, old, nv);
      if (prev == old) return;
      old = prev;
    }
  }
}

// ---- device state --------------------------------------------------------------------------------
// A chained table: heads + pool. `Shared` selects the load flavour (volatile shared vs L2-only).
template <class K, class V>
struct Chain {
  std::uint32_t* buckets;
  Entry<K, V>* pool;
  std::uint32_t mask;
};

struct Counters {
  unsigned long long lost;  // pairs that found no space at all (=> retry)
  unsigned long long shared_hits;
  unsigned long long global_hits;
  unsigned long long spilled;
  unsigned int spill_n;      // entries used in the spill list
  unsigned int result_tail;  // entries used in the result pool
  unsigned int out_n;        // extraction cursor
};

template <class K, class V>
struct State {
  // per-block tables (Bs of them, laid out one after the other)
  std::uint32_t* block_buckets;  // Bs * block_nb
  Entry<K, V>* block_pool;       // Bs * block_pool_n
  std::uint32_t block_nb;
  std::uint32_t block_pool_n;
  std::uint32_t* block_used;  // Bs: entries allocated (upper bound, for sizing the merge)
  // result
  Chain<K, V> result;
  std::uint32_t result_cap;
  // spill list
  Entry<K, V>* spill;
  std::uint32_t spill_cap;
  Counters* ctr;
  // hot keys
  const K* hot;
  std::uint32_t hot_n;
  // shared pool geometry
  std::uint32_t sm_n;   // sm_pool entries
  std::uint32_t sm_nb;  // shared buckets (power of two)
  bool direct;          // cold keys straight into the result table
};

template <bool SharedMem>
__device__ __forceinline__ std::uint32_t load_ref(const std::uint32_t* p) {
  if constexpr (SharedMem) return *reinterpret_cast<const volatile std::uint32_t*>(p);
  else return __ldcg(p);
}
template <bool SharedMem, class K>
__device__ __forceinline__ K load_key(const K* p) {
  if constexpr (SharedMem) {
    return *const_cast<const K*>(p);  // written before the entry was published (block fence)
  } else if constexpr (sizeof(K) == 4 || sizeof(K) == 8) {
    using W = std::conditional_t<sizeof(K) == 4, unsigned int, unsigned long long>;
    W w = __ldcg(reinterpret_cast<const W*>(p));
    K k;
    memcpy(&k, &w, sizeof(K));
    return k;
  } else {
    K k;
    static_assert(sizeof(K) % 4 == 0, "GPU keys must be a multiple of 4 bytes");
    const unsigned int* s = reinterpret_cast<const unsigned int*>(p);
    unsigned int* d = reinterpret_cast<unsigned int*>(&k);
#pragma unroll
    for (int i = 0; i < int(sizeof(K) / 4); ++i) d[i] = __ldcg(s + i);
    return k;
  }
}

// Finds k in the chain at `head`, reducing v into it. Returns true if found.
template <bool SharedMem, bool Count, class Job, class K, class V>
__device__ __forceinline__ bool chain_find(const Job& job, Entry<K, V>* pool, std::uint32_t r, std::uint32_t stop,
                                           const K& k, const V& v, std::uint32_t w = 1) {
  while (r != stop && r != kNil) {
    Entry<K, V>& e = pool[r & ~kSharedFlag];
    if (job_equal(job, load_key<SharedMem>(&e.key), k)) {
      job_atomic_reduce(job, &e.value, v);
      if constexpr (Count) atomicAdd(&e.count, w);
      return true;
    }
    r = load_ref<SharedMem>(&e.next);
  }
  return false;
}

// Publishes entry `idx` (already allocated) holding (k, v) at the head of `head`, unless k
// appears meanwhile (then reduces into it and returns false: idx stays free for reuse).
template <bool SharedMem, bool Count, class Job, class K, class V>
__device__ __forceinline__ bool chain_publish(const Job& job, std::uint32_t* head, Entry<K, V>* pool, std::uint32_t idx,
                                              std::uint32_t ref, std::uint32_t seen, const K& k, const V& v,
                                              std::uint32_t count) {
  Entry<K, V>& e = pool[idx];
  e.key = k;
  e.value = v;
  e.count = count;
  while (true) {
    e.next = seen;
    if constexpr (SharedMem) __threadfence_block();
    else __threadfence();
    const std::uint32_t old = atomicCAS(head, seen, ref);
    if (old == seen) return true;
    if (chain_find<SharedMem, Count>(job, pool, old, seen, k, v, count)) return false;
    seen = old;
  }
}

// Appends (k, v, count) to the spill list; counts it lost when the list is full.
template <class K, class V>
__device__ __forceinline__ void spill_pair(const State<K, V>& s, const K& k, const V& v, std::uint32_t count) {
  const std::uint32_t i = atomicAdd(&s.ctr->spill_n, 1u);
  if (i < s.spill_cap) {
    s.spill[i].key = k;
    s.spill[i].value = v;
    s.spill[i].count = count;
    s.spill[i].next = kNil;
    atomicAdd(&s.ctr->spilled, 1ull);
  } else {
    atomicAdd(&s.ctr->lost, 1ull);
  }
}

// Same, but also adds `count` to the reduction count of an existing entry (merges of counted tables).
template <bool Count = true, class Job, class K, class V>
__device__ bool result_upsert_counted(const Job& job, const State<K, V>& s, const K& k, const V& v, std::uint32_t count,
                                      std::uint64_t h) {
  std::uint32_t* head = &s.result.buckets[h & s.result.mask];
  std::uint32_t seen = load_ref<false>(head);
  for (std::uint32_t r = seen; r != kNil;) {
    Entry<K, V>& e = s.result.pool[r];
    if (job_equal(job, load_key<false>(&e.key), k)) {
      job_atomic_reduce(job, &e.value, v);
      if (Count && count) atomicAdd(&e.count, count);
      return true;
    }
    r = load_ref<false>(&e.next);
  }
  const std::uint32_t idx = atomicAdd(&s.ctr->result_tail, 1u);
  if (idx >= s.result_cap) return false;
  Entry<K, V>& e = s.result.pool[idx];
  e.key = k;
  e.value = v;
  e.count = count;
  while (true) {
    e.next = seen;
    __threadfence();
    const std::uint32_t old = atomicCAS(head, seen, idx);
    if (old == seen) return true;
    for (std::uint32_t r = old; r != seen;) {
      Entry<K, V>& f = s.result.pool[r];
      if (job_equal(job, load_key<false>(&f.key), k)) {
        job_atomic_reduce(job, &f.value, v);
        if (Count && count) atomicAdd(&f.count, count);
        return true;  // idx stays unpublished
      }
      r = load_ref<false>(&f.next);
    }
    seen = old;
  }
}

// ---- the pass kernel (sampling: Sampling = true, no shared pool; main: hot keys in shared) ------
// One block of the pass: its shared-memory layout (the groups' allocation ranges, counters, the
// shared table), its global table, and each thread's spare entries and hit counts. The kernel runs
// its stages: set_up (ranges, counters, hot keys preloaded), emit for every pair its records map
// to, finish (counters, entries used, the shared table flushed into the result).
template <class Job, bool Sampling, bool UseShared>
struct PassBlock {
  using K = typename Job::key_type;
  using V = typename Job::value_type;
  Job& job;
  State<K, V>& s;
  const std::uint32_t tid, N, bid;
  const std::uint32_t num_groups, gid;
  // shared layout: gm_offset[num_groups], gm_end[num_groups], misc[4], sbuckets[sm_nb], sm_pool[sm_n]
  std::uint32_t* gm_offset;
  std::uint32_t* gm_end;
  std::uint32_t* misc;       // 0: sm_offset, 1: sm_flag, 2: block tail
  unsigned long long* hits;  // 0 shared, 1 global
  std::uint32_t* sbuckets;
  Entry<K, V>* sm_pool{nullptr};
  std::uint32_t ranged{0};
  Entry<K, V>* gpool{nullptr};
  std::uint32_t* gbuckets{nullptr};
  std::uint32_t spare_g{kNil}, spare_s{kNil};
  unsigned long long my_shared{0}, my_global{0};

  __device__ __forceinline__ PassBlock(Job& j, State<K, V>& st, unsigned char* smem)
      : job(j),
        s(st),
        tid(threadIdx.x),
        N(blockDim.x),
        bid(blockIdx.x),
        num_groups((N + 31) / 32),
        gid(tid / 32),
        gm_offset(reinterpret_cast<std::uint32_t*>(smem)),
        gm_end(gm_offset + num_groups),
        misc(gm_end + num_groups),
        hits(reinterpret_cast<unsigned long long*>(misc + 4)),
        sbuckets(reinterpret_cast<std::uint32_t*>(hits + 2)) {
    if constexpr (UseShared) {
      std::size_t off =
          (reinterpret_cast<std::uintptr_t>(sbuckets + s.sm_nb) - reinterpret_cast<std::uintptr_t>(smem) + 15) &
          ~std::size_t(15);
      sm_pool = reinterpret_cast<Entry<K, V>*>(smem + off);
    }
  }

  // Allocation ranges: 3/4 of the pool split among the groups, the last quarter a block tail; the
  // counters at zero, the shared buckets empty and (main pass) the hot keys preloaded.
  __device__ __forceinline__ void set_up() {
    ranged = s.direct ? 0 : (s.block_pool_n - s.block_pool_n / 4);
    for (std::uint32_t g = tid; g < num_groups; g += N) {
      gm_offset[g] = std::uint32_t(std::uint64_t(ranged) * g / num_groups);
      gm_end[g] = std::uint32_t(std::uint64_t(ranged) * (g + 1) / num_groups);
    }
    if (tid == 0) {
      misc[0] = 0;
      misc[1] = 0;
      misc[2] = ranged;
      hits[0] = hits[1] = 0;
    }
    if constexpr (UseShared) {
      for (std::uint32_t b = tid; b < s.sm_nb; b += N) sbuckets[b] = kNil;
    }
    __syncthreads();
    if constexpr (UseShared) preload_hot();
    gpool = s.block_pool + std::size_t(bid) * s.block_pool_n;
    gbuckets = s.block_buckets + std::size_t(bid) * s.block_nb;
  }

  // Preload the hot keys with the identity value.
  __device__ __forceinline__ void preload_hot() {
    const std::uint32_t h_n = s.hot_n < s.sm_n ? s.hot_n : s.sm_n;
    for (std::uint32_t i = tid; i < h_n; i += N) {
      const K k = s.hot[i];
      sm_pool[i].key = k;
      sm_pool[i].value = job.identity();
      sm_pool[i].count = 0;
      const std::uint32_t b = std::uint32_t(job_hash(job, k)) & (s.sm_nb - 1);
      std::uint32_t seen = sbuckets[b];
      while (true) {
        sm_pool[i].next = seen;
        __threadfence_block();
        const std::uint32_t old = atomicCAS(&sbuckets[b], seen, i | kSharedFlag);
        if (old == seen) break;
        seen = old;
      }
    }
    if (tid == 0) {
      misc[0] = h_n;
      misc[1] = h_n >= s.sm_n ? 1u : 0u;
    }
    __syncthreads();
  }

  __device__ __forceinline__ std::uint32_t alloc_global() {
    if (spare_g != kNil) {
      const std::uint32_t r = spare_g;
      spare_g = kNil;
      return r;
    }
    std::uint32_t i = atomicAdd(&gm_offset[gid], 1u);
    if (i < gm_end[gid]) return i;
    i = atomicAdd(&misc[2], 1u);
    if (i < s.block_pool_n) return i;
    return kNil;
  }

  // The main pass's shared tier: true when (k, v) went into the shared table or an existing entry
  // of the block table; false when it goes on to global memory.
  __device__ __forceinline__ bool emit_shared(const K& k, const V& v, std::uint64_t h, std::uint32_t w) {
    std::uint32_t* shead = &sbuckets[std::uint32_t(h) & (s.sm_nb - 1)];
    const std::uint32_t sseen = load_ref<true>(shead);
    if (sseen != kNil && chain_find<true, false>(job, sm_pool, sseen, kNil, k, v)) {
      my_shared += w;
      return true;
    }
    if (!s.direct) {
      std::uint32_t* head = &gbuckets[std::uint32_t(h >> 32) & (s.block_nb - 1)];
      if (chain_find<false, false>(job, gpool, load_ref<false>(head), kNil, k, v)) {
        my_global += w;
        return true;
      }
    }
    // new key: shared memory until it is full
    if (*reinterpret_cast<volatile std::uint32_t*>(&misc[1]) == 0) {
      std::uint32_t i = spare_s;
      if (i == kNil) {
        i = atomicAdd(&misc[0], 1u);
        if (i >= s.sm_n) {
          misc[1] = 1;
          i = kNil;
        }
      }
      spare_s = kNil;
      if (i != kNil) {
        if (!chain_publish<true, false>(job, shead, sm_pool, i, i | kSharedFlag, sseen, k, v, 0u)) spare_s = i;
        my_shared += w;
        return true;
      }
    }
    return false;
  }

  __device__ __forceinline__ void emit(const K& k0, const V& v0) {
    const K& k = k0;
    const V& v = v0;
    constexpr std::uint32_t w = 1;  // pairs this call stands for
    const std::uint64_t h = job_hash(job, k);
    if constexpr (UseShared) {
      if (emit_shared(k, v, h, w)) return;
    }
    // global memory: the block table, or the result table in direct mode
    if (s.direct) {
      if (!result_upsert_counted<Sampling>(job, s, k, v, w, h)) {
        spill_pair(s, k, v, w);
        return;
      }
      my_global += w;
      return;
    }
    std::uint32_t* head = &gbuckets[std::uint32_t(h >> 32) & (s.block_nb - 1)];
    const std::uint32_t seen = load_ref<false>(head);
    if (!UseShared && chain_find<false, Sampling>(job, gpool, seen, kNil, k, v, w)) {
      my_global += w;
      return;
    }
    const std::uint32_t i = alloc_global();
    if (i == kNil) {
      spill_pair(s, k, v, w);
      return;
    }
    if (!chain_publish<false, Sampling>(job, head, gpool, i, i, seen, k, v, w)) spare_g = i;
    my_global += w;
  }

  // The hit counters and the entries this block allocated; then (main pass) the shared table
  // flushed into the result table (walking the chains: only published entries).
  __device__ __forceinline__ void finish() {
    atomicAdd(&hits[0], my_shared);
    atomicAdd(&hits[1], my_global);
    __syncthreads();
    if (tid == 0) {
      atomicAdd(&s.ctr->shared_hits, hits[0]);
      atomicAdd(&s.ctr->global_hits, hits[1]);
      std::uint32_t used = misc[2] > s.block_pool_n ? s.block_pool_n : misc[2];
      used -= ranged;
      for (std::uint32_t g = 0; g < num_groups; ++g) {
        const std::uint32_t start = std::uint32_t(std::uint64_t(ranged) * g / num_groups);
        used += (gm_offset[g] < gm_end[g] ? gm_offset[g] : gm_end[g]) - start;
      }
      s.block_used[bid] = used;
    }
    if constexpr (UseShared) {
      for (std::uint32_t b = tid; b < s.sm_nb; b += N) {
        for (std::uint32_t r = sbuckets[b]; r != kNil;) {
          // Preloaded hot keys that were never hit still hold the identity: reducing it is harmless
          // (every hot key already has an entry in the result from the sampling pass).
          const Entry<K, V>& e = sm_pool[r & ~kSharedFlag];
          if (!result_upsert_counted<false>(job, s, e.key, e.value, 0u, job_hash(job, e.key)))
            spill_pair(s, e.key, e.value, 0u);
          r = e.next;
        }
      }
    }
  }
};

template <class Job, bool Sampling, bool UseShared>
__global__ void pass_kernel(Job job, State<typename Job::key_type, typename Job::value_type> s, std::uint64_t begin,
                            std::uint64_t end) {
  using K = typename Job::key_type;
  using V = typename Job::value_type;
  extern __shared__ __align__(16) unsigned char smem[];
  PassBlock<Job, Sampling, UseShared> block(job, s, smem);
  block.set_up();
  auto emit = [&](const K& k0, const V& v0) { block.emit(k0, v0); };
  const std::uint64_t stride = std::uint64_t(block.N) * gridDim.x;
  for (std::uint64_t i = begin + std::uint64_t(block.bid) * block.N + block.tid; i < end; i += stride) job.map(i, emit);
  block.finish();
}

// ---- merge: block tables / spill list / an old result table -> result ----------------------------
template <class Job>
__global__ void merge_chains_kernel(Job job, State<typename Job::key_type, typename Job::value_type> s,
                                    const std::uint32_t* buckets,
                                    const Entry<typename Job::key_type, typename Job::value_type>* pool,
                                    std::uint64_t n_buckets, std::uint32_t nb_per_table, std::uint32_t pool_per_table) {
  for (std::uint64_t b = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; b < n_buckets;
       b += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t table = b / nb_per_table;
    const auto* tp = pool + table * pool_per_table;
    for (std::uint32_t r = buckets[b]; r != kNil;) {
      const auto& e = tp[r];
      if (!result_upsert_counted(job, s, e.key, e.value, e.count, job_hash(job, e.key))) atomicAdd(&s.ctr->lost, 1ull);
      r = e.next;
    }
  }
}

template <class Job>
__global__ void merge_list_kernel(Job job, State<typename Job::key_type, typename Job::value_type> s,
                                  const Entry<typename Job::key_type, typename Job::value_type>* list,
                                  std::uint32_t n) {
  for (std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const auto& e = list[i];
    if (!result_upsert_counted(job, s, e.key, e.value, e.count, job_hash(job, e.key))) atomicAdd(&s.ctr->lost, 1ull);
  }
}

// Published result entries -> (key, value, count) arrays.
template <class K, class V>
__global__ void extract_kernel(Chain<K, V> t, std::uint32_t nb, Counters* ctr, K* keys, V* values,
                               std::uint32_t* counts, std::uint32_t cap) {
  for (std::uint32_t b = blockIdx.x * blockDim.x + threadIdx.x; b < nb; b += gridDim.x * blockDim.x) {
    for (std::uint32_t r = t.buckets[b]; r != kNil;) {
      const auto& e = t.pool[r];
      const std::uint32_t o = atomicAdd(&ctr->out_n, 1u);
      if (o < cap) {
        keys[o] = e.key;
        values[o] = e.value;
        counts[o] = e.count;
      }
      r = e.next;
    }
  }
}

// ---- host side ------------------------------------------------------------------------------------

// Grow-only device scratch, reused across calls of one engine instantiation (cudaMalloc of large
// buffers costs more than a whole small job).
struct Scratch {
  gpu::DeviceBuffer<unsigned char> buf;
  template <class T>
  T* get(std::size_t n) {
    const std::size_t bytes = std::max<std::size_t>(n, 1) * sizeof(T);
    if (buf.size() < bytes) buf = gpu::DeviceBuffer<unsigned char>(bytes + bytes / 4);
    return reinterpret_cast<T*>(buf.data());
  }
};

// The result of a run, left in device memory (valid until the next run of the same instantiation).
template <class K, class V>
struct DeviceResult {
  const K* keys{nullptr};
  const V* values{nullptr};
  std::size_t n{0};
};

// Copies a device result to (key, value) pairs on the host.
template <class K, class V>
std::vector<std::pair<K, V>> to_host(const DeviceResult<K, V>& d, Report& rep, cudaStream_t stream) {
  Stopwatch w;
  std::vector<K> k(d.n);
  std::vector<V> v(d.n);
  if (d.n) {
    TANDEM_CUDA(cudaMemcpyAsync(k.data(), d.keys, d.n * sizeof(K), cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaMemcpyAsync(v.data(), d.values, d.n * sizeof(V), cudaMemcpyDeviceToHost, stream));
  }
  TANDEM_CUDA(cudaStreamSynchronize(stream));
  std::vector<std::pair<K, V>> out(d.n);
  for (std::size_t i = 0; i < d.n; ++i) out[i] = {k[i], v[i]};
  rep.add("D2H result", "gpu0", w.seconds(), gpu::format("{} groups", d.n));
  return out;
}

struct Plan {
  int blocks, threads;
  double p, hot_fraction;
  std::uint32_t sm_n, sm_nb;
  std::size_t smem_bytes;
  std::uint32_t block_pool_n, block_nb;
  std::uint32_t spill_cap;
  std::uint32_t result_cap, result_nb;
  bool hot, direct;
};

template <class K, class V>
std::size_t shared_bytes(int threads, std::uint32_t sm_nb, std::uint32_t sm_n) {
  const std::size_t groups = (threads + 31) / 32;
  std::size_t b = groups * 8 + 16 + 16 + std::size_t(sm_nb) * 4;
  b = (b + 15) & ~std::size_t(15);
  return b + std::size_t(sm_n) * sizeof(Entry<K, V>);
}

template <class Job>
class Engine {
 public:
  using K = typename Job::key_type;
  using V = typename Job::value_type;
  using E = Entry<K, V>;

  // Runs the job over records [0, M). The compact result stays on the device.
  DeviceResult<K, V> run_device(const Job& job, std::uint64_t M, const Options& o, EngineStats& st, Report& rep,
                                cudaStream_t stream = nullptr) {
    Plan pl = plan(M, o);
    for (int attempt = 0;; ++attempt) {
      if (attempt > 12) throw Error("mapreduce GPU engine: buffers kept overflowing after 12 retries");
      if (attempt_once(job, M, pl, st, rep, stream)) {
        st.retries = attempt;
        break;
      }
      // Something found no space: run again from scratch with larger buffers.
      rep.note(
          gpu::format("retry {}: a buffer overflowed (spill list {} entries, block pool {}, result {}); doubling them",
                      attempt + 1, pl.spill_cap, pl.block_pool_n, pl.result_cap));
      pl.spill_cap = grow32(pl.spill_cap, 4);
      pl.block_pool_n = grow32(pl.block_pool_n, 2);
      pl.result_cap = grow32(pl.result_cap, 2);
    }
    return {keys_out_, values_out_, n_out_};
  }

  // Picks the table mode for Tables::auto_: cached, else measured (both modes once, the job run
  // twice more) when the job is large enough, else direct.
  Options resolve(const Job& job, std::uint64_t M, const Options& o, Report& rep, cudaStream_t stream) {
    Options r = o;
    if (o.tables != Options::Tables::auto_) return r;
    r.tables = Options::Tables::direct;
    if (!o.tune || M < o.tune_min_records) return r;
    int dev = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    const auto gpus = gpu_info();
    const std::string gkey = dev < int(gpus.size()) ? gpus[dev].key() : std::string("gpu");
    const std::string cls = gpu::format("k{}v{}/{}/hot{}", sizeof(K), sizeof(V), size_class(M), o.hot_keys ? 1 : 0);
    auto& cache = TuningCache::global();
    auto parse = [](const nlohmann::json& j) {
      const std::string t = j.at("tables").get<std::string>();
      if (t != "block" && t != "direct") throw std::out_of_range("tables = " + t + " (expected block or direct)");
      return t;
    };
    if (auto t = cache.lookup("mapreduce.tables", gkey, cls, parse, &rep)) {
      r.tables = *t == "block" ? Options::Tables::block : Options::Tables::direct;
      rep.note(gpu::format("table mode {} from the tuning cache ({})", *t, cls));
      return r;
    }
    std::vector<Candidate> cands{{"tables=direct", {{"tables", "direct"}}}, {"tables=block", {{"tables", "block"}}}};
    auto res = Tuner().repetitions(1).warmup(0).run(cands, [&](const Candidate& c) {
      Options t = o;
      t.tables = c.params["tables"].get<std::string>() == "block" ? Options::Tables::block : Options::Tables::direct;
      EngineStats st;
      Report scratch;
      TANDEM_CUDA(cudaStreamSynchronize(stream));
      Stopwatch w;
      run_device(job, M, t, st, scratch, stream);
      TANDEM_CUDA(cudaStreamSynchronize(stream));
      return w.seconds();
    });
    const auto& win = res.winner();
    r.tables =
        win.candidate.params["tables"].get<std::string>() == "block" ? Options::Tables::block : Options::Tables::direct;
    cache.put("mapreduce.tables", gkey, cls, win.candidate.params);
    rep.note(gpu::format("tuned table mode ({}): {}", cls, res.report()));
    return r;
  }

  std::vector<std::pair<K, V>> run(const Job& job, std::uint64_t M, const Options& o_in, EngineStats& st, Report& rep) {
    gpu::Stream stream;
    const Options o = resolve(job, M, o_in, rep, stream);
    return to_host(run_device(job, M, o, st, rep, stream), rep, stream);
  }

 private:
  static std::uint32_t grow32(std::uint64_t x, int f) {
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(x, 16) * f, 0x7fff0000ull));
  }

  Plan plan(std::uint64_t M, const Options& o) {
    int dev = 0;
    TANDEM_CUDA(cudaGetDevice(&dev));
    cudaDeviceProp prop{};
    TANDEM_CUDA(cudaGetDeviceProperties(&prop, dev));
    Plan pl{};
    pl.threads = o.block_threads > 0 ? (o.block_threads + 31) / 32 * 32 : 512;
    pl.threads = std::min(pl.threads, prop.maxThreadsPerBlock);
    pl.hot = o.hot_keys;
    pl.direct = o.tables != Options::Tables::block;
    pl.p = o.sample_fraction >= 0 ? std::min(o.sample_fraction, 0.5) : 0.01;
    pl.hot_fraction = o.hot_fraction >= 0 ? std::min(o.hot_fraction, 1.0) : 0.10;
    // Shared pool: what fits in ~96 KiB (two blocks of 512 threads per SM), or as asked.
    const std::size_t optin = prop.sharedMemPerBlockOptin;
    if (o.shared_entries) {
      pl.sm_n = static_cast<std::uint32_t>(o.shared_entries);
      pl.sm_nb = std::bit_ceil(std::max<std::uint32_t>(pl.sm_n, 2));
    } else {
      const std::size_t budget = std::min<std::size_t>(optin, 96 * 1024) - 1024;
      pl.sm_nb = std::bit_floor(static_cast<std::uint32_t>(budget / (sizeof(E) + 4)));
      pl.sm_n = static_cast<std::uint32_t>((budget - pl.sm_nb * 4) / sizeof(E));
    }
    if (!pl.hot) pl.sm_n = 0, pl.sm_nb = 1;
    pl.smem_bytes = shared_bytes<K, V>(pl.threads, pl.sm_nb, pl.sm_n);
    if (pl.smem_bytes > optin)
      throw UsageError(gpu::format("shared pool of {} entries needs {} bytes of shared memory; the GPU has {}", pl.sm_n,
                                   pl.smem_bytes, optin));
    if (o.blocks > 0) {
      pl.blocks = o.blocks;
    } else {
      int per_sm = 1;
      auto k = pl.hot ? reinterpret_cast<const void*>(pass_kernel<Job, false, true>)
                      : reinterpret_cast<const void*>(pass_kernel<Job, false, false>);
      gpu::allow_dynamic_shared(k, pl.smem_bytes);
      TANDEM_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, pl.threads, pl.smem_bytes));
      pl.blocks = std::max(1, per_sm) * prop.multiProcessorCount;
    }
    // Block pools: the records a block sees in the main pass bound its distinct keys; cap memory.
    const std::uint64_t per_block = M / std::max(1, pl.blocks) + 64;
    pl.block_pool_n = o.block_pool_entries ? static_cast<std::uint32_t>(o.block_pool_entries)
                                           : static_cast<std::uint32_t>(std::min<std::uint64_t>(per_block, 1u << 16));
    if (pl.direct) pl.block_pool_n = 0;
    pl.spill_cap = o.spill_entries ? static_cast<std::uint32_t>(o.spill_entries)
                                   : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(M / 16, 1 << 16, 1u << 26));
    pl.result_cap = o.result_entries ? static_cast<std::uint32_t>(o.result_entries)
                                     : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(M / 4, 1 << 16, 1u << 28));
    return pl;
  }

  void set_state(const Plan& pl) {
    s_.block_nb = std::bit_ceil(std::max<std::uint32_t>(pl.block_pool_n / 2, 1));
    s_.block_pool_n = pl.block_pool_n;
    s_.block_buckets = block_buckets_.get<std::uint32_t>(std::size_t(pl.blocks) * s_.block_nb);
    s_.block_pool = block_pool_.get<E>(std::size_t(pl.blocks) * std::max<std::uint32_t>(pl.block_pool_n, 1));
    s_.block_used = block_used_.get<std::uint32_t>(pl.blocks);
    s_.spill = spill_.get<E>(pl.spill_cap);
    s_.spill_cap = pl.spill_cap;
    s_.ctr = ctr_.get<Counters>(1);
    s_.sm_n = pl.sm_n;
    s_.sm_nb = pl.sm_nb;
    s_.direct = pl.direct;
  }

  void alloc_result(std::uint32_t cap, std::uint32_t nb, bool second) {
    auto& b = second ? result_buckets2_ : result_buckets_;
    auto& p = second ? result_pool2_ : result_pool_;
    s_.result.buckets = b.template get<std::uint32_t>(nb);
    s_.result.pool = p.template get<E>(cap);
    s_.result.mask = nb - 1;
    s_.result_cap = cap;
    result_second_ = second;
  }

  Counters read_counters(cudaStream_t stream) {
    Counters c{};
    TANDEM_CUDA(cudaMemcpyAsync(&c, s_.ctr, sizeof(c), cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    return c;
  }

  // Makes sure the result can take `incoming` more entries; rehashes into a larger table if not.
  void ensure_result(std::uint64_t incoming, const Job& job, EngineStats& st, cudaStream_t stream) {
    Counters c = read_counters(stream);
    const std::uint64_t used = std::min<std::uint64_t>(c.result_tail, s_.result_cap);
    if (used + incoming <= s_.result_cap) return;
    const std::uint32_t old_nb = s_.result.mask + 1;
    const Chain<K, V> old = s_.result;
    const std::uint32_t cap =
        grow32(std::max<std::uint64_t>(used + incoming, std::uint64_t(s_.result_cap) * 2) / 2 + 1, 2);
    const std::uint32_t nb = std::bit_ceil(std::max<std::uint32_t>(cap / 2, 1024));
    alloc_result(cap, nb, !result_second_);
    TANDEM_CUDA(cudaMemsetAsync(s_.result.buckets, 0xFF, std::size_t(nb) * 4, stream));
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->result_tail, 0, sizeof(unsigned int), stream));
    merge_chains_kernel<Job>
        <<<gpu::grid_for(old_nb, 256, kGridCap), 256, 0, stream>>>(job, s_, old.buckets, old.pool, old_nb, old_nb, 0);
    TANDEM_CUDA_LAUNCH("mapreduce result grow");
    ++st.result_grows;
  }

  static constexpr std::uint64_t kGridCap = 65535;  // merge and extract kernels loop over the rest

  // Merges the block tables and the spill list into the result, growing it first when needed.
  void merge_all(const Job& job, const Plan& pl, EngineStats& st, cudaStream_t stream) {
    std::vector<std::uint32_t> used(pl.blocks, 0);
    std::uint64_t incoming = 0;
    if (!pl.direct) {
      TANDEM_CUDA(cudaMemcpyAsync(used.data(), s_.block_used, used.size() * 4, cudaMemcpyDeviceToHost, stream));
    }
    Counters c = read_counters(stream);
    for (auto u : used) incoming += u;
    const std::uint32_t spilled = std::min<std::uint32_t>(c.spill_n, s_.spill_cap);
    incoming += spilled;
    ensure_result(incoming, job, st, stream);
    if (!pl.direct) {
      const std::uint64_t nbk = std::uint64_t(pl.blocks) * s_.block_nb;
      merge_chains_kernel<Job><<<gpu::grid_for(nbk, 256, kGridCap), 256, 0, stream>>>(
          job, s_, s_.block_buckets, s_.block_pool, nbk, s_.block_nb, s_.block_pool_n);
      TANDEM_CUDA_LAUNCH("mapreduce merge block tables");
    }
    if (spilled) {
      merge_list_kernel<Job><<<gpu::grid_for(spilled, 256, kGridCap), 256, 0, stream>>>(job, s_, s_.spill, spilled);
      TANDEM_CUDA_LAUNCH("mapreduce merge spill list");
    }
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->spill_n, 0, sizeof(unsigned int), stream));
  }

  template <bool Sampling, bool UseShared>
  void launch_pass(const Job& job, const Plan& pl, std::uint64_t b, std::uint64_t e, cudaStream_t stream) {
    if (e <= b) return;
    if (!pl.direct)
      TANDEM_CUDA(cudaMemsetAsync(s_.block_buckets, 0xFF, std::size_t(pl.blocks) * s_.block_nb * 4, stream));
    const std::size_t smem = UseShared ? pl.smem_bytes : shared_bytes<K, V>(pl.threads, 1, 0);
    auto k = pass_kernel<Job, Sampling, UseShared>;
    gpu::allow_dynamic_shared(reinterpret_cast<const void*>(k), smem);
    k<<<pl.blocks, pl.threads, smem, stream>>>(job, s_, b, e);
    TANDEM_CUDA_LAUNCH("mapreduce pass");
  }

  bool attempt_once(const Job& job, std::uint64_t M, const Plan& pl, EngineStats& st, Report& rep,
                    cudaStream_t stream) {
    gpu::Event t0, t1, t2, t3, t4;
    t0.record(stream);
    set_state(pl);
    alloc_result(pl.result_cap, std::bit_ceil(std::max<std::uint32_t>(pl.result_cap / 2, 1024)), false);
    TANDEM_CUDA(cudaMemsetAsync(s_.ctr, 0, sizeof(Counters), stream));
    TANDEM_CUDA(cudaMemsetAsync(s_.result.buckets, 0xFF, std::size_t(s_.result.mask + 1) * 4, stream));
    s_.hot = nullptr;
    s_.hot_n = 0;
    st = EngineStats{};
    st.records = M;
    st.blocks = pl.blocks;
    st.block_threads = pl.threads;
    st.sample_fraction = pl.p;
    st.hot_fraction = pl.hot_fraction;
    st.shared_entries = pl.sm_n;
    st.block_pool_entries = pl.block_pool_n;
    st.spill_entries = pl.spill_cap;
    st.block_tables = !pl.direct;
    st.hot_path = pl.hot;
    // 1. sampling pass over [0, Ms)
    const std::uint64_t Ms = pl.hot ? std::min<std::uint64_t>(M, static_cast<std::uint64_t>(double(M) * pl.p)) : 0;
    st.sampled_records = Ms;
    if (Ms) {
      if (pl.direct) ensure_result(std::min<std::uint64_t>(Ms * 4, 0x7fff0000ull), job, st, stream);
      launch_pass<true, false>(job, pl, 0, Ms, stream);
      merge_all(job, pl, st, stream);
    }
    t1.record(stream);
    // 2. hot keys: the H most frequent keys of the sample
    std::uint32_t H = 0;
    if (Ms) H = select_hot(job, pl, st, stream);
    t2.record(stream);
    // 3. main pass over [Ms, M)
    if (pl.hot) launch_pass<false, true>(job, pl, Ms, M, stream);
    else launch_pass<false, false>(job, pl, Ms, M, stream);
    t3.record(stream);
    merge_all(job, pl, st, stream);
    Counters c = read_counters(stream);
    st.shared_hits = c.shared_hits;
    st.global_hits = c.global_hits;
    st.spilled = c.spilled;
    if (c.lost) return false;
    // 4. compact the result
    const std::uint32_t cap = std::min<std::uint32_t>(c.result_tail, s_.result_cap);
    keys_out_ = keys_.get<K>(cap);
    values_out_ = values_.get<V>(cap);
    std::uint32_t* counts = counts_.get<std::uint32_t>(cap);
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->out_n, 0, sizeof(unsigned int), stream));
    extract_kernel<K, V><<<gpu::grid_for(s_.result.mask + 1, 256, kGridCap), 256, 0, stream>>>(
        s_.result, s_.result.mask + 1, s_.ctr, keys_out_, values_out_, counts, cap);
    TANDEM_CUDA_LAUNCH("mapreduce extract");
    t4.record(stream);
    c = read_counters(stream);
    if (c.out_n > cap) throw Error("mapreduce GPU engine: internal error, more result entries than allocated");
    n_out_ = c.out_n;
    st.distinct = n_out_;
    (void)H;
    rep.add("GPU sampling pass + merge", "gpu0", t1.seconds_since(t0), gpu::format("{} records", Ms));
    rep.add("GPU hot-key selection", "gpu0", t2.seconds_since(t1), gpu::format("H={}", st.hot_keys));
    rep.add("GPU main pass", "gpu0", t3.seconds_since(t2), gpu::format("{} records", M - Ms));
    rep.add("GPU merge + compact", "gpu0", t4.seconds_since(t3), gpu::format("{} groups", n_out_));
    return true;
  }

  // Sorts the sampled result by reduction count (CUB radix sort) and keeps the top H keys.
  std::uint32_t select_hot(const Job& job, const Plan& pl, EngineStats& st, cudaStream_t stream) {
    (void)job;
    Counters c = read_counters(stream);
    if (c.lost) return 0;
    const std::uint32_t cap = std::min<std::uint32_t>(c.result_tail, s_.result_cap);
    if (cap == 0) return 0;
    K* keys = keys_.get<K>(cap);
    V* vals = values_.get<V>(cap);
    std::uint32_t* counts = counts_.get<std::uint32_t>(cap * 2);
    K* keys_sorted = hot_.get<K>(cap);
    TANDEM_CUDA(cudaMemsetAsync(&s_.ctr->out_n, 0, sizeof(unsigned int), stream));
    extract_kernel<K, V><<<gpu::grid_for(s_.result.mask + 1, 256, kGridCap), 256, 0, stream>>>(
        s_.result, s_.result.mask + 1, s_.ctr, keys, vals, counts, cap);
    TANDEM_CUDA_LAUNCH("mapreduce extract sample");
    c = read_counters(stream);
    const std::uint32_t n = std::min(c.out_n, cap);
    std::size_t temp = 0;
    std::uint32_t* counts_sorted = counts + cap;
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp, counts, counts_sorted, keys, keys_sorted,
                                                          int(n), 0, 32, stream));
    void* tmp = temp_.get<unsigned char>(temp);
    TANDEM_CUDA(cub::DeviceRadixSort::SortPairsDescending(tmp, temp, counts, counts_sorted, keys, keys_sorted, int(n),
                                                          0, 32, stream));
    std::uint32_t H = static_cast<std::uint32_t>(std::ceil(pl.hot_fraction * n));
    H = std::min({H, n, pl.sm_n});
    std::vector<std::uint32_t> top(H);
    if (H) TANDEM_CUDA(cudaMemcpyAsync(top.data(), counts_sorted, std::size_t(H) * 4, cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA(cudaStreamSynchronize(stream));
    std::uint64_t hot_pairs = 0;
    for (auto x : top) hot_pairs += x;
    st.hot_keys = H;
    st.hot_share = st.sampled_records ? double(hot_pairs) / double(std::max<std::uint64_t>(1, st.sampled_records)) : 0;
    s_.hot = keys_sorted;
    s_.hot_n = H;
    return H;
  }

  State<K, V> s_{};
  Scratch block_buckets_, block_pool_, block_used_, spill_, ctr_, result_buckets_, result_pool_, result_buckets2_,
      result_pool2_, keys_, values_, counts_, hot_, temp_;
  bool result_second_{false};
  K* keys_out_{nullptr};
  V* values_out_{nullptr};
  std::size_t n_out_{0};
};

}  // namespace tandem::mapreduce::gpu_engine
