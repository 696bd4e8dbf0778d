#include "tandem/core/memory.hpp"

#include "core/scratch_pool.hpp"
#include "core/zeroed_block_pool.hpp"

namespace tandem {

CachedMemory cached_memory() { return {cached_scratch_bytes(), held_zeroed_bytes()}; }

void release_cached_memory() {
  release_cached_scratch();
  release_zeroed_blocks();
}

}  // namespace tandem
