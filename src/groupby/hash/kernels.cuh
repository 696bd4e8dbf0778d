// The hash group-by's kernels (device code only; include from .cu files). engine.cu launches them
// in the order its header comment gives; plan.hpp sizes their tables and shared memory.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "groupby/hash/device_table.cuh"
#include "groupby/hash/plan.hpp"
#include "groupby/hash/tuning.hpp"

namespace tandem::hash_groupby {
using tuning::kBins;
using tuning::kCompactItems;
using tuning::kCompactThreads;
using tuning::kCompactTile;
using tuning::kPartVecs;

template <class K, class V>
__global__ void init_table_kernel(TableRef<K, V> t) {
  using T = Traits<K, V>;
  const typename T::Acc id = T::identity();
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
  std::uint32_t* scnt = reinterpret_cast<std::uint32_t*>(smem + shared_acc_offset(S, sizeof(K)));
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

// Part (counts, not with kDynamic): the body runs in block-wide tiles of kPartVecs vectors per
// thread; a single cold key is not reduced into the global table but appended, with the tile's
// other cold keys sorted by partition in shared memory, to its partition's region in whole runs
// (partition_reduce_kernel reduces the regions afterwards).

// kHot, kHotTwoChoice and kHotBuckets with counts also combine the top keys per warp.
template <class K, class V>
constexpr bool combines_top_keys(int mode) {
  return (mode == kHot || mode == kHotTwoChoice || mode == kHotBuckets) && Traits<K, V>::kCount;
}

// Empties the block's shared table and its accumulator copies, reads the top keys, and places the
// hot keys as the mode says. Returns the accumulator copy of the calling thread's warp.
template <class K, class V, int Mode>
__device__ __forceinline__ typename Traits<K, V>::SAcc* init_shared_table(const PassArgs<K, V>& a, K* skeys,
                                                                          typename Traits<K, V>::SAcc* sacc, K* s_top,
                                                                          std::uint32_t& s_topn,
                                                                          std::uint32_t& s_fill) {
  using T = Traits<K, V>;
  using SAcc = typename T::SAcc;
  const std::uint32_t tid = threadIdx.x, N = blockDim.x;
  const std::uint32_t S = a.S, C = a.copies, H = a.hot_n;
  for (std::uint32_t i = tid; i < S; i += N) skeys[i] = T::kEmpty;
  SAcc id;
  if constexpr (T::kCount) id = 0;
  else id = T::identity();
  for (std::uint32_t i = tid; i < C * (S + 1); i += N) sacc[i] = id;
  if (tid == 0) {
    s_fill = H;
    std::uint32_t tn = 0;
    if constexpr (combines_top_keys<K, V>(Mode)) {
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
  return sacc + std::size_t((tid / 32) % C) * (S + 1);
}

// One thread's reductions in pass_kernel: a key found in the block's shared table is reduced
// there with a shared atomic, any other goes to the global table; the hit counters follow.
template <class K, class V, int Mode, bool Part>
struct PassReducer {
  using T = Traits<K, V>;
  using Acc = typename T::Acc;
  using SAcc = typename T::SAcc;
  static constexpr bool kShared = Mode != kGlobal;
  const PassArgs<K, V>& a;
  K* skeys;
  SAcc* mine;
  const K* s_top;
  const std::uint32_t& s_topn;
  std::uint32_t* s_fill;
  std::uint32_t lane;
  unsigned long long n_shared{0}, n_global{0};

  // Reduces (k, v), standing for w pairs. With `defer` (Part), a single cold key is left to the
  // caller, who appends it to its partition: returns true then.
  __device__ __forceinline__ bool process(K k, const Acc& v, unsigned w, bool defer = false) {
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
            bucket_upsert(skeys, a.S / buckets::kWays, k, T::kEmpty, s_fill, a.dyn_limit);  // dyn_limit <= S/2
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
  }

  // One key of the warp-uniform body; `valid` false for lanes past the end. True: the key is a
  // single cold key left to the caller (Part only).
  __device__ __forceinline__ bool step(K k, bool valid, std::uint64_t idx) {
    if constexpr (mode_match(Mode)) {  // uniform: every lane gets here
      const unsigned m = __match_any_sync(0xffffffffu, k) & __ballot_sync(0xffffffffu, valid);
      if (valid && lane == static_cast<std::uint32_t>(__ffs(m) - 1))
        return process(k, Acc(__popc(m)), static_cast<unsigned>(__popc(m)), Part);
      return false;
    }
    if constexpr (combines_top_keys<K, V>(Mode)) {
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
  }

  // The hit counters: every thread of the block gets here (block size is a multiple of 32).
  __device__ __forceinline__ void add_hits() {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      n_shared += __shfl_down_sync(0xffffffffu, n_shared, o);
      n_global += __shfl_down_sync(0xffffffffu, n_global, o);
    }
    if (lane == 0) {
      if (n_shared) atomicAdd(&a.ctr->shared_hits, n_shared);
      if (n_global) atomicAdd(&a.ctr->global_hits, n_global);
    }
  }
};

// The block's shared aggregates into the global table: one update per key it holds.
template <class K, class V>
__device__ __forceinline__ void flush_shared_table(const PassArgs<K, V>& a, const K* skeys,
                                                   const typename Traits<K, V>::SAcc* sacc) {
  using T = Traits<K, V>;
  using Acc = typename T::Acc;
  using SAcc = typename T::SAcc;
  for (std::uint32_t j = threadIdx.x; j <= a.S; j += blockDim.x) {
    const K k = j < a.S ? skeys[j] : T::kEmpty;
    if (j < a.S && k == T::kEmpty) continue;
    Acc tot = T::identity();
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

template <class K, class V, int Mode, bool Part = false>
__global__ void __launch_bounds__(1024) pass_kernel(PassArgs<K, V> a) {
  using T = Traits<K, V>;
  using SAcc = typename T::SAcc;
  constexpr bool kShared = Mode != kGlobal;
  static_assert(!mode_match(Mode) || T::kCount, "kHotMatch adds group sizes: counts only");
  static_assert(!Part || (T::kCount && Mode != kDynamic), "the partitioned tier: counts, main pass");
  extern __shared__ __align__(16) unsigned char smem[];
  __shared__ K s_top[8];
  __shared__ std::uint32_t s_topn, s_fill;
  const std::uint32_t tid = threadIdx.x, N = blockDim.x, lane = tid & 31u;
  K* skeys = reinterpret_cast<K*>(smem);
  SAcc* sacc = reinterpret_cast<SAcc*>(smem + shared_acc_offset(a.S, sizeof(K)));
  SAcc* mine = nullptr;
  if constexpr (kShared) mine = init_shared_table<K, V, Mode>(a, skeys, sacc, s_top, s_topn, s_fill);
  PassReducer<K, V, Mode, Part> r{a, skeys, mine, s_top, s_topn, &s_fill, lane};

  const std::uint64_t gtid = std::uint64_t(blockIdx.x) * N + tid, gstride = std::uint64_t(gridDim.x) * N;
  constexpr unsigned kVec = 16 / sizeof(K);
  const K* keys = a.keys;
  const std::uint64_t b = a.begin, e = a.end;
  // scalar head up to a 16-byte boundary, uint4 body (two vectors per thread in flight, a loop
  // whose trip count is the same for every lane of a warp), scalar tail
  const std::uint64_t mis = (reinterpret_cast<std::uintptr_t>(keys + b) & 15u) / sizeof(K);
  const std::uint64_t body = std::min<std::uint64_t>(e, mis ? b + (kVec - mis) : b);
  for (std::uint64_t i = b + gtid; i < body; i += gstride) r.process(keys[i], acc_at<K, V>(a.values, i), 1u);
  const std::uint64_t nv = (e - body) / kVec;
  const uint4* vp = reinterpret_cast<const uint4*>(keys + body);
  if constexpr (Part) {
    part_body<K, V>(
        a.part, vp, nv, smem,
        [&](K k, bool valid, std::uint64_t j, unsigned u) { return r.step(k, valid, body + j * kVec + u); }, a.table,
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
      for (unsigned u = 0; u < kVec; ++u) r.step(k0[u], j0 < nv, body + j0 * kVec + u);
#pragma unroll
      for (unsigned u = 0; u < kVec; ++u) r.step(k1[u], j1 < nv, body + j1 * kVec + u);
    }
  }
  for (std::uint64_t i = body + nv * kVec + gtid; i < e; i += gstride)
    r.process(keys[i], acc_at<K, V>(a.values, i), 1u);
  r.add_hits();
  if constexpr (kShared) {
    __syncthreads();
    flush_shared_table(a, skeys, sacc);
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

// The sample's statistics of one key seen c times: its count (into *count unless null), the
// count histogram (shared; the last bin sums its pairs too) and the top keys (at most 8).
template <class K>
__device__ __forceinline__ void add_sample_stats(K k, std::uint64_t c, std::uint32_t* count, std::uint32_t* hist,
                                                 Ctr* ctr, std::uint64_t top_min, K* top, std::uint32_t* top_n) {
  if (count) *count = c > 0xffffffffull ? 0xffffffffu : static_cast<std::uint32_t>(c);
  atomicAdd(&hist[c < kBins ? c : kBins - 1], 1u);
  if (c >= kBins - 1) atomicAdd(&ctr->big_pairs, static_cast<unsigned long long>(c));
  if (c >= top_min) {
    const std::uint32_t q = atomicAdd(top_n, 1u);
    if (q < 8) top[q] = k;
  }
}

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
      if constexpr (Stats)
        add_sample_stats(k[r], count_of(v[r]), o < out_cap ? oc + o : nullptr, sh, ctr, top_min, top, top_n);
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

}  // namespace tandem::hash_groupby
