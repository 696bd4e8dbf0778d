// top(col, n): the n largest present values, largest first, in value_less order (NaN above
// every number; +0.0 above -0.0, as max orders them, so top1 is max); outputs top1 … topn,
// missing where the group has fewer than n values.
#pragma once
#include <cmath>
#include <type_traits>

#include "groupby/ops/holistic.hpp"

namespace tandem::agg {

template <class T>
struct TopOp {
  static constexpr bool valid = is_number_v<T>;
  static constexpr bool holistic = true;
  using Out = T;
  static std::size_t outputs(const Aggregation& a) { return a.n; }
  static void compute(std::span<T> values, const Aggregation& a, std::optional<Out>* out) {
    const std::size_t k = std::min(a.n, values.size());
    const auto k_end = values.begin() + static_cast<std::ptrdiff_t>(k);
    std::partial_sort(values.begin(), k_end, values.end(), [](T x, T y) {
      if constexpr (std::is_floating_point_v<T>)
        if (value_equal(x, y)) return std::signbit(y) && !std::signbit(x);  // equal zeros: +0.0 first
      return value_less(y, x);
    });
    for (std::size_t i = 0; i < a.n; ++i) out[i] = i < k ? std::optional<Out>(values[i]) : std::nullopt;
  }
};

}  // namespace tandem::agg
