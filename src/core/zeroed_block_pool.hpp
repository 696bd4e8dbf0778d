// Zeroed memory for the word count's large tables, kept for the next call. A fresh table's pages
// cost a page fault and the kernel's zeroing each, on every thread at once, and unmapping them a
// TLB shootdown to every thread; a table given back here keeps its pages. Blocks are handed out
// zeroed without writing them: a fresh block is new anonymous memory (untouched pages cost no
// memory), and a block comes back only after its user has cleared the bytes it wrote.
#pragma once
#include <cstddef>

namespace tandem {

// A zeroed block of `bytes` (a multiple of 4 KiB), preferably one given back on the calling CPU.
// Throws std::bad_alloc.
void* take_zeroed_block(std::size_t bytes);
// Gives back a block taken with `bytes`; every byte of it must be zero again.
void give_zeroed_block(void* block, std::size_t bytes);
// Bytes the pool holds now.
std::size_t held_zeroed_bytes();
// Unmaps every held block.
void release_zeroed_blocks();

}  // namespace tandem
