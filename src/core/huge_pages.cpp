#include "tandem/core/detail/huge_pages.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>

namespace tandem::detail {

void* allocate_huge_pages(std::size_t bytes) {
  if (bytes > ~std::size_t{0} - kHugePage) throw std::bad_alloc();
  bytes = huge_page_bytes(bytes);
  void* p = std::aligned_alloc(kHugePage, bytes == 0 ? kHugePage : bytes);
  if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: without huge pages the buffer still works
#endif
  return p;
}

void free_huge_pages(void* p) noexcept { std::free(p); }

}  // namespace tandem::detail
