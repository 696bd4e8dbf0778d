// Device pieces of the GPU table group-by: value views, per-group accumulators updated by atomics
// (in a per-block shared-memory table first when the groups are few), and the small kernels the
// engine strings together.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "groupby/gpu/device_columns.hpp"
#include "groupby/gpu/plan.hpp"
#include "groupby/ops/op_common.hpp"
#include "tandem/core/key_order.hpp"
#include "tandem/cuda/buffers.hpp"
#include "tandem/cuda/runtime.hpp"

namespace tandem::gpu_groupby {

using u64 = unsigned long long;  // what CUDA's 64-bit atomics take

__device__ __forceinline__ bool present(const std::uint8_t* valid, std::size_t i) {
  return valid == nullptr || ((valid[i >> 3] >> (i & 7)) & 1u);
}

// A value's place in tandem's key order, widened to 64 bits (as min and max compare values:
// -0.0 below +0.0).
template <class T>
__device__ __forceinline__ u64 ordered64(T v) {
  return static_cast<u64>(to_ordered(v));
}

// The order of holistic aggregations and keys: -0.0 equal to +0.0, all NaNs one value.
template <class T>
__device__ __forceinline__ u64 key_bits(T v) {
  return static_cast<u64>(to_ordered(agg::normalised(v)));
}

// One value column as the kernels read it.
template <class T>
struct Values {
  const T* v;
  const std::uint8_t* valid;
};

template <class T>
Values<T> values_of(const DeviceColumn& c) {
  return {c.as<T>(), c.valid()};
}

// Calls f(T{}) with the element type the device holds for a column (u32 codes for strings).
template <class F>
decltype(auto) visit_device(ColumnType t, F&& f) {
  if (t == ColumnType::str) return f(std::uint32_t{});
  return visit_numeric(t, f);
}

// Accumulators: S is the per-group state, identity() its start, input() what row i contributes
// and add() the atomic update (shared or global memory alike).
struct CountAcc {
  using S = u64;
  static __host__ __device__ S identity() { return 0; }
  template <class T>
  __device__ static S input(const T*, std::size_t, std::uint32_t, const void*) {
    return 1;
  }
  __device__ static void add(S* p, S x) { atomicAdd(p, x); }
};

struct SumF64Acc {
  using S = double;
  static __host__ __device__ S identity() { return -0.0; }  // a group of -0.0 values sums to -0.0
  template <class T>
  __device__ static S input(const T* v, std::size_t i, std::uint32_t, const void*) {
    return static_cast<double>(v[i]);
  }
  __device__ static void add(S* p, S x) { atomicAdd(p, x); }
};

// Integer sums in two's complement: the bits of an int64 or uint64 sum (wrap checked on the host).
struct SumIntAcc {
  using S = u64;
  static __host__ __device__ S identity() { return 0; }
  template <class T>
  __device__ static S input(const T* v, std::size_t i, std::uint32_t, const void*) {
    if constexpr (std::is_signed_v<T>) return static_cast<u64>(static_cast<std::int64_t>(v[i]));
    else return static_cast<u64>(v[i]);
  }
  __device__ static void add(S* p, S x) { atomicAdd(p, x); }
};

// min and max in tandem's key order (-0.0 below +0.0); a NaN is skipped unless every value is NaN:
// it contributes the identity, and a group with values whose state is still the identity decodes
// as NaN (~0 and 0 are no number's ordered bits).
template <bool kMin>
struct ExtremeAcc {
  using S = u64;
  static __host__ __device__ S identity() { return kMin ? ~u64{0} : 0; }
  template <class T>
  __device__ static S input(const T* v, std::size_t i, std::uint32_t, const void*) {
    if constexpr (std::is_floating_point_v<T>)
      if (v[i] != v[i]) return identity();
    return ordered64(v[i]);
  }
  __device__ static void add(S* p, S x) {
    if constexpr (kMin) atomicMin(p, x);
    else atomicMax(p, x);
  }
};
using MinAcc = ExtremeAcc<true>;
using MaxAcc = ExtremeAcc<false>;

// The first and last present row of each group (first() and last()).
struct FirstRowAcc {
  using S = u64;
  static __host__ __device__ S identity() { return ~u64{0}; }
  template <class T>
  __device__ static S input(const T*, std::size_t i, std::uint32_t, const void*) {
    return i;
  }
  __device__ static void add(S* p, S x) { atomicMin(p, x); }
};
struct LastRowAcc : FirstRowAcc {
  static __host__ __device__ S identity() { return 0; }
  __device__ static void add(S* p, S x) { atomicMax(p, x); }
};

// Squared deviations from each group's mean (given in ctx): the second pass of var and std.
struct SquaredDeviationAcc {
  using S = double;
  static __host__ __device__ S identity() { return 0.0; }
  template <class T>
  __device__ static S input(const T* v, std::size_t i, std::uint32_t g, const void* ctx) {
    const double d = static_cast<double>(v[i]) - static_cast<const double*>(ctx)[g];
    return d * d;
  }
  __device__ static void add(S* p, S x) { atomicAdd(p, x); }
};

// Bitwise equality, so a +0.0 partial sum is not taken for the -0.0 identity.
template <class S>
__device__ __forceinline__ bool same_bits(S a, S b) {
  if constexpr (std::is_same_v<S, double>) return __double_as_longlong(a) == __double_as_longlong(b);
  else return a == b;
}

// top(col, n) by levels: level 0 is each group's largest value (in key order), level j + 1 the
// largest below level j (ctx: level j per group); a level's count is how often its value occurs.
struct LevelAcc {
  using S = u64;
  static __host__ __device__ S identity() { return 0; }
  template <class T>
  __device__ static S input(const T* v, std::size_t i, std::uint32_t g, const void* ctx) {
    const u64 b = key_bits(v[i]);
    if (ctx == nullptr) return b;
    return b < static_cast<const u64*>(ctx)[g] ? b : 0;  // 0: no change to the maximum
  }
  __device__ static void add(S* p, S x) { atomicMax(p, x); }
};
struct LevelCountAcc {
  using S = u64;
  static __host__ __device__ S identity() { return 0; }
  template <class T>
  __device__ static S input(const T* v, std::size_t i, std::uint32_t g, const void* ctx) {
    return key_bits(v[i]) == static_cast<const u64*>(ctx)[g];
  }
  __device__ static void add(S* p, S x) {
    if (x) atomicAdd(p, x);
  }
};

template <class S>
__global__ void fill_kernel(S* out, std::size_t n, S value) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = value;
}

// gid == nullptr: every row is in group 0 (a whole-column reduction).
template <class Acc, class T>
__global__ void accumulate_global(const std::uint32_t* gid, Values<T> in, std::size_t n, typename Acc::S* out,
                                  const void* ctx) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if (!present(in.valid, i)) continue;
    const std::uint32_t g = gid ? gid[i] : 0;
    Acc::add(&out[g], Acc::input(in.v, i, g, ctx));
  }
}

// Per-block tables in shared memory, `copies` of them (warp w updates copy w % copies), so warps
// do not queue on one address when the groups are few; each block adds its tables' non-identity
// entries to the global ones at the end.
template <class Acc, class T>
__global__ void accumulate_shared(const std::uint32_t* gid, Values<T> in, std::size_t n, std::uint32_t groups,
                                  std::uint32_t copies, typename Acc::S* out, const void* ctx) {
  using S = typename Acc::S;
  extern __shared__ __align__(8) unsigned char shared_bytes[];
  S* local = reinterpret_cast<S*>(shared_bytes);
  for (std::uint32_t g = threadIdx.x; g < groups * copies; g += blockDim.x) local[g] = Acc::identity();
  __syncthreads();
  S* mine = local + (threadIdx.x / 32) % copies * groups;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if (!present(in.valid, i)) continue;
    const std::uint32_t g = gid ? gid[i] : 0;
    Acc::add(&mine[g], Acc::input(in.v, i, g, ctx));
  }
  __syncthreads();
  for (std::uint32_t g = threadIdx.x; g < groups * copies; g += blockDim.x)
    if (!same_bits(local[g], Acc::identity())) Acc::add(&out[g % groups], local[g]);
}

}  // namespace tandem::gpu_groupby

namespace tandem::gpu_groupby {

// Blocks for a grid-stride loop over n items: enough to fill the device, no more.
int grid_for(std::size_t n, int per_sm = 8);

// Launches a grid-stride kernel over n items on stream s and checks the launch.
#define TANDEM_GROUPBY_LAUNCH(kernel, n, s, ...)                            \
  do {                                                                      \
    kernel<<<::tandem::gpu_groupby::grid_for(n), 256, 0, s>>>(__VA_ARGS__); \
    TANDEM_CUDA_LAUNCH(#kernel);                                            \
  } while (0)

template <class S>
void fill(S* out, std::size_t n, S value, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<<<grid_for(n), 256, 0, s>>>(out, n, value);
  TANDEM_CUDA_LAUNCH("fill_kernel");
}

// out[0, groups) (already holding Acc::identity()) takes every present row's contribution.
template <class Acc, class T>
void accumulate(const std::uint32_t* gid, Values<T> in, std::size_t n, std::uint64_t groups, typename Acc::S* out,
                cudaStream_t s, const void* ctx = nullptr) {
  if (n == 0) return;
  if (groups <= kSharedGroups) {
    constexpr std::size_t kThreads = 512, kBytes = 32 << 10;
    const auto one = static_cast<std::size_t>(groups) * sizeof(typename Acc::S);
    const auto copies = static_cast<std::uint32_t>(std::clamp<std::size_t>(kBytes / one, 1, kThreads / 32));
    accumulate_shared<Acc, T><<<grid_for(n, 4), kThreads, one * copies, s>>>(
        gid, in, n, static_cast<std::uint32_t>(groups), copies, out, ctx);
    TANDEM_CUDA_LAUNCH("accumulate_shared");
  } else {
    accumulate_global<Acc, T><<<grid_for(n, 16), 256, 0, s>>>(gid, in, n, out, ctx);
    TANDEM_CUDA_LAUNCH("accumulate_global");
  }
}

}  // namespace tandem::gpu_groupby
