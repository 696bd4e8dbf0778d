// Device atomics the engines share beyond CUDA's own: min and max of doubles in the aggregations'
// total order (-0.0 < +0.0, NaN ignored: tandem/core/agg_order.hpp) and compare-and-swap of a
// 32- or 64-bit key. Device code only.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "tandem/core/agg_order.hpp"

namespace tandem::gpu {

namespace detail {
template <bool kMin>
__device__ __forceinline__ void atomic_extreme_f64(double* p, double v) {
  if (v != v) return;
  auto* a = reinterpret_cast<unsigned long long*>(p);
  unsigned long long old = *reinterpret_cast<volatile unsigned long long*>(a);
  while (true) {
    const double cur = __longlong_as_double(static_cast<long long>(old));
    if (kMin ? !agg_less(v, cur) : !agg_greater(v, cur)) return;
    const auto prev = atomicCAS(a, old, static_cast<unsigned long long>(__double_as_longlong(v)));
    if (prev == old) return;
    old = prev;
  }
}
}  // namespace detail

__device__ __forceinline__ void atomic_min_f64(double* p, double v) { detail::atomic_extreme_f64<true>(p, v); }
__device__ __forceinline__ void atomic_max_f64(double* p, double v) { detail::atomic_extreme_f64<false>(p, v); }

// The machine word of a 4- or 8-byte key.
template <class K>
using atomic_word_t = std::conditional_t<sizeof(K) == 4, unsigned int, unsigned long long>;

// atomicCAS on a 4- or 8-byte key: the value *p held before.
template <class K>
__device__ __forceinline__ K atomic_cas_key(K* p, K cmp, K val) {
  static_assert(sizeof(K) == 4 || sizeof(K) == 8);
  return static_cast<K>(
      atomicCAS(reinterpret_cast<atomic_word_t<K>*>(p), atomic_word_t<K>(cmp), atomic_word_t<K>(val)));
}

}  // namespace tandem::gpu
