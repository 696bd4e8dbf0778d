#include "mapreduce/word_slot_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <mutex>
#include <new>
#include <vector>

#include "groupby/cpu_scratch_pool.hpp"

namespace tandem::mapreduce::detail {
namespace {

struct Block {
  void* p;
  std::size_t bytes;
};

// A few dozen blocks at most (a table per thread and per hash range): a list searched in full.
std::mutex held_mutex;
std::vector<Block> held_blocks;
std::size_t held_bytes = 0;

}  // namespace

void* take_zeroed_block(std::size_t bytes) {
  {
    std::lock_guard lock(held_mutex);
    const auto it =
        std::find_if(held_blocks.begin(), held_blocks.end(), [&](const Block& b) { return b.bytes == bytes; });
    if (it != held_blocks.end()) {
      void* p = it->p;
      *it = held_blocks.back();
      held_blocks.pop_back();
      held_bytes -= bytes;
      return p;
    }
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return p;
}

void give_zeroed_block(void* p, std::size_t bytes) {
  {
    std::lock_guard lock(held_mutex);
    if (held_bytes + bytes <= cpu_groupby::cached_limit() / 2) {  // half the group-by pool's share
      held_blocks.push_back({p, bytes});
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

}  // namespace tandem::mapreduce::detail
