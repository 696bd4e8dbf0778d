// Memory tandem keeps between calls. CPU scratch blocks (sorts, group-bys) and word count tables
// outlive the call that used them, so the next call of a similar size takes no page faults; the
// scratch pool holds at most a quarter of the machine's memory, the word count's tables at most
// an eighth; freed GPU blocks of up to 64 MiB are kept too, at most 256 MiB. A long-lived process that is done with
// tandem for a while can give it back.
#pragma once
#include <cstddef>

namespace tandem {

struct CachedMemory {
  std::size_t scratch_bytes{0};       // CPU scratch blocks (sort, group-by)
  std::size_t word_table_bytes{0};    // zeroed word count tables
  std::size_t device_block_bytes{0};  // freed GPU blocks kept for the next allocation (at most 256 MiB)
  std::size_t total() const { return scratch_bytes + word_table_bytes + device_block_bytes; }
};

// What tandem holds now, not counting blocks in use by calls running at the moment.
CachedMemory cached_memory();

// Returns every held block to the system. Safe while other threads run tandem calls: blocks in
// use are not touched, and return to the pools when their calls end.
void release_cached_memory();

}  // namespace tandem
