// Large buffers on 2 MiB pages where the kernel allows it (transparent huge pages on advice): the
// first touch of a fresh buffer then takes one page fault per 2 MiB instead of one per 4 KiB.
#pragma once
#include <cstddef>

namespace tandem::detail {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// `bytes` rounded up to whole huge pages (what allocate_huge_pages takes).
constexpr std::size_t huge_page_bytes(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

// `bytes` rounded up to whole 2 MiB pages, 2 MiB aligned, advised as huge pages; std::bad_alloc
// when the memory cannot be had. Free with free_huge_pages.
void* allocate_huge_pages(std::size_t bytes);
void free_huge_pages(void* p) noexcept;

}  // namespace tandem::detail
