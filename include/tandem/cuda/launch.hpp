// Launch shapes for kernels. Pure host code (no CUDA headers needed).
#pragma once
#include <algorithm>
#include <cstdint>

namespace tandem::gpu {

// Blocks of `block` threads for `items` work items at one item per thread: at least one block,
// at most `cap` (a grid-stride loop covers what a capped grid leaves out).
constexpr unsigned grid_for(std::uint64_t items, unsigned block, std::uint64_t cap) {
  const std::uint64_t need = (items + block - 1) / block;
  return static_cast<unsigned>(std::clamp<std::uint64_t>(need, 1, std::max<std::uint64_t>(1, cap)));
}

}  // namespace tandem::gpu
