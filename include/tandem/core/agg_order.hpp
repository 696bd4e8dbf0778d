// The order min and max pick by in every group-by engine (CPU, GPU, distributed): floats with
// -0.0 below +0.0, NaN never smaller nor greater than a number (so NaN only wins when every value
// is NaN); integers by value.
#pragma once
#include <cmath>
#include <type_traits>

#include "tandem/cuda/hd.hpp"

namespace tandem {

template <class A>
TANDEM_HD bool agg_less(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (a != a) return false;  // NaN is never smaller
    if (b != b) return true;   // any number is smaller than NaN
    if (a == b) return std::signbit(a) && !std::signbit(b);
    return a < b;
  } else {
    return a < b;
  }
}
template <class A>
TANDEM_HD bool agg_greater(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (a != a) return false;
    if (b != b) return true;
    if (a == b) return !std::signbit(a) && std::signbit(b);
    return a > b;
  } else {
    return a > b;
  }
}

}  // namespace tandem
