// Kernels of the 32-bit keys' MSD sort (msd_keys32_plan.hpp says how the passes fit together).
// Only CUB and the plan's structs: bench_sort_msd includes this file to time the stages.
#pragma once
#include <cub/cub.cuh>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "sort/msd_keys32_plan.hpp"

namespace tandem::detail::msd32 {

// Counts of every top 16-bit prefix, added into hist[65536]. Each block keeps the 65,536 counts as
// 16-bit halves of 32-bit words (128 KiB of shared memory); a half that reaches 0x8000 hands
// 0x8000 to the global count, so a half never carries into its neighbour (at most one add per
// thread of the block can land between the hand-over's two atomics).
constexpr int kHistThreads = 1024;
constexpr std::size_t kHistSharedBytes = kMsdKeys32SubBuckets / 2 * sizeof(std::uint32_t);

__device__ __forceinline__ void count_prefix(std::uint32_t* packed, std::uint32_t* hist, std::uint32_t key) {
  const std::uint32_t bin = key >> 16, shift = (bin & 1u) * 16u;
  const std::uint32_t old = atomicAdd(&packed[bin >> 1], 1u << shift);
  if (((old >> shift) & 0xFFFFu) == 0x7FFFu) {
    atomicSub(&packed[bin >> 1], 0x8000u << shift);
    atomicAdd(&hist[bin], 0x8000u);
  }
}

static __global__ void __launch_bounds__(kHistThreads)
    prefix_histogram_kernel(const std::uint32_t* __restrict__ in, std::size_t n, std::uint32_t* hist) {
  extern __shared__ std::uint32_t packed[];
  for (int i = threadIdx.x; i < kMsdKeys32SubBuckets / 2; i += blockDim.x) packed[i] = 0;
  __syncthreads();
  // Keys before the first 16-byte boundary, then whole uint4 vectors, then the tail.
  std::size_t head = ((16 - (reinterpret_cast<std::uintptr_t>(in) & 15)) & 15) / sizeof(std::uint32_t);
  if (head > n) head = n;
  const std::size_t vecs = (n - head) / 4;
  const std::size_t tid = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::size_t stride = std::size_t(gridDim.x) * blockDim.x;
  if (tid < head) count_prefix(packed, hist, in[tid]);
  const uint4* v = reinterpret_cast<const uint4*>(in + head);
  for (std::size_t i = tid; i < vecs; i += stride) {
    const uint4 q = v[i];
    count_prefix(packed, hist, q.x);
    count_prefix(packed, hist, q.y);
    count_prefix(packed, hist, q.z);
    count_prefix(packed, hist, q.w);
  }
  for (std::size_t i = head + vecs * 4 + tid; i < n; i += stride) count_prefix(packed, hist, in[i]);
  __syncthreads();
  for (int bin = threadIdx.x; bin < kMsdKeys32SubBuckets; bin += blockDim.x) {
    const std::uint32_t c = (packed[bin >> 1] >> ((bin & 1) * 16)) & 0xFFFFu;
    if (c) atomicAdd(&hist[bin], c);
  }
}

// After the exclusive sum of the prefix counts (starts[65536]): the top bytes' cursors (where
// each top bucket starts), the keys per top byte, and the smallest non-empty and the largest
// prefix count (summary[256], summary[257]). One block of 1024 threads reading the counts
// coalesced (this stage sits between the counting and the host's choice).
constexpr int kSummaryThreads = 1024;
static __global__ void __launch_bounds__(kSummaryThreads)
    summary_kernel(const std::uint32_t* __restrict__ hist, const std::uint32_t* __restrict__ starts,
                   std::uint32_t* top_cursor, std::uint32_t* summary) {
  using Reduce = cub::BlockReduce<std::uint32_t, kSummaryThreads>;
  __shared__ typename Reduce::TempStorage red;
  __shared__ std::uint32_t sums[kMsdKeys32TopBuckets];
  const int t = threadIdx.x;
  if (t < kMsdKeys32TopBuckets) sums[t] = 0;
  __syncthreads();
  std::uint32_t most = 0, least = 0xFFFFFFFFu;
  for (int i = t; i < kMsdKeys32SubBuckets; i += kSummaryThreads) {
    const std::uint32_t c = hist[i];
    most = max(most, c);
    if (c) {
      least = min(least, c);
      atomicAdd(&sums[i >> 8], c);
    }
  }
  const std::uint32_t all_least = Reduce(red).Reduce(least, cuda::minimum<>{});
  __syncthreads();
  const std::uint32_t all_most = Reduce(red).Reduce(most, cuda::maximum<>{});
  __syncthreads();
  if (t < kMsdKeys32TopBuckets) {
    top_cursor[t] = starts[t * 256];
    summary[t] = sums[t];
  }
  if (t == 0) {
    summary[256] = all_least;
    summary[257] = all_most;
  }
}

// Ranking of 8-bit digits as CUB's onesweep pass does it (warp match, counts known early); keys
// in warp-striped order, which is their order in memory, so equal digits keep that order.
template <int Threads>
using Rank8 = cub::BlockRadixRankMatchEarlyCounts<Threads, 8, false, cub::BLOCK_SCAN_RAKING_MEMOIZE>;
template <int Threads>
constexpr int kBinsPerThread = (256 + Threads - 1) / Threads;

// A block's shared memory: the ranking's storage, then the tile's keys in ranked order.
template <int Threads, int Items>
union RankOrKeys {
  typename Rank8<Threads>::TempStorage rank;
  std::uint32_t keys[Threads * Items];
};

// The counts callback of the scatter: as soon as a tile's digit counts are known, each digit's
// run is reserved in the bucket with one atomic add (the padding, all-ones keys, is not counted).
template <int Threads>
struct ReserveRuns {
  std::uint32_t* cursors;  // the bucket's 256 digit cursors
  std::uint32_t padding;
  std::uint32_t (&base)[kBinsPerThread<Threads>];
  __device__ __forceinline__ void operator()(int (&bins)[kBinsPerThread<Threads>]) {
#pragma unroll
    for (int u = 0; u < kBinsPerThread<Threads>; ++u) {
      const int bin = int(threadIdx.x) * kBinsPerThread<Threads> + u;
      if (bin < 256) {
        const std::uint32_t c = std::uint32_t(bins[u]) - (bin == 255 ? padding : 0u);
        base[u] = c ? atomicAdd(&cursors[bin], c) : 0u;
      }
    }
  }
};

// One tile of keys scattered by the byte at `shift` into its bucket's 256 digit ranges: ranked on
// that byte, the tile reserves its run in each digit range with one atomic add on
// cursors[bucket * 256 + digit], goes through shared memory in digit order and is written out
// run by run (consecutive threads, consecutive places). A part tile is padded with all-ones keys,
// ranked last, and not written.
template <int Threads, int Items>
__global__ void __launch_bounds__(Threads)
    scatter_digit_kernel(const std::uint32_t* __restrict__ in, std::uint32_t* __restrict__ out, std::uint32_t* cursors,
                         int shift, ScatterTiles tiles) {
  constexpr int kTile = Threads * Items, kBins = kBinsPerThread<Threads>;
  using Rank = Rank8<Threads>;
  __shared__ RankOrKeys<Threads, Items> tmp;
  __shared__ std::uint32_t offset[256];
  __shared__ std::uint32_t bucket;
  const std::uint32_t tile = blockIdx.x;
  if (threadIdx.x == 0) {
    std::uint32_t lo = 0, hi = tiles.buckets;  // the last bucket b with tiles[b] <= tile
    while (hi - lo > 1) {
      const std::uint32_t mid = (lo + hi) / 2;
      if (tiles.tiles[mid] <= tile) lo = mid;
      else hi = mid;
    }
    bucket = lo;
  }
  __syncthreads();
  const std::uint32_t b = bucket;
  const std::uint32_t begin = tiles.begin[b] + (tile - tiles.tiles[b]) * kTile;
  const int valid = static_cast<int>(min(begin + kTile, tiles.begin[b + 1]) - begin);
  std::uint32_t keys[Items];
  if (valid == kTile) cub::LoadDirectWarpStriped(int(threadIdx.x), in + begin, keys);
  else cub::LoadDirectWarpStriped(int(threadIdx.x), in + begin, keys, valid, 0xFFFFFFFFu);
  int ranks[Items];
  int prefix[kBins];
  std::uint32_t base[kBins];
  Rank(tmp.rank).RankKeys(keys, ranks, cub::ShiftDigitExtractor<std::uint32_t>(shift, 8), prefix,
                          ReserveRuns<Threads>{cursors + b * 256, std::uint32_t(kTile - valid), base});
#pragma unroll
  for (int u = 0; u < kBins; ++u) {
    const int bin = int(threadIdx.x) * kBins + u;
    if (bin < 256) offset[bin] = base[u] - std::uint32_t(prefix[u]);
  }
  __syncthreads();
#pragma unroll
  for (int u = 0; u < Items; ++u) tmp.keys[ranks[u]] = keys[u];
  __syncthreads();
#pragma unroll
  for (int u = 0; u < Items; ++u) {
    const int i = u * Threads + int(threadIdx.x);
    if (i < valid) {
      const std::uint32_t k = tmp.keys[i];
      out[offset[(k >> shift) & 255u] + std::uint32_t(i)] = k;
    }
  }
}

// Sub-bucket i (keys [ends[i-1], ends[i]), sharing their top 16 bits) sorted on its low 16 bits
// in place by block i, when its size lies in (lo, hi]; hi <= Threads * Items. Two rankings of 8
// bits through shared memory (least significant first); the all-ones padding ranks last in both.
template <int Threads, int Items>
__global__ void __launch_bounds__(Threads)
    sort_low_kernel(std::uint32_t* data, const std::uint32_t* __restrict__ ends, std::uint32_t lo, std::uint32_t hi) {
  constexpr int kBins = kBinsPerThread<Threads>;
  using Rank = Rank8<Threads>;
  extern __shared__ __align__(16) unsigned char low_shared[];  // the larger classes need over 48 KiB
  auto& tmp = *reinterpret_cast<RankOrKeys<Threads, Items>*>(low_shared);
  const std::uint32_t i = blockIdx.x;
  const std::uint32_t end = ends[i], begin = i ? ends[i - 1] : 0u;
  const std::uint32_t size = end - begin;
  if (size <= lo || size > hi || size < 2) return;
  std::uint32_t keys[Items];
  cub::LoadDirectWarpStriped(int(threadIdx.x), data + begin, keys, int(size), 0xFFFFFFFFu);
  int ranks[Items];
  int prefix[kBins];
#pragma unroll
  for (int shift = 0; shift < 16; shift += 8) {
    Rank(tmp.rank).RankKeys(keys, ranks, cub::ShiftDigitExtractor<std::uint32_t>(shift, 8), prefix);
    __syncthreads();
#pragma unroll
    for (int u = 0; u < Items; ++u) tmp.keys[ranks[u]] = keys[u];
    __syncthreads();
    if (shift == 0) {
      // Back into registers in warp-striped order, which is now the order of the low byte.
      const int first = (int(threadIdx.x) / 32) * Items * 32 + int(threadIdx.x) % 32;
#pragma unroll
      for (int u = 0; u < Items; ++u) keys[u] = tmp.keys[first + u * 32];
      __syncthreads();
    }
  }
#pragma unroll
  for (int u = 0; u < Items; ++u) {
    const std::uint32_t r = u * Threads + threadIdx.x;
    if (r < size) data[begin + r] = tmp.keys[r];
  }
}

// Device scratch of one sort (raw pointers: the library keeps them in its sort workspace,
// bench_sort_msd allocates its own).
struct Scratch {
  std::uint32_t* hist{nullptr};        // 65536 prefix counts
  std::uint32_t* starts{nullptr};      // 65536: where each sub-bucket starts, then (after the mid scatter) ends
  std::uint32_t* top_cursor{nullptr};  // 256
  std::uint32_t* summary{nullptr};     // 258: keys per top byte, least and most keys of a sub-bucket
  void* scan_temp{nullptr};
  std::size_t scan_temp_bytes{0};
  std::uint32_t* summary_host{nullptr};  // 258, pinned
  cudaEvent_t counted{nullptr};          // recorded after the summary's copy (null: wait on the stream)
  int histogram_blocks{132};             // one per multiprocessor
};

inline std::size_t scan_temp_bytes() {
  std::size_t bytes = 0;
  cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const std::uint32_t*>(nullptr),
                                static_cast<std::uint32_t*>(nullptr), kMsdKeys32SubBuckets);
  return bytes;
}

// The shared-memory sort launches the plan chose, one per size class of kLowSortClasses.
template <class Check, std::size_t... C>
void launch_low_sorts(const MsdKeys32Plan& plan, std::uint32_t* data, const std::uint32_t* ends, cudaStream_t s,
                      Check& check, std::index_sequence<C...>) {
  auto launch = [&](auto c) {
    constexpr LowSortClass k = kLowSortClasses[decltype(c)::value];
    if (!plan.low[decltype(c)::value]) return;
    constexpr int bytes = static_cast<int>(sizeof(RankOrKeys<k.threads, k.items>));
    check(cudaFuncSetAttribute(sort_low_kernel<k.threads, k.items>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes),
          "MSD sort: shared memory of the sub-bucket sorts");
    sort_low_kernel<k.threads, k.items><<<kMsdKeys32SubBuckets, k.threads, bytes, s>>>(data, ends, k.lo, k.hi);
    check(cudaGetLastError(), "MSD sort: shared-memory sort of the sub-buckets");
  };
  (launch(std::integral_constant<std::size_t, C>{}), ...);
}

// Sorts the n keys at `in` into `out` (in == out is allowed; tmp holds n keys) when the plan
// takes them, and returns the plan. The host waits for the prefix counts (a few microseconds
// after they are counted) to choose; a declined plan has only read `in`.
// check(cudaError_t, const char* what) reports a failed call or launch.
// mark(stage) is called after each stage is queued (0: counts, 1: top scatter, 2: mid scatter,
// 3: sub-bucket sorts) for benchmarks that time them.
struct NoMark {
  void operator()(int) const {}
};
template <class Check, class Mark = NoMark>
MsdKeys32Plan sort_keys32(const std::uint32_t* in, std::uint32_t* out, std::uint32_t* tmp, std::size_t n,
                          const Scratch& sc, cudaStream_t s, Check check,
                          std::size_t min_elements = kMsdKeys32MinElements, Mark mark = {}) {
  if (!msd_keys32_size_ok(n, min_elements)) {
    static constexpr std::uint32_t none[kMsdKeys32TopBuckets] = {};
    return plan_msd_keys32(n, none, 0, 0, min_elements);
  }
  check(cudaMemsetAsync(sc.hist, 0, kMsdKeys32SubBuckets * sizeof(std::uint32_t), s), "MSD sort: clear the counts");
  check(cudaFuncSetAttribute(prefix_histogram_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(kHistSharedBytes)),
        "MSD sort: shared memory of the prefix counts");
  prefix_histogram_kernel<<<sc.histogram_blocks, kHistThreads, kHistSharedBytes, s>>>(in, n, sc.hist);
  check(cudaGetLastError(), "MSD sort: prefix counts");
  std::size_t scan_bytes = sc.scan_temp_bytes;
  check(cub::DeviceScan::ExclusiveSum(sc.scan_temp, scan_bytes, sc.hist, sc.starts, kMsdKeys32SubBuckets, s),
        "MSD sort: prefix starts");
  summary_kernel<<<1, kSummaryThreads, 0, s>>>(sc.hist, sc.starts, sc.top_cursor, sc.summary);
  check(cudaGetLastError(), "MSD sort: summary");
  check(cudaMemcpyAsync(sc.summary_host, sc.summary, 258 * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s),
        "MSD sort: summary to the host");
  mark(0);
  if (sc.counted) {
    check(cudaEventRecord(sc.counted, s), "MSD sort: mark the counts");
    check(cudaEventSynchronize(sc.counted), "MSD sort: wait for the counts");
  } else {
    check(cudaStreamSynchronize(s), "MSD sort: wait for the counts");
  }
  const MsdKeys32Plan plan =
      plan_msd_keys32(n, std::span<const std::uint32_t, kMsdKeys32TopBuckets>(sc.summary_host, kMsdKeys32TopBuckets),
                      sc.summary_host[256], sc.summary_host[257], min_elements);
  if (!plan.use) return plan;
  constexpr int T = static_cast<int>(kMsdScatterThreads), I = static_cast<int>(kMsdScatterItems);
  scatter_digit_kernel<T, I><<<plan.top.total(), T, 0, s>>>(in, tmp, sc.top_cursor, 24, plan.top);
  check(cudaGetLastError(), "MSD sort: scatter by the top byte");
  mark(1);
  scatter_digit_kernel<T, I><<<plan.mid.total(), T, 0, s>>>(tmp, out, sc.starts, 16, plan.mid);
  check(cudaGetLastError(), "MSD sort: scatter by the middle byte");
  mark(2);
  launch_low_sorts(plan, out, sc.starts, s, check, std::make_index_sequence<kLowSortClasses.size()>{});
  mark(3);
  return plan;
}

}  // namespace tandem::detail::msd32
