// The CPU engine's large per-call arrays (codes, group ids, scattered values): left
// uninitialised, since every element is written before it is read, and from 2 MiB up placed on
// transparent huge pages, so the first touch of 10^7 codes costs a few dozen page faults
// instead of ten thousand.
#pragma once
#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace tandem::cpu_groupby {

inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

template <class T>
struct ScratchAllocator {
  using value_type = T;
  ScratchAllocator() = default;
  template <class U>
  ScratchAllocator(const ScratchAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return std::allocator<T>{}.allocate(n);
    const std::size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* p = std::aligned_alloc(kHugePage, rounded);
    if (p == nullptr) throw std::bad_alloc();
    ::madvise(p, rounded, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < kHugePage) std::allocator<T>{}.deallocate(p, n);
    else std::free(p);
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    if constexpr (sizeof...(A) == 0) ::new (static_cast<void*>(p)) U;  // default-initialised: no zeroing pass
    else ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  template <class U>
  bool operator==(const ScratchAllocator<U>&) const {
    return true;
  }
};

template <class T>
using Scratch = std::vector<T, ScratchAllocator<T>>;

}  // namespace tandem::cpu_groupby
