#include "tandem/core/memory.hpp"

#include "core/scratch_pool.hpp"
#include "core/zeroed_block_pool.hpp"
#if TANDEM_HAS_CUDA
#include "tandem/cuda/runtime.hpp"
#endif

namespace tandem {

CachedMemory cached_memory() {
#if TANDEM_HAS_CUDA
  return {cached_scratch_bytes(), held_zeroed_bytes(), gpu::cached_device_bytes()};
#else
  return {cached_scratch_bytes(), held_zeroed_bytes(), 0};
#endif
}

void release_cached_memory() {
  release_cached_scratch();
  release_zeroed_blocks();
#if TANDEM_HAS_CUDA
  gpu::release_cached_device_blocks();
#endif
}

}  // namespace tandem
