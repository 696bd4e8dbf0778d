// GPU bitonic kernels: the fused tile kernel (registers + shared memory) and the register pass for
// large strides.
//
// Floor (u32, 2^28 keys = 1 GiB; details in docs/sort-bitonic.md): 406 network steps; with tiles
// of 2^12 elements and 5 global strides per register pass the data cross device memory ~50 times,
// each pass reading and writing 1 GiB: ~27 ms at ~4 TB/s (~10 Gkeys/s). The naive network
// (bench/kernels/sort/anchors.cu) needs one pass per global step (136) plus 17 shared passes.
// Measured on an H200: 44 ms vs 139 ms.
#include <algorithm>
#include <bit>
#include <cstdint>

#include "sort/bitonic/cpu_steps.hpp"
#include "sort/bitonic/gpu.hpp"
#include "sort/bitonic/launch_choice.hpp"
#include "tandem/cuda/launch.hpp"
#include "tandem/cuda/runtime.hpp"

namespace tandem::bitonic::detail {
namespace {

template <class U>
__device__ __forceinline__ void cx(U& a, U& b, bool asc) {
  const U x = a, y = b;
  const bool swap = asc ? (y < x) : (x < y);
  a = swap ? y : x;
  b = swap ? x : y;
}

// Subset p and position j (1..p) of step t.
__host__ __device__ __forceinline__ void step_pj(int t, int& p, int& j) {
  p = 1;
  while (p * (p + 1) / 2 < t) ++p;
  j = t - (p - 1) * p / 2;
}

// R steps (strides 2^(R-1) .. 1 in register space) on the 2^R elements a thread holds, one direction.
template <class U, int R>
__device__ __forceinline__ void reg_merge(U (&v)[1 << R], bool asc) {
#pragma unroll
  for (int r = R - 1; r >= 0; --r)
#pragma unroll
    for (int m = 0; m < (1 << R); ++m)
      if ((m & (1 << r)) == 0) cx(v[m], v[m | (1 << r)], asc);
}

// Shared-memory index with one pad word per 32: thread-owned runs of E consecutive words and
// coalesced rows both stay free of bank conflicts.
__device__ __forceinline__ std::uint32_t pad(std::uint32_t i) { return i + (i >> 5); }

// Direction of element i (tile-local) in a merge of `size`: merges of at least a tile take
// the direction of the whole tile (tile_asc); smaller ones read the tile-local index.
__device__ __forceinline__ bool ascending(std::uint32_t i, std::uint64_t size, std::uint32_t T, bool tile_asc) {
  return size >= T ? tile_asc : (i & std::uint32_t(size)) == 0;
}

// Steps with compile-time stride S < E on the E consecutive elements a thread owns (tile-local
// indices own .. own+E-1).
template <class U, int E, int S>
__device__ __forceinline__ void reg_step(U (&v)[E], std::uint32_t own, std::uint64_t size, std::uint32_t T,
                                         bool tile_asc) {
#pragma unroll
  for (int m = 0; m < E; ++m)
    if ((m & S) == 0) cx(v[m], v[m | S], ascending(own + m, size, T, tile_asc));
}

template <class U, int E>
__device__ __forceinline__ void reg_step_dispatch(U (&v)[E], std::uint32_t own, std::uint64_t size, std::uint32_t st,
                                                  std::uint32_t T, bool tile_asc) {
  if constexpr (E > 1) {
    if (st == 1) {
      reg_step<U, E, 1>(v, own, size, T, tile_asc);
      return;
    }
  }
  if constexpr (E > 2) {
    if (st == 2) {
      reg_step<U, E, 2>(v, own, size, T, tile_asc);
      return;
    }
  }
  if constexpr (E > 4) {
    if (st == 4) {
      reg_step<U, E, 4>(v, own, size, T, tile_asc);
      return;
    }
  }
  if constexpr (E > 8) {
    if (st == 8) {
      reg_step<U, E, 8>(v, own, size, T, tile_asc);
      return;
    }
  }
}

// R consecutive steps of one merge (strides 2^top .. 2^(top-R+1)) on a tile in shared memory:
// each thread takes groups of 2^R elements that differ only in those index bits, runs the R
// steps in registers, and writes them back: one shared round trip and one barrier for R steps.
template <class U, int R>
__device__ __forceinline__ void shared_group(U* s, std::uint32_t T, int top, std::uint64_t size, bool tile_asc) {
  constexpr int M = 1 << R;
  const int low = top - R + 1;
  const std::uint32_t low_mask = (1u << low) - 1;
  for (std::uint32_t g = threadIdx.x; g < T / M; g += blockDim.x) {
    const std::uint32_t i0 = ((g & ~low_mask) << R) | (g & low_mask);
    const bool asc = ascending(i0, size, T, tile_asc);
    U v[M];
#pragma unroll
    for (int m = 0; m < M; ++m) v[m] = s[pad(i0 + (std::uint32_t(m) << low))];
    reg_merge<U, R>(v, asc);
#pragma unroll
    for (int m = 0; m < M; ++m) s[pad(i0 + (std::uint32_t(m) << low))] = v[m];
  }
}

template <class U, int E>
__device__ __forceinline__ void shared_group_dispatch(int r, U* s, std::uint32_t T, int top, std::uint64_t size,
                                                      bool tile_asc) {
  if constexpr (E >= 16) {
    if (r >= 4) {
      shared_group<U, 4>(s, T, top, size, tile_asc);
      return;
    }
  }
  if constexpr (E >= 8) {
    if (r >= 3) {
      shared_group<U, 3>(s, T, top, size, tile_asc);
      return;
    }
  }
  if constexpr (E >= 4) {
    if (r >= 2) {
      shared_group<U, 2>(s, T, top, size, tile_asc);
      return;
    }
  }
  shared_group<U, 1>(s, T, top, size, tile_asc);
}

constexpr int log2_const(int e) { return e <= 1 ? 0 : 1 + log2_const(e / 2); }

// One block per tile of T = blockDim.x * E elements (persistent: tiles strided by gridDim.x).
// Runs steps first..last, all with stride < T: strides >= E in groups of up to log2(E) steps
// through shared memory, strides < E in registers on the E consecutive elements a thread owns
// (several subsets' small strides in one go, no barrier between them).
template <class U, int E>
__global__ void tile_kernel(U* __restrict__ data, std::uint64_t lo, std::uint64_t ntiles, int first, int last) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  U* s = reinterpret_cast<U*>(smem_raw);
  constexpr int LOGE = log2_const(E);
  const std::uint32_t B = blockDim.x;
  const std::uint32_t tid = threadIdx.x;
  const std::uint32_t T = B * E;
  for (std::uint64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    const std::uint64_t base = lo + tile * T;
#pragma unroll
    for (int m = 0; m < E; ++m) s[pad(std::uint32_t(m) * B + tid)] = data[base + std::uint64_t(m) * B + tid];
    __syncthreads();
    int p, j;
    step_pj(first, p, j);
    int t = first;
    while (t <= last) {
      const int top = p - j;
      if (top >= LOGE) {
        // Up to log2(E) steps of this merge, all with stride >= E.
        const int r = min(min(LOGE, top - LOGE + 1), last - t + 1);
        const std::uint64_t size = std::uint64_t{1} << p;
        shared_group_dispatch<U, E>(r, s, T, top, size, (base & size) == 0);
        __syncthreads();
        t += r;
        j += r;
        if (j > p) {
          ++p;
          j = 1;
        }
      } else {
        U v[E];
        const std::uint32_t own = tid * E;
#pragma unroll
        for (int m = 0; m < E; ++m) v[m] = s[pad(own + m)];
        while (t <= last && p - j < LOGE) {
          const std::uint64_t size = std::uint64_t{1} << p;
          reg_step_dispatch<U, E>(v, own, size, 1u << (p - j), T, (base & size) == 0);
          ++t;
          if (++j > p) {
            ++p;
            j = 1;
          }
        }
#pragma unroll
        for (int m = 0; m < E; ++m) s[pad(own + m)] = v[m];
        __syncthreads();
      }
    }
#pragma unroll
    for (int m = 0; m < E; ++m) data[base + std::uint64_t(m) * B + tid] = s[pad(std::uint32_t(m) * B + tid)];
    __syncthreads();
  }
}

// R consecutive steps of merge size 2^subset with strides 2^top, ..., 2^(top-R+1), in registers:
// each thread loads the 2^R elements that differ only in those index bits.
template <class U, int R>
__global__ void global_pass_kernel(U* __restrict__ data, std::uint64_t lo, std::uint64_t groups, int subset, int top) {
  constexpr int M = 1 << R;
  const int low = top - R + 1;
  const std::uint64_t low_mask = (std::uint64_t{1} << low) - 1;
  const std::uint64_t size = std::uint64_t{1} << subset;
  for (std::uint64_t g = blockIdx.x * std::uint64_t(blockDim.x) + threadIdx.x; g < groups;
       g += std::uint64_t(gridDim.x) * blockDim.x) {
    const std::uint64_t i0 = lo + (((g & ~low_mask) << R) | (g & low_mask));
    const bool asc = (i0 & size) == 0;
    U v[M];
#pragma unroll
    for (int m = 0; m < M; ++m) v[m] = data[i0 + (std::uint64_t(m) << low)];
    reg_merge<U, R>(v, asc);
#pragma unroll
    for (int m = 0; m < M; ++m) data[i0 + (std::uint64_t(m) << low)] = v[m];
  }
}

// At most this many blocks: the caller's limit (persistent-style loops), else 2^30.
std::uint64_t grid_cap(int sm_limit) { return sm_limit > 0 ? std::uint64_t(sm_limit) : std::uint64_t{1} << 30; }

template <class U, int E>
void launch_tile(U* d, std::uint64_t lo, std::uint64_t ntiles, int block, int first, int last, int sm_limit,
                 cudaStream_t s) {
  const std::size_t shmem = tile_shared_bytes(std::uint64_t(block) * E, sizeof(U));
  gpu::allow_dynamic_shared(reinterpret_cast<const void*>(tile_kernel<U, E>), shmem);
  tile_kernel<U, E><<<gpu::grid_for(ntiles, 1, grid_cap(sm_limit)), block, shmem, s>>>(d, lo, ntiles, first, last);
  TANDEM_CUDA_LAUNCH("bitonic tile_kernel");
}

template <class U>
void launch_tile_e(int e, U* d, std::uint64_t lo, std::uint64_t ntiles, int block, int first, int last, int sm_limit,
                   cudaStream_t s) {
  switch (e) {
    case 2: return launch_tile<U, 2>(d, lo, ntiles, block, first, last, sm_limit, s);
    case 4: return launch_tile<U, 4>(d, lo, ntiles, block, first, last, sm_limit, s);
    case 8: return launch_tile<U, 8>(d, lo, ntiles, block, first, last, sm_limit, s);
    default:
      if constexpr (sizeof(U) <= 8) return launch_tile<U, 16>(d, lo, ntiles, block, first, last, sm_limit, s);
      else return launch_tile<U, 8>(d, lo, ntiles, block, first, last, sm_limit, s);
  }
}

template <class U>
void launch_global(int R, U* d, std::uint64_t lo, std::uint64_t count, int subset, int top, int sm_limit,
                   cudaStream_t s) {
  constexpr int kThreads = 256;
  const std::uint64_t groups = count >> R;
  const int grid = int(gpu::grid_for(groups, kThreads, grid_cap(sm_limit)));
  switch (R) {
    case 1: global_pass_kernel<U, 1><<<grid, kThreads, 0, s>>>(d, lo, groups, subset, top); break;
    case 2: global_pass_kernel<U, 2><<<grid, kThreads, 0, s>>>(d, lo, groups, subset, top); break;
    case 3: global_pass_kernel<U, 3><<<grid, kThreads, 0, s>>>(d, lo, groups, subset, top); break;
    case 4: global_pass_kernel<U, 4><<<grid, kThreads, 0, s>>>(d, lo, groups, subset, top); break;
    default:
      if constexpr (sizeof(U) <= 8) global_pass_kernel<U, 5><<<grid, kThreads, 0, s>>>(d, lo, groups, subset, top);
      else global_pass_kernel<U, 4><<<grid, kThreads, 0, s>>>(d, lo, groups, subset, top);
      break;
  }
  TANDEM_CUDA_LAUNCH("bitonic global_pass_kernel");
}

std::uint64_t lowest_bit(std::uint64_t x) { return x & (~x + 1); }

template <class U, int E>
int registers_of_tile_kernel() {
  cudaFuncAttributes a{};
  TANDEM_CUDA(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(tile_kernel<U, E>)));
  return a.numRegs;
}

}  // namespace

template <class U>
int tile_kernel_registers(int elems) {
  switch (elems) {
    case 2: return registers_of_tile_kernel<U, 2>();
    case 4: return registers_of_tile_kernel<U, 4>();
    case 8: return registers_of_tile_kernel<U, 8>();
    default:
      if constexpr (sizeof(U) <= 8) return registers_of_tile_kernel<U, 16>();
      else return registers_of_tile_kernel<U, 8>();
  }
}

template <class U>
void gpu_steps(U* d, std::uint64_t lo, std::uint64_t hi, int first, int last, const GpuConfig& cfg, cudaStream_t s) {
  if (hi <= lo || first > last) return;
  const std::uint64_t len = hi - lo;
  int e = cfg.elems > 0 ? cfg.elems : 8;
  if (sizeof(U) > 8 && e > 8) e = 8;
  int block = cfg.block > 0 ? cfg.block : 512;
  const int fuse = std::clamp(cfg.fuse > 0 ? cfg.fuse : 5, 1, sizeof(U) <= 8 ? 5 : 4);
  // The tile must divide the range and be aligned with it.
  std::uint64_t tile = std::uint64_t(block) * e;
  tile = std::min({tile, lowest_bit(lo | hi | (std::uint64_t{1} << 62)), len});
  if (tile < std::uint64_t(block) * e) {
    while (e > 2 && tile < std::uint64_t(e) * 2) e >>= 1;
    block = int(std::max<std::uint64_t>(1, tile / e));
  }
  // A range aligned only to a few elements (policy a's share) would give blocks of a few threads:
  // run those steps as register passes over the whole range instead (no tiles at all).
  if (tile < 256 && tile < len) tile = 1;
  int t = first;
  while (t <= last) {
    const NetStep st = net_step(t);
    if (2 * st.stride <= tile) {
      int end = t;
      while (end + 1 <= last && 2 * net_step(end + 1).stride <= tile) ++end;
      launch_tile_e<U>(e, d, lo, len / tile, block, t, end, cfg.sm_limit, s);
      t = end + 1;
    } else {
      // Up to `fuse` steps of this subset whose strides all exceed half a tile.
      int r = 1;
      while (r < fuse && t + r <= last && net_step(t + r).subset == st.subset && 2 * net_step(t + r).stride > tile) ++r;
      launch_global<U>(r, d, lo, len, st.subset, std::countr_zero(st.stride), cfg.sm_limit, s);
      t += r;
    }
  }
}

#define TANDEM_BITONIC_GPU(U)                                                                             \
  template void gpu_steps<U>(U*, std::uint64_t, std::uint64_t, int, int, const GpuConfig&, cudaStream_t); \
  template int tile_kernel_registers<U>(int);
TANDEM_BITONIC_GPU(std::uint32_t)
TANDEM_BITONIC_GPU(std::uint64_t)
TANDEM_BITONIC_GPU(u128)

}  // namespace tandem::bitonic::detail
