// An allocator for buffers that are filled right after they are sized (file reads, generated
// data): resize() does not zero them first.
#pragma once
#include <cstddef>
#include <memory>
#include <new>
#include <utility>

#include "tandem/core/detail/huge_pages.hpp"

namespace tandem {

// An allocator whose resize() leaves new elements uninitialised: buffers that a read is about to
// fill are not zero-filled first (a full pass over memory saved, and no page touched twice).
// Buffers of 2 MiB and more go on huge pages: reading a file into fresh memory is mostly the
// kernel's page faults otherwise (measured 2.6-3x the read itself on 4 KiB pages), and a sort of
// a million rows (8 MB arrays) spent a third of its time in them.
template <class T>
struct UninitAllocator : std::allocator<T> {
  static constexpr std::size_t kHugeFrom = tandem::detail::kHugePage;
  using value_type = T;
  T* allocate(std::size_t n) {
    if (n * sizeof(T) >= kHugeFrom) return static_cast<T*>(tandem::detail::allocate_huge_pages(n * sizeof(T)));
    return std::allocator<T>::allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) >= kHugeFrom) tandem::detail::free_huge_pages(p);
    else std::allocator<T>::deallocate(p, n);
  }
  template <class U>
  struct rebind {
    using other = UninitAllocator<U>;
  };
  UninitAllocator() = default;
  template <class U>
  UninitAllocator(const UninitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

}  // namespace tandem
