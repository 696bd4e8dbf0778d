#include "tandem/core/memory.hpp"

#include "groupby/cpu_scratch_pool.hpp"
#include "mapreduce/word_slot_pool.hpp"

namespace tandem {

CachedMemory cached_memory() { return {cpu_groupby::cached_scratch_bytes(), mapreduce::detail::held_zeroed_bytes()}; }

void release_cached_memory() {
  cpu_groupby::release_cached_scratch();
  mapreduce::detail::release_zeroed_blocks();
}

}  // namespace tandem
