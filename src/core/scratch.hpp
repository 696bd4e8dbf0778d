// Large per-call arrays (the CPU group-by's codes, group ids, scattered values, result columns; the
// radix sorts' buffers): left uninitialised, since every element is written before it is read, and
// from 2 MiB up taken from the scratch pool (scratch_pool.hpp): on transparent huge pages, so the
// first touch of 10^7 codes costs a few dozen page faults instead of ten thousand, and reused from
// the last call when one of a similar size freed them.
#pragma once
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "core/scratch_pool.hpp"
#include "tandem/core/detail/huge_pages.hpp"

namespace tandem {

template <class T>
struct ScratchAllocator {
  using value_type = T;
  ScratchAllocator() = default;
  template <class U>
  ScratchAllocator(const ScratchAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < detail::kHugePage) return std::allocator<T>{}.allocate(n);
    return static_cast<T*>(take_scratch(scratch_class(bytes)));
  }
  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < detail::kHugePage) std::allocator<T>{}.deallocate(p, n);
    else give_scratch(p, scratch_class(bytes));
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

}  // namespace tandem
