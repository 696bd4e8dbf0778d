// quantile(col, q): the exact quantile q (see quantile_of for the interpolation).
#pragma once
#include "groupby/ops/holistic.hpp"

namespace tandem::agg {

template <class T>
struct QuantileOp {
  static constexpr bool valid = is_number_v<T>;
  static constexpr bool holistic = true;
  using Out = double;
  static std::size_t outputs(const Aggregation&) { return 1; }
  static void compute(std::span<T> values, const Aggregation& a, std::optional<Out>* out) {
    out[0] = quantile_of(values, a.q);
  }
};

}  // namespace tandem::agg
