// nunique(col): distinct present values, equal as keys are (-0.0 is 0.0, all NaNs one value).
#pragma once
#include "groupby/ops/holistic.hpp"

namespace tandem::agg {

template <class T>
struct NuniqueOp {
  static constexpr bool valid = true;
  static constexpr bool holistic = true;
  using Out = std::int64_t;
  static std::size_t outputs(const Aggregation&) { return 1; }
  static void compute(std::span<T> values, const Aggregation&, std::optional<Out>* out) {
    std::sort(values.begin(), values.end(), [](T a, T b) { return value_less(a, b); });
    std::int64_t distinct = 0;
    for (std::size_t i = 0; i < values.size(); ++i) distinct += i == 0 || !value_equal(values[i - 1], values[i]);
    out[0] = distinct;
  }
};

}  // namespace tandem::agg
