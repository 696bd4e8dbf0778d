#include "core/scratch_pool.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <utility>
#include <vector>

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

void advise_huge_pages(void* block, std::size_t size) {
#ifdef MADV_HUGEPAGE
  ::madvise(block, size, MADV_HUGEPAGE);  // advice only: without huge pages the block still works
#endif
}

#ifdef TANDEM_POOL_ASAN
// Under AddressSanitizer blocks come from its allocator, which puts red zones around them; only a
// block of the same class is reused.
constexpr bool kRecyclesPages = false;
void* new_block(std::size_t size) {
  void* block = std::aligned_alloc(kPage, size);
  if (block == nullptr) throw std::bad_alloc();
  advise_huge_pages(block, size);
  return block;
}
void free_block(void* block, std::size_t) { std::free(block); }
#else
// Blocks are mappings of their own, so that a held block's pages can be moved (mremap) into a
// block of another size: a 10^7-group query frees its partial groups' copies and then asks for
// result columns of other sizes, which would otherwise each be fresh pages the kernel zeroes.
constexpr bool kRecyclesPages = true;
void* new_block(std::size_t size) {
  void* p = ::mmap(nullptr, size + kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (at + kPage - 1) / kPage * kPage;  // 2 MiB aligned, for huge pages
  if (aligned > at) ::munmap(p, aligned - at);
  if (const std::uintptr_t tail = at + size + kPage - (aligned + size); tail > 0)
    ::munmap(reinterpret_cast<void*>(aligned + size), tail);
  advise_huge_pages(reinterpret_cast<void*>(aligned), size);  // pages moved in keep their own advice
  return reinterpret_cast<void*>(aligned);
}
void free_block(void* block, std::size_t size) { ::munmap(block, size); }
#endif

// Held blocks, the largest first, whose pages cover `size` bytes (or all there are); taken out of
// the pool. The lock is held.
std::vector<std::pair<void*, std::size_t>> take_covering(Pool& p, std::size_t size) {
  std::vector<std::pair<void*, std::size_t>> parts;
  for (std::size_t covered = 0; covered < size && !p.blocks.empty();) {
    const auto largest = std::prev(p.blocks.end());
    parts.emplace_back(largest->second, largest->first);
    covered += largest->first;
    p.bytes -= largest->first;
    p.blocks.erase(largest);
  }
  return parts;
}

// Moves the pages of [from, from + n) to [to, to + n), replacing what was mapped there; false
// (nothing moved) when the range is not one mapping.
bool move_pages(char* from, std::size_t n, char* to) {
  return ::mremap(from, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, to) != MAP_FAILED;
}

// A new block of `size` bytes whose pages are, as far as they go, the held blocks' `parts`, moved
// there without copying or zeroing; the rest is fresh. What a part has left over stays held.
void* recycled_block(std::size_t size, const std::vector<std::pair<void*, std::size_t>>& parts) {
  void* block = nullptr;
  try {
    block = new_block(size);
  } catch (...) {
    for (const auto& [part, bytes] : parts) give_scratch(part, bytes);
    throw;
  }
  std::size_t at = 0;
  for (const auto& [part, bytes] : parts) {
    const std::size_t n = std::min(bytes, size - at);
    char* const from = static_cast<char*>(part);
    char* const to = static_cast<char*>(block) + at;
    if (!move_pages(from, n, to))  // a recycled block is several mappings: one mremap spans one
      for (std::size_t off = 0; off < n; off += kPage)
        if (!move_pages(from + off, kPage, to + off)) give_scratch(from + off, kPage);  // fresh there
    if (n < bytes) give_scratch(from + n, bytes - n);
    at += n;
  }
  return block;
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
  std::vector<std::pair<void*, std::size_t>> parts;
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
    if (kRecyclesPages) parts = take_covering(p, size);
  }
  if (!parts.empty()) {
    for (const auto& [part, bytes] : parts) unhold(part, bytes);
    return recycled_block(size, parts);
  }
  return new_block(size);
}

void give_scratch(void* block, std::size_t size) {
  {
    Pool& p = pool();
    std::lock_guard lock(p.m);
    if (size <= cached_scratch_limit()) {
      while (p.bytes + size > cached_scratch_limit()) {  // the smallest blocks make room
        unhold(p.blocks.begin()->second, p.blocks.begin()->first);
        free_block(p.blocks.begin()->second, p.blocks.begin()->first);
        p.bytes -= p.blocks.begin()->first;
        p.blocks.erase(p.blocks.begin());
      }
      hold(block, size);
      p.blocks.emplace(size, block);
      p.bytes += size;
      return;
    }
  }
  free_block(block, size);
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
    free_block(block, size);
  }
}

}  // namespace tandem
