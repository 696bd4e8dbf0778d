// The accumulators of the decomposable group-by (sum, min, max and count of one value column; an integer sum wraps
// modulo 2^64, exact whenever it fits i64) shared by the GPU hash engine and the MapReduce group-by job. A is double
// (float inputs) or int64 (integer inputs). min/max use a total order on -0.0 < +0.0 and ignore NaN (NaN only if every
// value was NaN: tandem/core/agg_order.hpp); sum propagates NaN.
#pragma once
#include <cstdint>
#include <type_traits>

#include "tandem/core/agg_order.hpp"
#include "tandem/cuda/hd.hpp"

#if defined(__CUDACC__)
#include "tandem/cuda/atomics.cuh"
#endif

namespace tandem {

template <class A>
struct Agg {
  A sum;
  A min;
  A max;
  std::uint64_t count;
};

template <class A, class V>
TANDEM_HD Agg<A> agg_of(V v) {
  const A a = static_cast<A>(v);
  return Agg<A>{a, a, a, 1};
}
template <class A>
TANDEM_HD void agg_reduce(Agg<A>& into, const Agg<A>& v) {
  if constexpr (std::is_integral_v<A>)  // wraps modulo 2^64; callers detect a sum beyond i64 afterwards
    into.sum =
        static_cast<A>(static_cast<std::make_unsigned_t<A>>(into.sum) + static_cast<std::make_unsigned_t<A>>(v.sum));
  else into.sum += v.sum;
  if (agg_less(v.min, into.min)) into.min = v.min;
  if (agg_greater(v.max, into.max)) into.max = v.max;
  into.count += v.count;
}

// The accumulator type of values of type V.
template <class V>
using agg_acc_t = std::conditional_t<std::is_floating_point_v<V>, double, std::int64_t>;

// The accumulator of a group-by of values of type V (void: counts only).
template <class V>
using group_acc_t =
    std::conditional_t<std::is_void_v<V>, std::uint64_t, Agg<agg_acc_t<std::conditional_t<std::is_void_v<V>, int, V>>>>;

// The accumulator that changes nothing when reduced: NaN is the identity of min/max in
// agg_less's order, -0.0 that of a float sum.
template <class V>
TANDEM_HD group_acc_t<V> group_acc_identity() {
  if constexpr (std::is_void_v<V>) {
    return 0;
  } else if constexpr (std::is_floating_point_v<V>) {
    return group_acc_t<V>{-0.0, __builtin_nan(""), __builtin_nan(""), 0};
  } else {
    return group_acc_t<V>{0, INT64_MAX, INT64_MIN, 0};
  }
}

#if defined(__CUDACC__)
// *p reduced with v by atomics (global or shared memory through a generic pointer): each field
// on its own, so concurrent reducers never lose an update.
template <class A>
__device__ __forceinline__ void atomic_agg_reduce(Agg<A>* p, const Agg<A>& v) {
  if constexpr (std::is_same_v<A, double>) {
    atomicAdd(&p->sum, v.sum);
    gpu::atomic_min_f64(&p->min, v.min);
    gpu::atomic_max_f64(&p->max, v.max);
  } else {
    static_assert(std::is_same_v<A, std::int64_t>);
    atomicAdd(reinterpret_cast<unsigned long long*>(&p->sum), static_cast<unsigned long long>(v.sum));
    atomicMin(reinterpret_cast<long long*>(&p->min), static_cast<long long>(v.min));
    atomicMax(reinterpret_cast<long long*>(&p->max), static_cast<long long>(v.max));
  }
  atomicAdd(reinterpret_cast<unsigned long long*>(&p->count), static_cast<unsigned long long>(v.count));
}
#endif

}  // namespace tandem
