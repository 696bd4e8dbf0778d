// Launch shapes for kernels, and the shared-memory limit a launch needs. Pure host code (no CUDA
// headers needed).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tandem::gpu {

// Blocks of `block` threads for `items` work items at one item per thread: at least one block,
// at most `cap` (a grid-stride loop covers what a capped grid leaves out).
constexpr unsigned grid_for(std::uint64_t items, unsigned block, std::uint64_t cap) {
  const std::uint64_t need = (items + block - 1) / block;
  return static_cast<unsigned>(std::clamp<std::uint64_t>(need, 1, std::max<std::uint64_t>(1, cap)));
}

// Lets `kernel` (a __global__ function's address) launch with `bytes` of dynamic shared memory on
// the current device. The limit only rises and is kept per device for the whole process, so host
// threads launching one kernel with different sizes at once never lower it under each other.
// Defined in CUDA builds only.
void allow_dynamic_shared(const void* kernel, std::size_t bytes);

}  // namespace tandem::gpu
