// Device views and table operations of the hash group-by (device code only; include from .cu
// files): the global table's view (TableRef: slots, capacity, the all-ones key's accumulator), the
// overflow list (Sink), the partitioned tier's regions (PartRef), the atomic reductions of the
// accumulators, and the shared tables' probes (linear probing, bucketed two-choice, bucketed
// linear probing; bucket_table.hpp). The kernels (kernels.cuh) are built from these.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "groupby/hash/bucket_table.hpp"
#include "groupby/hash/two_choice.hpp"
#include "groupby/hash/types.hpp"
#include "tandem/core/hash.hpp"
#include "tandem/cuda/atomics.cuh"
#include "tandem/groupby/accumulators.hpp"

namespace tandem::hash_groupby {

// Range reduction without a power-of-two size (Lemire): h * n / 2^32.
__device__ __forceinline__ std::uint32_t slot_of(std::uint32_t h, std::uint32_t n) { return two_choice::reduce(h, n); }

template <class K>
using word_t = gpu::atomic_word_t<K>;
// Keys change once (empty -> key) and never again, so a probe may read them through L1: a stale
// "empty" only sends the thread to the atomicCAS, which returns the truth.
template <class K>
__device__ __forceinline__ K ld_key_ca(const K* p) {
  return static_cast<K>(__ldca(reinterpret_cast<const word_t<K>*>(p)));
}
template <class K>
__device__ __forceinline__ K cas_key(K* p, K cmp, K val) {
  return gpu::atomic_cas_key(p, cmp, val);
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
  if constexpr (std::is_same_v<Acc, std::uint64_t>)
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  else atomic_agg_reduce(p, v);
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

}  // namespace tandem::hash_groupby
