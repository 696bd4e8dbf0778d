// Large scratch blocks kept for the next large request (the CPU group-by's arrays, the CPU radix
// sort's buffers). A fresh block's first touch costs a page fault and the kernel zeroing each page
// (a third of a 10^7-group query's time); a block handed back to the pool keeps its pages, so the
// next call of a similar size reuses them. Blocks are sized in classes (multiples of 2 MiB, at most
// 1/8 above the request) so similar requests share them; a request of a class the pool lacks gets
// the held blocks' pages moved into it (mremap: no copy, no zeroing), the largest first. The pool
// keeps at most a quarter of the machine's memory (cached_scratch_limit()); beyond that blocks go
// back to the system.
#pragma once
#include <cstddef>

namespace tandem {

// The size class of a request of `bytes` (>= 2 MiB): a multiple of 2 MiB, at most 1/8 above.
std::size_t scratch_class(std::size_t bytes);

// A block of exactly `size` bytes (a size class), 2 MiB aligned, on transparent huge pages:
// a held block of that size, else one made of held blocks' pages as far as they go, else new.
// Throws std::bad_alloc.
void* take_scratch(std::size_t size);
// Gives a block taken with `size` back to the pool (or to the system when the pool is full).
void give_scratch(void* p, std::size_t size);

// Bytes the pool holds now, and at most.
std::size_t cached_scratch_bytes();
std::size_t cached_scratch_limit();
// Returns every held block to the system.
void release_cached_scratch();

}  // namespace tandem
