// The dense-range path's kernels (device code only; include from .cu files). dense_plan.hpp says
// what each pass does and sizes them; dense_engine.cu launches them.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <cub/block/block_scan.cuh>

#include "groupby/hash/dense_plan.hpp"
#include "groupby/hash/device_table.cuh"

namespace tandem::hash_groupby::dense {

template <class K>
__device__ __forceinline__ K ld_key_cs(const K* p) {
  return static_cast<K>(__ldcs(reinterpret_cast<const word_t<K>*>(p)));
}
template <class K>
__device__ __forceinline__ K kmin(K a, K b) {
  return b < a ? b : a;
}
template <class K>
__device__ __forceinline__ K kmax(K a, K b) {
  return b > a ? b : a;
}

// Min and max of keys[i * step] for i < n into mm[0] (set to all-ones before) and mm[1] (set to
// 0 before). step 1: every key; larger: a spread sample.
template <class K>
__global__ void __launch_bounds__(kThreads) min_max_kernel(const K* keys, std::uint64_t n, std::uint64_t step, K* mm) {
  using W = word_t<K>;
  K lo = static_cast<K>(~K(0)), hi = 0;
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  std::uint64_t i = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {  // four loads in flight
    const K a = ld_key_cs(keys + i * step), b = ld_key_cs(keys + (i + stride) * step);
    const K c = ld_key_cs(keys + (i + 2 * stride) * step), d = ld_key_cs(keys + (i + 3 * stride) * step);
    lo = kmin(lo, kmin(kmin(a, b), kmin(c, d)));
    hi = kmax(hi, kmax(kmax(a, b), kmax(c, d)));
  }
  for (; i < n; i += stride) {
    const K a = ld_key_cs(keys + i * step);
    lo = kmin(lo, a);
    hi = kmax(hi, a);
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    lo = kmin(lo, static_cast<K>(__shfl_xor_sync(0xffffffffu, W(lo), o)));
    hi = kmax(hi, static_cast<K>(__shfl_xor_sync(0xffffffffu, W(hi), o)));
  }
  __shared__ K s_lo[32], s_hi[32];
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x / 32;
  if (lane == 0) {
    s_lo[warp] = lo;
    s_hi[warp] = hi;
  }
  __syncthreads();
  if (warp != 0) return;
  lo = lane < warps ? s_lo[lane] : static_cast<K>(~K(0));
  hi = lane < warps ? s_hi[lane] : K(0);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    lo = kmin(lo, static_cast<K>(__shfl_xor_sync(0xffffffffu, W(lo), o)));
    hi = kmax(hi, static_cast<K>(__shfl_xor_sync(0xffffffffu, W(hi), o)));
  }
  if (lane == 0) {
    atomicMin(reinterpret_cast<W*>(mm), W(lo));
    atomicMax(reinterpret_cast<W*>(mm + 1), W(hi));
  }
}

// Partition p's region: records [start[p], start[p] + cap[p]) of the buffer; cursor[p] counts
// every record of p the pass saw, also those past cap[p].
struct Regions {
  std::uint64_t* start;
  std::uint64_t* cap;
  unsigned long long* cursor;
  std::uint32_t* first_block;  // P + 1: the reduce's first block of each partition, then the total
};

// Speculative regions of `region` records each; cursors zeroed.
__global__ void even_regions_kernel(Regions r, std::uint32_t P, std::uint64_t region) {
  for (std::uint32_t p = blockIdx.x * blockDim.x + threadIdx.x; p < P; p += gridDim.x * blockDim.x) {
    r.start[p] = std::uint64_t(p) * region;
    r.cap[p] = region;
    r.cursor[p] = 0;
  }
}

// Exclusive scan of f(p) for p < P (P <= 2 x kThreads) by one block of kThreads threads: out[p],
// and the total to out[P] when `total_out`.
template <class T, class F>
__device__ __forceinline__ void block_scan_partitions(std::uint32_t P, F&& f, T* out, bool total_out) {
  static_assert(kMaxPartitions <= 2 * kThreads, "two partitions a thread");
  using Scan = cub::BlockScan<T, kThreads>;
  __shared__ typename Scan::TempStorage tmp;
  const std::uint32_t p0 = 2 * threadIdx.x;
  T x[2] = {p0 < P ? f(p0) : T(0), p0 + 1 < P ? f(p0 + 1) : T(0)}, y[2];
  T total;
  Scan(tmp).ExclusiveSum(x, y, total);
  if (p0 < P) out[p0] = y[0];
  if (p0 + 1 < P) out[p0 + 1] = y[1];
  if (total_out && threadIdx.x == 0) out[P] = total;
}

// After an overflow: regions of exactly what the pass counted (starts aligned to kRegionAlign),
// cursors zeroed for the pass to run again. One block of kThreads.
__global__ void __launch_bounds__(kThreads) exact_regions_kernel(Regions r, std::uint32_t P) {
  const std::uint32_t p0 = 2 * threadIdx.x;
  const unsigned long long n0 = p0 < P ? r.cursor[p0] : 0ull, n1 = p0 + 1 < P ? r.cursor[p0 + 1] : 0ull;
  auto aligned = [&](std::uint32_t p) {
    const unsigned long long n = p == p0 ? n0 : n1;
    return (n + kRegionAlign - 1) / kRegionAlign * kRegionAlign;
  };
  block_scan_partitions<unsigned long long>(P, aligned, reinterpret_cast<unsigned long long*>(r.start), false);
  if (p0 < P) {
    r.cap[p0] = n0;
    r.cursor[p0] = 0;
  }
  if (p0 + 1 < P) {
    r.cap[p0 + 1] = n1;
    r.cursor[p0 + 1] = 0;
  }
}

// The reduce's blocks: partition p gets ceil(records in its region / chunk) of them, from
// first_block[p]. One block of kThreads.
__global__ void __launch_bounds__(kThreads) chunk_blocks_kernel(Regions r, std::uint32_t P, std::uint64_t chunk) {
  auto blocks = [&](std::uint32_t p) {
    const unsigned long long n = r.cursor[p] < r.cap[p] ? r.cursor[p] : r.cap[p];
    return static_cast<std::uint32_t>((n + chunk - 1) / chunk);
  };
  block_scan_partitions<std::uint32_t>(P, blocks, r.first_block, true);
}

template <class K, class V>
struct PartitionArgs {
  using VIn = typename Traits<K, V>::VIn;
  const K* keys;
  const VIn* values;
  std::uint64_t n;
  K min;
  std::uint32_t shift, P;
  Regions regions;
  std::uint16_t* low;  // (key - min) & (S - 1) of each record, by partition
  VIn* vals;           // its value (not for counts)
  Ctr* ctr;            // overflow_n: set when a region was too small
};

// Records per thread and tile of the partition pass.
template <class V>
constexpr unsigned partition_items() {
  return std::is_void_v<V> ? 16u : 8u;
}
// Dynamic shared memory of the partition pass: tile values, tile slots (key - min), then per
// partition its count (then the records of it that fit), its offset in the tile and its place.
template <class K, class V>
constexpr std::size_t partition_shared_bytes() {
  constexpr std::size_t T = std::size_t(partition_items<V>()) * kThreads;
  constexpr std::size_t vb = std::is_void_v<V> ? 0 : sizeof(typename Traits<K, V>::VIn);
  return T * (vb + sizeof(std::uint32_t)) + kMaxPartitions * (2 * sizeof(std::uint32_t) + sizeof(std::uint64_t));
}

// The partition pass, in tiles of partition_items x kThreads records: each record's slot
// d = key - min gets its rank in its partition's tile counter (a shared atomic); the block scans
// the counters, reserves each partition's run in its region with one global atomic, orders the
// tile by partition in shared memory and writes each run with consecutive threads: the low bits
// as u16 (and the value), whole sectors rather than one scattered store per record.
template <class K, class V>
__global__ void __launch_bounds__(kThreads, 2) partition_kernel(PartitionArgs<K, V> a) {
  using T = Traits<K, V>;
  using VIn = typename T::VIn;
  constexpr unsigned kItems = partition_items<V>();
  constexpr std::uint32_t kTile = kItems * kThreads;
  extern __shared__ __align__(16) unsigned char smem[];
  VIn* tv = reinterpret_cast<VIn*>(smem);
  std::uint32_t* td = reinterpret_cast<std::uint32_t*>(smem + (T::kCount ? 0 : kTile * sizeof(VIn)));
  std::uint64_t* base = reinterpret_cast<std::uint64_t*>(td + kTile);
  std::uint32_t* hist = reinterpret_cast<std::uint32_t*>(base + kMaxPartitions);  // then: records that fit
  std::uint32_t* off = hist + kMaxPartitions;
  const std::uint32_t tid = threadIdx.x, P = a.P, shift = a.shift, mask = (1u << shift) - 1u;
  for (std::uint32_t p = tid; p < P; p += kThreads) hist[p] = 0;
  __syncthreads();
  bool overflow = false;
  for (std::uint64_t tb = std::uint64_t(blockIdx.x) * kTile; tb < a.n; tb += std::uint64_t(gridDim.x) * kTile) {
    std::uint32_t d[kItems], rank[kItems];
    VIn v[kItems];
#pragma unroll
    for (unsigned u = 0; u < kItems; ++u) {
      const std::uint64_t j = tb + u * kThreads + tid;
      d[u] = j < a.n ? static_cast<std::uint32_t>(ld_key_cs(a.keys + j) - a.min) : ~0u;  // ~0u: no record
      if constexpr (!T::kCount) v[u] = j < a.n ? ld_stream(a.values + j) : VIn{};
    }
#pragma unroll
    for (unsigned u = 0; u < kItems; ++u) rank[u] = d[u] != ~0u ? atomicAdd(&hist[d[u] >> shift], 1u) : 0u;
    __syncthreads();
    block_scan_partitions<std::uint32_t>(
        P, [&](std::uint32_t p) { return hist[p]; }, off, false);
    __syncthreads();
    for (std::uint32_t p = tid; p < P; p += kThreads) {
      const std::uint32_t x = hist[p];
      if (!x) continue;
      const unsigned long long at = atomicAdd(&a.regions.cursor[p], static_cast<unsigned long long>(x));
      const std::uint64_t cap = a.regions.cap[p];
      base[p] = a.regions.start[p] + at;
      hist[p] = at >= cap ? 0u : static_cast<std::uint32_t>(cap - at < x ? cap - at : x);
    }
    __syncthreads();  // offsets, places and fits are written
    const std::uint32_t tile_records = static_cast<std::uint32_t>(a.n - tb < kTile ? a.n - tb : kTile);
#pragma unroll
    for (unsigned u = 0; u < kItems; ++u) {
      if (d[u] == ~0u) continue;
      const std::uint32_t at = off[d[u] >> shift] + rank[u];
      td[at] = d[u];
      if constexpr (!T::kCount) tv[at] = v[u];
    }
    __syncthreads();
    for (std::uint32_t i = tid; i < tile_records; i += kThreads) {
      const std::uint32_t x = td[i], p = x >> shift, local = i - off[p];
      if (local < hist[p]) {
        const std::uint64_t g = base[p] + local;
        a.low[g] = static_cast<std::uint16_t>(x & mask);
        if constexpr (!T::kCount) a.vals[g] = tv[i];
      } else {
        overflow = true;
      }
    }
    __syncthreads();
    for (std::uint32_t p = tid; p < P; p += kThreads) hist[p] = 0;
    __syncthreads();
  }
  if (overflow) atomicOr(&a.ctr->overflow_n, 1u);
}

template <class K, class V>
struct ReduceArgs {
  using VIn = typename Traits<K, V>::VIn;
  using Acc = typename Traits<K, V>::Acc;
  const K* keys;  // direct: the input
  const VIn* values;
  std::uint64_t n;
  K min;
  const std::uint16_t* low;  // partitioned: the partition buffer
  const VIn* vals;
  Regions regions;
  std::uint32_t P, shift;
  std::uint64_t chunk;  // records a block reduces
  Acc* table;           // R accumulators
};

// Reduces a chunk of records into S = 1 << shift shared accumulators indexed by key - min (direct:
// a slice of the input) or by the low bits (partitioned: a chunk of one partition's region), then
// adds the occupied ones into the global table (slot p * S + j). Block-uniform early exits.
template <class K, class V, bool Direct>
__global__ void __launch_bounds__(kThreads) reduce_kernel(ReduceArgs<K, V> a) {
  using T = Traits<K, V>;
  using SAcc = typename T::SAcc;
  using Acc = typename T::Acc;
  extern __shared__ __align__(16) unsigned char smem[];
  SAcc* sacc = reinterpret_cast<SAcc*>(smem);
  const std::uint32_t tid = threadIdx.x, S = 1u << a.shift;
  std::uint64_t lo = 0, hi = 0, slot0 = 0;
  if constexpr (Direct) {
    lo = std::uint64_t(blockIdx.x) * a.chunk;
    hi = lo + a.chunk < a.n ? lo + a.chunk : a.n;
    if (lo >= hi) return;
  } else {
    const std::uint32_t b = blockIdx.x;
    if (b >= a.regions.first_block[a.P]) return;
    std::uint32_t l = 0, h = a.P;  // the last partition whose first block is <= b
    while (h - l > 1) {
      const std::uint32_t m = (l + h) / 2;
      if (a.regions.first_block[m] <= b) l = m;
      else h = m;
    }
    const std::uint64_t c = b - a.regions.first_block[l];
    const unsigned long long cur = a.regions.cursor[l], cap = a.regions.cap[l];
    const std::uint64_t n = cur < cap ? cur : cap, end = (c + 1) * a.chunk < n ? (c + 1) * a.chunk : n;
    lo = a.regions.start[l] + c * a.chunk;
    hi = a.regions.start[l] + end;
    slot0 = std::uint64_t(l) << a.shift;
  }
  SAcc id;
  if constexpr (T::kCount) id = 0;
  else id = T::identity();
  for (std::uint32_t j = tid; j < S; j += kThreads) sacc[j] = id;
  __syncthreads();
  if constexpr (Direct) {
#pragma unroll 4
    for (std::uint64_t i = lo + tid; i < hi; i += kThreads)
      sacc_atomic(&sacc[static_cast<std::uint32_t>(ld_key_cs(a.keys + i) - a.min)], acc_at<K, V>(a.values, i));
  } else {
    // lo is a multiple of 8 (region starts and chunks are): 16-byte loads of 8 low parts
    const uint4* vp = reinterpret_cast<const uint4*>(a.low);
    for (std::uint64_t q = lo / 8 + tid; q < hi / 8; q += kThreads) {
      const uint4 w = __ldcs(vp + q);
      std::uint16_t s[8];
      memcpy(s, &w, 16);
#pragma unroll
      for (unsigned u = 0; u < 8; ++u) sacc_atomic(&sacc[s[u]], acc_at<K, V>(a.vals, q * 8 + u));
    }
    for (std::uint64_t i = hi / 8 * 8 + tid; i < hi; i += kThreads)
      sacc_atomic(&sacc[a.low[i]], acc_at<K, V>(a.vals, i));
  }
  __syncthreads();
  for (std::uint32_t j = tid; j < S; j += kThreads) {
    const SAcc x = sacc[j];
    if (count_of(x) == 0) continue;
    acc_atomic(&a.table[slot0 + j], Acc(x));
  }
}

// Every slot of the global table to the identity (counts: a memset instead).
template <class Acc>
__global__ void fill_kernel(Acc* table, std::uint64_t n, Acc id) {
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < n;
       i += std::uint64_t(gridDim.x) * blockDim.x)
    table[i] = id;
}

// A slot holds a group when some record reduced into it.
template <class Acc>
struct Occupied {
  const Acc* table;
  __device__ __forceinline__ bool operator()(std::uint32_t d) const { return count_of(table[d]) > 0; }
};

// The groups in key order: slot idx[i] (i < *n) is key min + idx[i].
template <class K, class Acc>
__global__ void gather_kernel(const Acc* table, const std::uint32_t* idx, const unsigned* n, K min, K* keys,
                              Acc* accs) {
  const std::uint64_t m = *n;
  for (std::uint64_t i = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; i < m;
       i += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint32_t d = idx[i];
    keys[i] = static_cast<K>(min + d);
    accs[i] = table[d];
  }
}

}  // namespace tandem::hash_groupby::dense
