// std(col): the sample standard deviation, the square root of var's sample variance.
#pragma once
#include "groupby/ops/var.hpp"

namespace tandem::agg {

template <class T>
struct StdOp : VarOp<T> {
  static std::optional<double> finalise(const Moments& s) {
    const auto v = s.variance();
    if (!v) return std::nullopt;
    return std::sqrt(*v);
  }
};

}  // namespace tandem::agg
