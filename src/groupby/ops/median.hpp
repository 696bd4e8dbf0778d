// median(col): the exact median, quantile 0.5 (the mean of the two middle values of an even count).
#pragma once
#include "groupby/ops/holistic.hpp"

namespace tandem::agg {

template <class T>
struct MedianOp {
  static constexpr bool valid = is_number_v<T>;
  static constexpr bool holistic = true;
  using Out = double;
  static std::size_t outputs(const Aggregation&) { return 1; }
  static void compute(std::span<T> values, const Aggregation&, std::optional<Out>* out) {
    out[0] = quantile_of(values, 0.5);
  }
};

}  // namespace tandem::agg
