#include "core/zeroed_block_pool.hpp"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

#include "core/scratch_pool.hpp"

namespace tandem {
namespace {

struct Block {
  void* p;
  std::size_t bytes;
  int cpu;  // where it was given back (-1: unknown)
};

// A few dozen blocks at most (a table per thread and per hash range): a list searched in full.
std::mutex held_mutex;
std::vector<Block> held_blocks;
std::size_t held_bytes = 0;

}  // namespace

void* take_zeroed_block(std::size_t bytes) {
  const int cpu = sched_getcpu();
  {
    std::lock_guard lock(held_mutex);
    // The newest block of this size given back on this CPU: the lines its user cleared may still
    // be in this core's caches (a thread counting the next text often finds its words in the same
    // slots). Else the newest of this size.
    std::size_t pick = held_blocks.size();
    for (std::size_t i = held_blocks.size(); i-- > 0;) {
      if (held_blocks[i].bytes != bytes) continue;
      if (pick == held_blocks.size()) pick = i;
      if (held_blocks[i].cpu == cpu) {
        pick = i;
        break;
      }
    }
    if (pick < held_blocks.size()) {
      void* p = held_blocks[pick].p;
      held_blocks.erase(held_blocks.begin() + static_cast<std::ptrdiff_t>(pick));
      held_bytes -= bytes;
      return p;
    }
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void give_zeroed_block(void* p, std::size_t bytes) {
  const int cpu = sched_getcpu();
  {
    std::lock_guard lock(held_mutex);
    if (held_bytes + bytes <= cached_scratch_limit() / 2) {  // half the scratch pool's share
      held_blocks.push_back({p, bytes, cpu});
      held_bytes += bytes;
      return;
    }
  }
  ::munmap(p, bytes);
}

std::size_t held_zeroed_bytes() {
  std::lock_guard lock(held_mutex);
  return held_bytes;
}

void release_zeroed_blocks() {
  std::vector<Block> blocks;
  {
    std::lock_guard lock(held_mutex);
    blocks.swap(held_blocks);
    held_bytes = 0;
  }
  for (const Block& b : blocks) ::munmap(b.p, b.bytes);
}

}  // namespace tandem
