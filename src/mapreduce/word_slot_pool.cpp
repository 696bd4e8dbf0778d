#include "mapreduce/word_slot_pool.hpp"

#include <sys/mman.h>

#include <map>
#include <mutex>
#include <new>

#include "groupby/cpu_scratch_pool.hpp"

namespace tandem::mapreduce::detail {
namespace {

struct Pool {
  std::mutex m;
  std::multimap<std::size_t, void*> blocks;  // size -> block
  std::size_t bytes{0};
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: blocks may come back during static destruction
  return *p;
}

}  // namespace

void* take_zeroed_block(std::size_t bytes) {
  {
    Pool& p = pool();
    std::lock_guard lock(p.m);
    if (auto it = p.blocks.find(bytes); it != p.blocks.end()) {
      void* block = it->second;
      p.blocks.erase(it);
      p.bytes -= bytes;
      return block;
    }
  }
  void* block = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  return block;
}

void give_zeroed_block(void* block, std::size_t bytes) {
  {
    Pool& p = pool();
    std::lock_guard lock(p.m);
    if (p.bytes + bytes <= cpu_groupby::cached_limit() / 2) {  // half the group-by pool's share
      p.blocks.emplace(bytes, block);
      p.bytes += bytes;
      return;
    }
  }
  ::munmap(block, bytes);
}

std::size_t held_zeroed_bytes() {
  std::lock_guard lock(pool().m);
  return pool().bytes;
}

}  // namespace tandem::mapreduce::detail
