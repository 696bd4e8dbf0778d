// The order tandem sorts keys in, as unsigned integers: floats in a total order
// (-NaN first ... -inf ... -0.0 before +0.0 ... +inf ... +NaN last), signed integers by value.
// Radix sorts sort the mapped bits; comparison sorts compare them. Host and device.
#pragma once
#include <cstdint>
#include <type_traits>

#include "tandem/cuda/hd.hpp"

namespace tandem {

template <class K>
using ordered_bits_t = std::conditional_t<sizeof(K) <= 4, std::uint32_t, std::uint64_t>;

// Maps a key to unsigned bits whose unsigned order is tandem's key order.
template <class K>
TANDEM_HD constexpr ordered_bits_t<K> to_ordered(K k) {
  using U = ordered_bits_t<K>;
  constexpr U top = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (std::is_floating_point_v<K>) {
    static_assert(sizeof(K) == sizeof(U));
    const U u = __builtin_bit_cast(U, k);
    return (u & top) ? U(~u) : U(u | top);
  } else if constexpr (std::is_signed_v<K>) {
    static_assert(sizeof(K) == sizeof(U), "8- and 16-bit keys are widened by the caller");
    return U(static_cast<U>(k) ^ top);
  } else {
    return static_cast<U>(k);
  }
}

// The inverse of to_ordered.
template <class K>
TANDEM_HD constexpr K from_ordered(ordered_bits_t<K> b) {
  using U = ordered_bits_t<K>;
  constexpr U top = U{1} << (sizeof(U) * 8 - 1);
  if constexpr (std::is_floating_point_v<K>) {
    const U u = (b & top) ? U(b & ~top) : U(~b);
    return __builtin_bit_cast(K, u);
  } else if constexpr (std::is_signed_v<K>) {
    return static_cast<K>(b ^ top);
  } else {
    return static_cast<K>(b);
  }
}

// a before b in tandem's ascending key order (a strict weak order, NaNs included).
template <class K>
TANDEM_HD constexpr bool key_less(K a, K b) {
  return to_ordered(a) < to_ordered(b);
}

}  // namespace tandem
