// What the aggregation operators share. Each operator is a class template over its input
// element type T (a number, or std::string_view for strings) with
//   valid                     whether it applies to T
//   holistic                  false: identity / update / merge / finalise over a small State;
//                             true:  compute(values of one group) after the group's values are gathered
//   Out                       its output element type (a number, or std::string_view)
// Decomposable operators: finalise returns nothing for a group whose inputs were all missing; an
// operator whose result can leave its output type (integer sums) also has overflowed(state).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "tandem/core/key_order.hpp"
#include "tandem/cuda/hd.hpp"

namespace tandem::agg {

template <class T>
inline constexpr bool is_number_v = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;

// Integer sums: signed inputs add up in int64, unsigned in uint64; float sums in double.
template <class T>
using sum_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                 std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>>;

// The order of values for min, max, median, quantile, top and nunique: numbers by value with
// -0.0 equal to +0.0 and NaN after every number (all NaNs equal); strings by bytes.
template <class T>
TANDEM_HD T normalised(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (v != v) return std::numeric_limits<T>::quiet_NaN();
    if (v == 0) return T(0);
  }
  return v;
}

template <class T>
TANDEM_HD auto order_key(T v) {
  if constexpr (std::is_same_v<T, std::string_view>) {
    return v;
  } else if constexpr (sizeof(T) < 4) {
    return to_ordered(static_cast<std::int32_t>(v));
  } else {
    return to_ordered(normalised(v));
  }
}

template <class T>
TANDEM_HD bool value_less(T a, T b) {
  return order_key(a) < order_key(b);
}

template <class T>
TANDEM_HD bool value_equal(T a, T b) {
  return order_key(a) == order_key(b);
}

}  // namespace tandem::agg
