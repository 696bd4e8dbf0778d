#include "core/scratch_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define TANDEM_POOL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TANDEM_POOL_ASAN 1
#endif
#endif
#ifdef TANDEM_POOL_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace tandem {
namespace {

// Under AddressSanitizer a held block is poisoned, so a use after it was freed is still caught.
void hold(void* block, std::size_t size) {
#ifdef TANDEM_POOL_ASAN
  ASAN_POISON_MEMORY_REGION(block, size);
#else
  (void)block, (void)size;
#endif
}
void unhold(void* block, std::size_t size) {
#ifdef TANDEM_POOL_ASAN
  ASAN_UNPOISON_MEMORY_REGION(block, size);
#else
  (void)block, (void)size;
#endif
}

constexpr std::size_t kPage = std::size_t{2} << 20;

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

std::size_t scratch_class(std::size_t bytes) {
  const std::size_t step = std::max(kPage, std::bit_floor(bytes) / 8);
  return (bytes + step - 1) / step * step;
}

std::size_t cached_scratch_limit() {
  static const std::size_t limit = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(size) / 4
                                 : std::size_t{1} << 30;
  }();
  return limit;
}

void* take_scratch(std::size_t size) {
  {
    Pool& p = pool();
    std::lock_guard lock(p.m);
    if (auto it = p.blocks.find(size); it != p.blocks.end()) {
      void* block = it->second;
      p.blocks.erase(it);
      p.bytes -= size;
      unhold(block, size);
      return block;
    }
  }
  void* block = std::aligned_alloc(kPage, size);
  if (block == nullptr) throw std::bad_alloc();
  ::madvise(block, size, MADV_HUGEPAGE);
  return block;
}

void give_scratch(void* block, std::size_t size) {
  {
    Pool& p = pool();
    std::lock_guard lock(p.m);
    if (size <= cached_scratch_limit()) {
      while (p.bytes + size > cached_scratch_limit()) {  // the smallest blocks make room
        unhold(p.blocks.begin()->second, p.blocks.begin()->first);
        std::free(p.blocks.begin()->second);
        p.bytes -= p.blocks.begin()->first;
        p.blocks.erase(p.blocks.begin());
      }
      hold(block, size);
      p.blocks.emplace(size, block);
      p.bytes += size;
      return;
    }
  }
  std::free(block);
}

std::size_t cached_scratch_bytes() {
  std::lock_guard lock(pool().m);
  return pool().bytes;
}

void release_cached_scratch() {
  std::multimap<std::size_t, void*> blocks;
  {
    std::lock_guard lock(pool().m);
    blocks.swap(pool().blocks);
    pool().bytes = 0;
  }
  for (auto& [size, block] : blocks) {
    unhold(block, size);
    std::free(block);
  }
}

}  // namespace tandem
