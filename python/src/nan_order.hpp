// numpy and pandas put every NaN after the numbers, in either direction. tandem's key order
// (key_order.hpp) is total: NaNs with the sign bit set come first ascending, those without it
// first descending. After a sort the NaNs tandem put first are one run at the front; moving that
// run behind the rest gives numpy's placement without touching any bits.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <type_traits>

#include "tandem/cuda/hd.hpp"

namespace tandem::python {

// The length of the run of NaNs at the front of sorted keys: NaNs of the first key's sign (the
// NaNs of the other sign sort last and stay there).
template <class K>
std::size_t leading_nans(std::span<const K> keys) {
  if constexpr (std::is_floating_point_v<K>) {
    if (keys.empty() || !std::isnan(keys.front())) return 0;
    const bool sign = std::signbit(keys.front());
    const auto end =
        std::partition_point(keys.begin(), keys.end(), [&](K k) { return std::isnan(k) && std::signbit(k) == sign; });
    return static_cast<std::size_t>(end - keys.begin());
  } else {
    return 0;
  }
}

// Moves the leading run of NaNs of sorted keys (and the values at the same places) to the back,
// keeping the order inside each part. Returns how many moved.
template <class K, class V>
std::size_t move_leading_nans_last(std::span<K> keys, std::span<V> values) {
  const std::size_t c = leading_nans(std::span<const K>(keys));
  if (c == 0 || c == keys.size()) return 0;
  std::rotate(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(c), keys.end());
  if (!values.empty()) std::rotate(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(c), values.end());
  return c;
}

// Keys equal as numpy compares them are made one key in argsort's scratch copy: every NaN one
// NaN, -0.0 the same as +0.0. A stable sort then keeps them in input order, as numpy's stable
// argsort does.
template <class K>
TANDEM_HD K numpy_equal_key(K k) {
  if constexpr (std::is_floating_point_v<K>) return k != k ? std::numeric_limits<K>::quiet_NaN() : (k == 0 ? K(0) : k);
  else return k;
}

}  // namespace tandem::python
