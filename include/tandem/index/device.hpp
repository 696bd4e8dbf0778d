// tandem::index device helpers (CUDA sources only): a grid-stride walker over an N-D domain that
// advances by carries (one division per thread at its start, none in the loop) and a reader for
// packed index tables.
//
//   const auto plan = tandem::index::grid_plan<3>(ext, strides, grid, block);   // host
//   for (auto it = tandem::index::grid_begin(plan); it.valid(plan); it.advance(plan))
//     out[...] = in[it.off];                                                      // device
#pragma once
#include <array>
#include <cstdint>

#include "tandem/index/generator.hpp"

namespace tandem::index {

// Host: a plan whose step is the launch's thread count (grid * block), for grid_begin.
template <int N, class T = std::uint32_t, class Off = std::int64_t>
CarryPlan<N, T, Off> grid_plan(const std::array<T, N>& ext, const std::array<Off, N>& stride, std::uint64_t grid,
                               std::uint64_t block) {
  return carry_plan<N, T, Off>(ext.data(), stride.data(), grid * block);
}

#if defined(__CUDACC__)
// This thread's flat number in a 1-D launch.
__device__ __forceinline__ std::uint64_t global_thread() {
  return std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
}

// Walker at this thread's first element; advance() then moves by grid * block elements.
template <int N, class T, class Off>
__device__ __forceinline__ CarryIter<N, T, Off> grid_begin(const CarryPlan<N, T, Off>& p,
                                                           std::uint64_t elems_per_thread = 1) {
  return CarryIter<N, T, Off>::at(p, global_thread() * elems_per_thread);
}

// Reads packed indices (16- or 32-bit words) through the read-only cache and unpacks them.
template <class Word>
struct PackedReader {
  const Word* table{nullptr};
  PackLayout layout{};
  __device__ __forceinline__ Index3<std::uint32_t> operator()(std::uint32_t n) const {
    return unpack32(std::uint32_t(__ldg(table + n)), layout);
  }
};
#endif

}  // namespace tandem::index
