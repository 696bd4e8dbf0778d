// The GPU MapReduce engine's device side (entries, state, job hooks, kernels) that Engine<Job> instantiates.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

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

template <class Job, class V>
__device__ __forceinline__ void job_atomic_reduce(const Job& job, V* dst, const V& v) {
  if constexpr (requires { job.atomic_reduce(dst, v); }) {
    job.atomic_reduce(dst, v);
  } else if constexpr (std::is_same_v<V, std::uint64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(dst), static_cast<unsigned long long>(v));
  } else if constexpr (std::is_same_v<V, Agg<double>> || std::is_same_v<V, Agg<std::int64_t>>) {
    atomic_agg_reduce(dst, v);
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

}  // namespace tandem::mapreduce::gpu_engine
